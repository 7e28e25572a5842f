"""LangGraph's store items on SQLite (the store's engine): the ItemStorage of
app.langgraph.store.storage, running the statements of
app.langgraph.store.item_sql, with the PostgreSQL one's contract
(app.langgraph.store.postgresql). Writers take the database's write lock at
BEGIN (engine.py)."""

import functools
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ...core.encryption import ValueCipher
from ...db.database_errors import database_errors_as_domain_errors
from ...db.engine import WRITE_OPTION
from ..dialects import SQLITE
from ..sealing import Sealing
from . import item_sql
from .item_sql import ItemSql, SqlItemTransaction

_SQL = ItemSql(SQLITE)


@functools.lru_cache(maxsize=256)
def _statement(sql: str) -> TextClause:
    # A search's text varies with its filter's shape only: few texts recur.
    return text(sql)


class SqlAlchemyRows:
    """A SQLAlchemy connection as item_sql's Rows."""

    def __init__(self, connection: AsyncConnection) -> None:
        self.connection = connection

    async def fetch(self, sql: str, arguments: dict[str, Any]) -> Sequence[Mapping[Any, Any]]:
        return (await self.connection.execute(_statement(sql), arguments)).mappings().all()

    async def execute(self, sql: str, arguments: dict[str, Any]) -> int:
        return (await self.connection.execute(_statement(sql), arguments)).rowcount


class SqliteStoreItems:
    def __init__(self, engine: AsyncEngine, cipher: ValueCipher | None = None) -> None:
        # Values sealed on write and opened on read (app.langgraph.sealing).
        self.sealing = Sealing(cipher)
        self.engine = engine

    @asynccontextmanager
    async def _rows(self, *, write: bool) -> AsyncIterator[SqlAlchemyRows]:
        with database_errors_as_domain_errors():
            async with self.engine.connect() as connection:
                if write:
                    await connection.execution_options(**{WRITE_OPTION: True})
                async with connection.begin():
                    yield SqlAlchemyRows(connection)

    @asynccontextmanager
    async def transaction(self, *, write: bool) -> AsyncIterator[SqlItemTransaction]:
        async with self._rows(write=write) as rows:
            yield SqlItemTransaction(rows, _SQL, self.sealing)

    async def sweep_expired(self, now: float, batch: int) -> int:
        swept = 0
        while True:
            async with self._rows(write=True) as rows:
                deleted = await item_sql.sweep_expired(rows, _SQL, now, batch)
            swept += deleted
            if deleted < batch:
                return swept


async def erase_items(connection: AsyncConnection, app_name: str, user_id: str | None) -> int:
    """Erased with the rest of the user (or app, when None) in the caller's
    transaction (app.lifecycle.erasure)."""
    return await item_sql.erase_items(SqlAlchemyRows(connection), _SQL, app_name, user_id)
