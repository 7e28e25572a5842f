"""LangGraph's store items on PostgreSQL (asyncpg, on the store's pool): the
ItemStorage of app.langgraph.store.storage, running the statements of
app.langgraph.store.item_sql with `:name` parameters sent as `$n`. JSON
values go through the pool's jsonb codec."""

import functools
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from ...core.encryption import ValueCipher
from ...db.database_errors import database_errors_as_domain_errors
from ...db.postgresql_statement import Statement
from ..dialects import POSTGRESQL
from ..sealing import Sealing
from . import item_sql
from .item_sql import ItemSql, SqlItemTransaction

_SQL = ItemSql(POSTGRESQL)


@functools.lru_cache(maxsize=256)
def _statement(sql: str) -> Statement:
    # A search's text varies with its filter's shape only: few texts recur.
    return Statement.of(sql)


def _count(status: str) -> int:
    return int(status.rsplit(" ", 1)[-1])


class AsyncpgRows:
    """An asyncpg connection as item_sql's Rows."""

    def __init__(self, connection: asyncpg.Connection) -> None:
        self.connection = connection

    async def fetch(self, sql: str, arguments: dict[str, Any]) -> Sequence[Mapping[Any, Any]]:
        statement = _statement(sql)
        rows: list[asyncpg.Record] = await self.connection.fetch(
            statement.text, *statement.arguments(arguments)
        )
        return rows

    async def execute(self, sql: str, arguments: dict[str, Any]) -> int:
        statement = _statement(sql)
        status = await self.connection.execute(statement.text, *statement.arguments(arguments))
        return _count(status)


class PostgresStoreItems:
    def __init__(
        self, pool: asyncpg.Pool, timeout: float, cipher: ValueCipher | None = None
    ) -> None:
        # Values sealed on write and opened on read (app.langgraph.sealing).
        self.sealing = Sealing(cipher)
        self.pool = pool
        self.timeout = timeout

    @asynccontextmanager
    async def _rows(self) -> AsyncIterator[AsyncpgRows]:
        with database_errors_as_domain_errors():
            async with (
                self.pool.acquire(timeout=self.timeout) as connection,
                connection.transaction(),
            ):
                yield AsyncpgRows(connection)

    @asynccontextmanager
    async def transaction(self, *, write: bool) -> AsyncIterator[SqlItemTransaction]:
        async with self._rows() as rows:
            yield SqlItemTransaction(rows, _SQL, self.sealing)

    async def sweep_expired(self, now: float, batch: int) -> int:
        swept = 0
        while True:
            async with self._rows() as rows:
                deleted = await item_sql.sweep_expired(rows, _SQL, now, batch)
            swept += deleted
            if deleted < batch:
                return swept


async def erase_items(connection: asyncpg.Connection, app_name: str, user_id: str | None) -> int:
    """Erased with the rest of the user (or app, when None) in the caller's
    transaction (app.lifecycle.erasure)."""
    return await item_sql.erase_items(AsyncpgRows(connection), _SQL, app_name, user_id)
