"""LangGraph's store items on SQLite (the store's engine): the ItemStorage of
app.langgraph_store.storage, with the PostgreSQL one's contract
(app.db.postgresql_store_items). Writers take the database's write lock at
BEGIN (engine.py)."""

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .. import json_codec
from ..langgraph_store.domain import StoredItem, split
from .database_errors import database_errors_as_domain_errors
from .engine import WRITE_OPTION

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
       (app_name, namespace, key, user_id, value, create_time, update_time, expire_time,
        ttl_seconds)
VALUES (:app_name, :namespace, :key, :user_id, :value, :now, :now, :now + :ttl, :ttl)
ON CONFLICT (app_name, namespace, key) DO UPDATE
   SET value = excluded.value, update_time = :now,
       create_time = CASE WHEN expire_time IS NOT NULL AND expire_time <= :now
                          THEN :now ELSE create_time END,
       expire_time = excluded.expire_time, ttl_seconds = excluded.ttl_seconds
"""
)
_DELETE = text(
    "DELETE FROM lg_store_items WHERE app_name = :app_name AND namespace = :namespace"
    " AND key = :key"
)
_SEARCH = text(
    f"""
SELECT {_COLUMNS} FROM lg_store_items
 WHERE app_name = :app_name AND {_LIVE} AND {_UNDER}
 ORDER BY update_time DESC, namespace, key
 LIMIT :limit OFFSET :offset
"""
)
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
                "now": now,
                "ttl": ttl_seconds,
            },
        )

    async def delete(self, app_name: str, namespace: str, key: str) -> None:
        where = {"app_name": app_name, "namespace": namespace, "key": key}
        await self.connection.execute(_DELETE, where)

    async def search(
        self, app_name: str, prefix: str, now: float, limit: int | None, offset: int
    ) -> list[StoredItem]:
        where = {
            "app_name": app_name,
            "now": now,
            "prefix": prefix,
            "limit": -1 if limit is None else limit,
            "offset": offset,
        }
        return [_item(row) for row in await self.connection.execute(_SEARCH, where)]

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

    async def erase_user(self, app_name: str, user_id: str) -> int:
        async with self.transaction(write=True) as items:
            where = {"app_name": app_name, "user_id": user_id}
            return (await items.connection.execute(_ERASE_USER, where)).rowcount

    async def erase_app(self, app_name: str) -> int:
        async with self.transaction(write=True) as items:
            return (await items.connection.execute(_ERASE_APP, {"app_name": app_name})).rowcount

    async def sweep_expired(self, now: float, batch: int) -> int:
        swept = 0
        while True:
            async with self.transaction(write=True) as items:
                where = {"now": now, "batch": batch}
                deleted = (await items.connection.execute(_SWEEP, where)).rowcount
            swept += deleted
            if deleted < batch:
                return swept
