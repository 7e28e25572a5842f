"""The embedded store: SQLite through SQLAlchemy (aiosqlite).

Writers take the database's write lock at BEGIN (`engine.py`), so the
append's read-modify-write of the session state cannot interleave with
another writer, in this process or any other."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncConnection

from ..domain import NewEvent, SessionKey, SessionSnapshot
from . import repository
from .database_errors import database_errors_as_domain_errors
from .sql_store import SqlStore


class SqliteStore(SqlStore):
    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        """A transaction: every statement of a read sees one snapshot."""
        with database_errors_as_domain_errors():
            async with self.engine.connect() as connection, connection.begin():
                yield connection

    async def append_event(
        self, key: SessionKey, event: NewEvent, expected_revision: int | None, max_state_bytes: int
    ) -> int:
        async with self._write() as connection:
            return await repository.append_event(
                connection, key, event, expected_revision, max_state_bytes
            )

    async def read_snapshot(
        self,
        key: SessionKey,
        limit: int | None,
        after_timestamp: float | None,
        max_events_bytes: int,
    ) -> SessionSnapshot | None:
        async with self._read() as connection:
            return await repository.read_snapshot(
                connection, key, limit, after_timestamp, max_events_bytes
            )
