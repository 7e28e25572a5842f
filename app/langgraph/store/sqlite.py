"""LangGraph's store items on SQLite (the store's engine): the ItemStorage of
app.langgraph.store.storage, with the PostgreSQL one's contract
(app.langgraph.store.postgresql). Writers take the database's write lock at
BEGIN (engine.py)."""

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ...core import json_codec
from ...db.database_errors import database_errors_as_domain_errors
from ...db.engine import WRITE_OPTION
from .domain import StoredItem, split
from .filters import AllOf, AnyOf, Condition, Equals, HasLength, HasSize, IsKind, Negated

_COLUMNS = "namespace, key, value, create_time, update_time, expire_time, ttl_seconds"
_LIVE = "(expire_time IS NULL OR expire_time > :now)"
_UNDER = (
    "(:prefix = '' OR namespace = :prefix"
    " OR substr(namespace, 1, length(:prefix) + 1) = :prefix || '.')"
)

_GET = text(
    f"SELECT {_COLUMNS} FROM lg_store_items"
    f" WHERE app_name = :app_name AND {_LIVE} AND namespace = :namespace AND key = :key"
)
_REFRESH = text(
    """
UPDATE lg_store_items SET expire_time = :now + ttl_seconds
 WHERE app_name = :app_name AND ttl_seconds IS NOT NULL
   AND (expire_time IS NULL OR expire_time > :now)
   AND (namespace, key) IN (SELECT value ->> 0, value ->> 1 FROM json_each(:keys))
"""
)
_PUT = text(
    """
INSERT INTO lg_store_items
       (app_name, namespace, key, user_id, value, search_text, create_time, update_time,
        expire_time, ttl_seconds)
VALUES (:app_name, :namespace, :key, :user_id, :value, :search_text, :now, :now, :now + :ttl,
        :ttl)
ON CONFLICT (app_name, namespace, key) DO UPDATE
   SET value = excluded.value, search_text = excluded.search_text, update_time = :now,
       create_time = CASE WHEN expire_time IS NOT NULL AND expire_time <= :now
                          THEN :now ELSE create_time END,
       expire_time = excluded.expire_time, ttl_seconds = excluded.ttl_seconds
"""
)
_DELETE = text(
    "DELETE FROM lg_store_items WHERE app_name = :app_name AND namespace = :namespace"
    " AND key = :key"
)
# Every word of the query in the item's text; then the filter's condition.
_SEARCH = f"""
SELECT {_COLUMNS} FROM lg_store_items
 WHERE app_name = :app_name AND {_LIVE} AND {_UNDER}
   AND NOT EXISTS (SELECT 1 FROM json_each(:words) AS w WHERE instr(search_text, w.value) = 0)
   AND {{condition}}
 ORDER BY update_time DESC, namespace, key
 LIMIT :limit OFFSET :offset
"""
# json_type's names of LangGraph's kinds.
_TYPES = {
    "object": "('object')",
    "array": "('array')",
    "string": "('text')",
    "number": "('integer', 'real')",
    "boolean": "('true', 'false')",
    "null": "('null')",
}
_INT64 = 2**63 - 1
# Qualified: inside json_each's subquery, `value` is json_each's own column.
_VALUE = "lg_store_items.value"
_NAMESPACES = text(
    "SELECT DISTINCT namespace FROM lg_store_items"
    f" WHERE app_name = :app_name AND {_LIVE} AND {_UNDER}"
)
_ERASE_USER = text("DELETE FROM lg_store_items WHERE app_name = :app_name AND user_id = :user_id")
_ERASE_APP = text("DELETE FROM lg_store_items WHERE app_name = :app_name")
_SWEEP = text(
    """
DELETE FROM lg_store_items WHERE rowid IN (
    SELECT rowid FROM lg_store_items
     WHERE expire_time IS NOT NULL AND expire_time <= :now LIMIT :batch)
"""
)


