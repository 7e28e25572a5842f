"""LangGraph's store items on PostgreSQL (asyncpg, on the store's pool): the
ItemStorage of app.langgraph.store.storage. JSON values go through the
pool's jsonb codec."""

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from ...db.database_errors import database_errors_as_domain_errors
from .domain import StoredItem, split
from .filters import AllOf, AnyOf, Condition, Equals, HasLength, HasSize, IsKind, Negated

_COLUMNS = "namespace, key, value, create_time, update_time, expire_time, ttl_seconds"
_LIVE = "(expire_time IS NULL OR expire_time > $2)"
# `namespace` is the prefix or under it ("" is every namespace).
_UNDER = "($3 = '' OR namespace = $3 OR starts_with(namespace, $3 || '.'))"

_GET = (
    f"SELECT {_COLUMNS} FROM lg_store_items"
    f" WHERE app_name = $1 AND {_LIVE} AND namespace = $3 AND key = $4"
)
_REFRESH = """
UPDATE lg_store_items SET expire_time = $2 + ttl_seconds
 WHERE app_name = $1 AND ttl_seconds IS NOT NULL AND (expire_time IS NULL OR expire_time > $2)
   AND (namespace, key) IN (SELECT * FROM unnest($3::text[], $4::text[]))
"""
_PUT = """
INSERT INTO lg_store_items AS i
       (app_name, namespace, key, user_id, value, search_text, create_time, update_time,
        expire_time, ttl_seconds)
VALUES ($1, $2, $3, $4, $5, $8, $6, $6, $6 + $7::float8, $7::float8)
ON CONFLICT (app_name, namespace, key) DO UPDATE
   SET value = EXCLUDED.value, search_text = EXCLUDED.search_text, update_time = $6,
       create_time = CASE WHEN i.expire_time IS NOT NULL AND i.expire_time <= $6
                          THEN $6 ELSE i.create_time END,
       expire_time = EXCLUDED.expire_time, ttl_seconds = EXCLUDED.ttl_seconds
"""
_DELETE = "DELETE FROM lg_store_items WHERE app_name = $1 AND namespace = $2 AND key = $3"
# Every word of the query in the item's text; then the filter's condition.
_SEARCH = f"""
SELECT {_COLUMNS} FROM lg_store_items
 WHERE app_name = $1 AND {_LIVE} AND {_UNDER}
   AND NOT EXISTS (SELECT 1 FROM unnest($6::text[]) AS w WHERE strpos(search_text, w) = 0)
   AND {{condition}}
 ORDER BY update_time DESC, namespace, key
 LIMIT $4 OFFSET $5
"""

_NAMESPACES = (
    f"SELECT DISTINCT namespace FROM lg_store_items WHERE app_name = $1 AND {_LIVE} AND {_UNDER}"
)
# Erased with the rest of the user or app (app.lifecycle.erasure).
ERASE_USER_ITEMS = "DELETE FROM lg_store_items WHERE app_name = $1 AND user_id = $2"
ERASE_APP_ITEMS = "DELETE FROM lg_store_items WHERE app_name = $1"
_SWEEP = """
DELETE FROM lg_store_items WHERE ctid IN (
    SELECT ctid FROM lg_store_items
     WHERE expire_time IS NOT NULL AND expire_time <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
"""


def _item(row: asyncpg.Record) -> StoredItem:
    return StoredItem(
        split(row["namespace"]),
        row["key"],
        row["value"],
        row["create_time"],
        row["update_time"],
        row["expire_time"],
        row["ttl_seconds"],
    )


