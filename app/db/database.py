"""The database handle: transactions shaped for each dialect."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.db.engine import WRITE_OPTION


class Database:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.is_postgresql = engine.dialect.name == "postgresql"

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as connection, connection.begin():
            yield connection

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """One transaction, committed on success and rolled back on any error."""
        async with self.engine.connect() as connection:
            await connection.execution_options(**{WRITE_OPTION: True})
            async with connection.begin():
                yield connection

    @asynccontextmanager
    async def single_statement_write(self) -> AsyncIterator[AsyncConnection]:
        """For a write that one statement makes atomic by itself.

        On PostgreSQL that statement runs in autocommit: no BEGIN and COMMIT
        round trips. SQLite has no such statement here, so it gets a write
        transaction.
        """
        if not self.is_postgresql:
            async with self.write() as connection:
                yield connection
            return
        async with self.engine.connect() as connection:
            await connection.execution_options(isolation_level="AUTOCOMMIT")
            yield connection

    async def dispose(self) -> None:
        await self.engine.dispose()