class _ConditionSql:
    """A filter's condition as SQL on the item's value, its operands as parameters
    :f0, :f1, ... Every part is true or false, never NULL (NOT of a NULL
    would be NULL). A path is a JSON path parameter ('$."key"[0]'; the
    filter refuses keys holding a double quote)."""

    def __init__(self) -> None:
        self.parameters: dict[str, Any] = {}

    def _parameter(self, value: Any) -> str:
        name = f"f{len(self.parameters)}"
        self.parameters[name] = value
        return f":{name}"

    def _path(self, path: tuple[str | int, ...]) -> str:
        # A key as JSON writes it, escapes and all: SQLite before 3.45
        # compares a path's key with the stored text as it is.
        steps = "".join(
            f"[{step}]" if isinstance(step, int) else f".{json_codec.dumps_text(step)}"
            for step in path
        )
        return self._parameter("$" + steps)

    def sql(self, condition: Condition) -> str:
        if isinstance(condition, AllOf | AnyOf):
            if not condition.parts:
                return "1" if isinstance(condition, AllOf) else "0"
            joiner = " AND " if isinstance(condition, AllOf) else " OR "
            return "(" + joiner.join(self.sql(part) for part in condition.parts) + ")"
        if isinstance(condition, Negated):
            return f"(NOT {self.sql(condition.part)})"
        path = self._path(condition.path)
        kind = f"json_type({_VALUE}, {path})"
        if isinstance(condition, IsKind):
            if condition.kind == "missing":
                return f"({kind} IS NULL)"
            return f"COALESCE({kind} IN {_TYPES[condition.kind]}, 0)"
        if isinstance(condition, Equals):
            wanted = condition.value
            if isinstance(wanted, bool):
                return f"COALESCE({kind} = '{'true' if wanted else 'false'}', 0)"
            types = _TYPES["string" if isinstance(wanted, str) else "number"]
            return (
                f"COALESCE({kind} IN {types}"
                f" AND json_extract({_VALUE}, {path}) = {self._parameter(_bindable(wanted))}, 0)"
            )
        if isinstance(condition, HasLength):
            length = self._parameter(condition.length)
            return (
                f"COALESCE({kind} = 'array' AND json_array_length({_VALUE}, {path}) = {length}, 0)"
            )
        if isinstance(condition, HasSize):
            size = self._parameter(condition.size)
            return (
                f"COALESCE({kind} = 'object'"
                f" AND (SELECT count(*) FROM json_each({_VALUE}, {path})) = {size}, 0)"
            )
        number = self._parameter(_bindable(condition.number))
        return (
            f"COALESCE({kind} IN {_TYPES['number']}"
            f" AND json_extract({_VALUE}, {path}) {condition.operator} {number}, 0)"
        )


def _bindable(value: str | int | float) -> str | int | float:
    # SQLite binds integers of 64 bits; a bigger one compares as a float.
    if isinstance(value, int) and not -_INT64 - 1 <= value <= _INT64:
        return float(value)
    return value


def _item(row: Row[Any]) -> StoredItem:
    return StoredItem(
        split(row.namespace),
        row.key,
        json_codec.loads(row.value),
        row.create_time,
        row.update_time,
        row.expire_time,
        row.ttl_seconds,
    )


class _Transaction:
    def __init__(self, connection: AsyncConnection) -> None:
        self.connection = connection

    async def get(self, app_name: str, namespace: str, key: str, now: float) -> StoredItem | None:
        where = {"app_name": app_name, "namespace": namespace, "key": key, "now": now}
        row = (await self.connection.execute(_GET, where)).first()
        return None if row is None else _item(row)

    async def refresh(self, app_name: str, keys: list[tuple[str, str]], now: float) -> None:
        if keys:
            where = {"app_name": app_name, "now": now, "keys": json.dumps(keys)}
            await self.connection.execute(_REFRESH, where)

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
            _PUT,
            {
                "app_name": app_name,
                "namespace": namespace,
                "key": key,
                "user_id": user_id,
                "value": json_codec.dumps_text(value),
                "search_text": text,
                "now": now,
                "ttl": ttl_seconds,
            },
        )

    async def delete(self, app_name: str, namespace: str, key: str) -> None:
        where = {"app_name": app_name, "namespace": namespace, "key": key}
        await self.connection.execute(_DELETE, where)

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
        compiled = _ConditionSql()
        query = _SEARCH.format(condition="1" if condition is None else compiled.sql(condition))
        where = {
            "app_name": app_name,
            "now": now,
            "prefix": prefix,
            "limit": limit,
            "offset": offset,
            "words": json.dumps(list(words)),
            **compiled.parameters,
        }
        return [_item(row) for row in await self.connection.execute(text(query), where)]

    async def namespaces(self, app_name: str, prefix: str, now: float) -> list[str]:
        where = {"app_name": app_name, "now": now, "prefix": prefix}
        return [row[0] for row in await self.connection.execute(_NAMESPACES, where)]


class SqliteStoreItems:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    @asynccontextmanager
    async def transaction(self, *, write: bool) -> AsyncIterator[_Transaction]:
        with database_errors_as_domain_errors():
            async with self.engine.connect() as connection:
                if write:
                    await connection.execution_options(**{WRITE_OPTION: True})
                async with connection.begin():
                    yield _Transaction(connection)

    async def sweep_expired(self, now: float, batch: int) -> int:
        swept = 0
        while True:
            async with self.transaction(write=True) as items:
                where = {"now": now, "batch": batch}
                deleted = (await items.connection.execute(_SWEEP, where)).rowcount
            swept += deleted
            if deleted < batch:
                return swept


async def erase_items(connection: AsyncConnection, app_name: str, user_id: str | None) -> int:
    """Erased with the rest of the user (or app, when None) in the caller's
    transaction (app.lifecycle.erasure)."""
    if user_id is None:
        return (await connection.execute(_ERASE_APP, {"app_name": app_name})).rowcount
    where = {"app_name": app_name, "user_id": user_id}
    return (await connection.execute(_ERASE_USER, where)).rowcount
