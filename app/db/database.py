"""The database handle: transactions shaped for each dialect."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.db.engine import WRITE_OPTION
from app.db.postgresql_hot_path import PostgresHotPath


class Database:
    """SQLAlchemy for everything, plus asyncpg for the hot path on PostgreSQL."""

    def __init__(self, engine: AsyncEngine, hot_path: PostgresHotPath | None = None) -> None:
        self.engine = engine
        self.hot_path = hot_path
        self.is_postgresql = engine.dialect.name == "postgresql"

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """For reads. On PostgreSQL every statement runs by itself (autocommit),
        which saves the BEGIN and COMMIT round trips; the queries are written to
        be consistent on their own. On SQLite, a transaction (one snapshot)."""
        if self.is_postgresql:
            async with self._autocommit() as connection:
                yield connection
            return
        async with self.engine.connect() as connection, connection.begin():
            yield connection

    @asynccontextmanager
    async def _autocommit(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as connection:
            await connection.execution_options(isolation_level="AUTOCOMMIT")
            yield connection

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """One transaction, committed on success and rolled back on any error."""
        async with self.engine.connect() as connection:
            await connection.execution_options(**{WRITE_OPTION: True})
            async with connection.begin():
                yield connection

    async def dispose(self) -> None:
        if self.hot_path is not None:
            await self.hot_path.close()
        await self.engine.dispose()
