"""Writes to a SQLite database in plain SQL (the sessions' appends,
`app.sessions.sqlite_append`), each one transaction in one trip to a thread
of its own that holds a plain sqlite3 connection.

Through SQLAlchemy and aiosqlite an append costs the event loop a trip to
aiosqlite's thread per cursor call (each a wake-up of the loop) and the
building, cache keys and results of several Core statements
(docs/performance.md, "The SQLite store's append in one trip"). Here the
loop makes one trip
and the statements are plain SQL, prepared once by sqlite3's statement cache.

The transaction is the pool's (`engine.py`): BEGIN IMMEDIATE takes the
database's write lock, so the append's read-modify-write cannot interleave
with any other writer, this process's pool or another process; the
connection's settings are the pool's (`configure_sqlite_connection`). One thread means
this process's appends queue here instead of in SQLite's busy wait."""

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine

from .database_errors import database_errors_as_domain_errors
from .engine import SQLITE_BUSY_TIMEOUT_MS, configure_sqlite_connection

T = TypeVar("T")


class SqliteWriter:
    def __init__(self, engine: AsyncEngine) -> None:
        """Writes to the database file of `engine`'s URL (an in-memory
        database is refused by the settings: a second connection would
        open another one)."""
        arguments, options = engine.dialect.create_connect_args(engine.url)
        self._database: str = arguments[0]
        self._uri: bool = bool(options.get("uri", False))
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        # Opened, used and closed on the thread only.
        self._connection: sqlite3.Connection | None = None

    async def write(self, work: Callable[[sqlite3.Cursor], T]) -> T:
        """`work`'s result, run in a transaction holding the write lock,
        committed when it returns and rolled back when it raises. A caller
        cancelled before the thread starts it writes nothing."""
        loop = asyncio.get_running_loop()
        with database_errors_as_domain_errors():
            return await loop.run_in_executor(self._executor, self._transaction, work)

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._close_connection)
        self._executor.shutdown()

    def _transaction(self, work: Callable[[sqlite3.Cursor], T]) -> T:
        connection = self._connection or self._connect()
        cursor = connection.cursor()
        try:
            cursor.execute("BEGIN IMMEDIATE")
            result = work(cursor)
            cursor.execute("COMMIT")
            return result
        except BaseException:
            if connection.in_transaction:
                connection.rollback()
            raise
        finally:
            cursor.close()

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self._database,
            timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
            # Transactions are this module's: BEGIN IMMEDIATE, COMMIT.
            isolation_level=None,
            uri=self._uri,
        )
        configure_sqlite_connection(connection.execute)
        self._connection = connection
        return connection

    def _close_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