class _ConditionSql:
    """A filter's condition as SQL on `value`, its operands as parameters
    numbered after the query's own. Every part is true or false, never NULL
    (NOT of a NULL would be NULL)."""

    def __init__(self, first_parameter: int) -> None:
        self.parameters: list[Any] = []
        self.first = first_parameter

    def _parameter(self, value: Any, cast: str) -> str:
        self.parameters.append(value)
        return f"${self.first + len(self.parameters) - 1}::{cast}"

    def _at(self, path: tuple[str | int, ...]) -> str:
        if not path:
            return "value"
        return f"(value #> {self._parameter([str(step) for step in path], 'text[]')})"

    def sql(self, condition: Condition) -> str:
        if isinstance(condition, AllOf | AnyOf):
            if not condition.parts:
                return "true" if isinstance(condition, AllOf) else "false"
            joiner = " AND " if isinstance(condition, AllOf) else " OR "
            return "(" + joiner.join(self.sql(part) for part in condition.parts) + ")"
        if isinstance(condition, Negated):
            return f"(NOT {self.sql(condition.part)})"
        at = self._at(condition.path)
        if isinstance(condition, IsKind):
            if condition.kind == "missing":
                return f"({at} IS NULL)"
            return f"COALESCE(jsonb_typeof({at}) = '{condition.kind}', false)"
        if isinstance(condition, Equals):
            # jsonb equality: numbers by value, true is not 1.
            return f"COALESCE({at} = {self._parameter(condition.value, 'jsonb')}, false)"
        if isinstance(condition, HasLength):
            length = self._parameter(condition.length, "int")
            return (
                f"COALESCE(CASE WHEN jsonb_typeof({at}) = 'array'"
                f" THEN jsonb_array_length({at}) = {length} END, false)"
            )
        if isinstance(condition, HasSize):
            size = self._parameter(condition.size, "int")
            return (
                f"COALESCE(CASE WHEN jsonb_typeof({at}) = 'object'"
                f" THEN (SELECT count(*) FROM jsonb_object_keys({at})) = {size} END, false)"
            )
        number = self._parameter(condition.number, "jsonb")
        return (
            f"COALESCE(CASE WHEN jsonb_typeof({at}) = 'number'"
            f" THEN {at} {condition.operator} {number} END, false)"
        )


def _count(status: str) -> int:
    return int(status.rsplit(" ", 1)[-1])


class _Transaction:
    def __init__(self, connection: asyncpg.Connection) -> None:
        self.connection = connection

    async def get(self, app_name: str, namespace: str, key: str, now: float) -> StoredItem | None:
        row = await self.connection.fetchrow(_GET, app_name, now, namespace, key)
        return None if row is None else _item(row)

    async def refresh(self, app_name: str, keys: list[tuple[str, str]], now: float) -> None:
        if keys:
            namespaces, names = zip(*keys, strict=True)
            await self.connection.execute(_REFRESH, app_name, now, list(namespaces), list(names))

    async def put(
        self,
        app_name: str,
        namespace: str,
        key: str,
        user_id: str,
        value: dict[str, Any],
        text: str,
        ttl_seconds: float | None,
        now: float,
    ) -> None:
        await self.connection.execute(
            _PUT, app_name, namespace, key, user_id, value, now, ttl_seconds, text
        )

    async def delete(self, app_name: str, namespace: str, key: str) -> None:
        await self.connection.execute(_DELETE, app_name, namespace, key)

    async def search(
        self,
        app_name: str,
        prefix: str,
        now: float,
        limit: int,
        offset: int,
        condition: Condition | None,
        words: Sequence[str],
    ) -> list[StoredItem]:
        compiled = _ConditionSql(first_parameter=7)
        query = _SEARCH.format(condition="true" if condition is None else compiled.sql(condition))
        rows = await self.connection.fetch(
            query, app_name, now, prefix, limit, offset, list(words), *compiled.parameters
        )
        return [_item(row) for row in rows]

    async def namespaces(self, app_name: str, prefix: str, now: float) -> list[str]:
        rows = await self.connection.fetch(_NAMESPACES, app_name, now, prefix)
        return [row[0] for row in rows]


class PostgresStoreItems:
    def __init__(self, pool: asyncpg.Pool, timeout: float) -> None:
        self.pool = pool
        self.timeout = timeout

    @asynccontextmanager
    async def transaction(self, *, write: bool) -> AsyncIterator[_Transaction]:
        with database_errors_as_domain_errors():
            async with (
                self.pool.acquire(timeout=self.timeout) as connection,
                connection.transaction(),
            ):
                yield _Transaction(connection)

    async def sweep_expired(self, now: float, batch: int) -> int:
        swept = 0
        while True:
            async with self.transaction(write=True) as items:
                deleted = _count(await items.connection.execute(_SWEEP, now, batch))
            swept += deleted
            if deleted < batch:
                return swept
