"""What every feature's SQLite storage shares (`SqliteSessions`,
`SqliteChangeLog`, `SqliteMemory`, `SqliteLifecycle`, assembled by
app.backends.sqlite): the engine, its read and write transactions, and the
writer thread for plain-SQL writes (`sqlite_writer.py`).

Writers take the database's write lock at BEGIN (`engine.py`): a write's
read-modify-write cannot interleave with another writer, in this process or
any other, and one user's memory writes are serialised without a lock of
their own."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .database_errors import database_errors_as_domain_errors
from .engine import WRITE_OPTION
from .sqlite_writer import SqliteWriter


class SqliteConnections:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._writer = SqliteWriter(engine)

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        """A transaction: every statement of a read sees one snapshot."""
        with database_errors_as_domain_errors():
            async with self.engine.connect() as connection, connection.begin():
                yield connection

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        """One transaction (BEGIN IMMEDIATE), committed on success and rolled
        back on any error."""
        with database_errors_as_domain_errors():
            async with self.engine.connect() as connection:
                await connection.execution_options(**{WRITE_OPTION: True})
                async with connection.begin():
                    yield connection
