"""The store's items in SQL, written once for both dialects: the statements
(`:name` parameters, the dialect's pieces from app.langgraph.dialects) and the
ItemTransaction that runs them (app.langgraph.store.storage) on a connection
each backend adapts (app.langgraph.store.postgresql, app.langgraph.store.sqlite).

With encryption at rest on (app.langgraph.sealing) values and their keyword
texts are stored sealed: a search with a filter or a query reads the
prefix's live items in pages, newest first, opens them and keeps those that
match (app.langgraph.store.condition_eval) until its page is full. Its cost
grows with the items under the prefix, not with the page, so the rows one
request reads this way are bounded (ScanBudget, from
SESSION_STATE_MAX_STORE_SCAN_ROWS): past them the search is refused
(StoreSearchTooBroad) rather than answered short, since LangGraph's
BaseStore.search has no way to say a page is partial (docs/security.md)."""

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ...core.errors import StoreSearchTooBroad
from ..dialects import Dialect
from ..expiry import LIVE, expired, expiry, refreshed, sweep
from ..sealing import PLAIN, Sealing
from .condition_eval import holds
from .condition_sql import ConditionSql
from .domain import ScanBudget, StoredItem, split
from .filters import Condition
from .metrics import STORE_SEALED_ROWS_READ

# Rows a search over sealed values reads per statement; its first reads only
# what its page needs if every item matches, which the newest often do.
SCAN_ROWS = 200

_COLUMNS = "namespace, key, value, create_time, update_time, expire_time, ttl_seconds"
_OF_APP = "app_name = :app_name"


class ItemSql:
    """The statements of one dialect."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        ttl = dialect.typed(":ttl", "float8")
        # `namespace` is the prefix or under it ("" is every namespace).
        below_prefix = dialect.starts_with("namespace", "(:prefix || '.')")
        under = f"(:prefix = '' OR namespace = :prefix OR {below_prefix})"
        self.get = (
            f"SELECT {_COLUMNS} FROM lg_store_items"
            f" WHERE {_OF_APP} AND {LIVE} AND namespace = :namespace AND key = :key"
        )
        self.refresh = f"""
UPDATE lg_store_items SET {refreshed()}
 WHERE {_OF_APP} AND ttl_seconds IS NOT NULL AND {LIVE}
   AND (namespace, key) IN (SELECT k.value ->> 0, k.value ->> 1
                              FROM {dialect.json_rows(":keys")} AS k)
"""
        # An item that had expired (not swept yet) is created anew.
        self.put = f"""
INSERT INTO lg_store_items AS i
       (app_name, namespace, key, user_id, value, search_text, create_time, update_time,
        expire_time, ttl_seconds)
VALUES (:app_name, :namespace, :key, :user_id, :value, :search_text, :now, :now, {expiry(ttl)},
        {ttl})
ON CONFLICT (app_name, namespace, key) DO UPDATE
   SET value = excluded.value, search_text = excluded.search_text, update_time = :now,
       create_time = CASE WHEN {expired("i")} THEN :now ELSE i.create_time END,
       expire_time = excluded.expire_time, ttl_seconds = excluded.ttl_seconds
"""
        self.delete = (
            f"DELETE FROM lg_store_items WHERE {_OF_APP} AND namespace = :namespace AND key = :key"
        )
        # Every word of the query in the item's text; then the filter's condition.
        self._search = f"""
SELECT {_COLUMNS} FROM lg_store_items
 WHERE {_OF_APP} AND {LIVE} AND {under}
   AND NOT EXISTS (SELECT 1 FROM {dialect.json_text_rows(":words")} AS w
                    WHERE {dialect.position("search_text", "w.value")} = 0)
   AND {{condition}}
 ORDER BY update_time DESC, namespace, key
 LIMIT :limit OFFSET :offset
"""
        # The live items of the prefix after a position (update time,
        # namespace, key) in the search's order, for a search over sealed values.
        after_time = dialect.typed(":after_time", "float8")
        self.scan = f"""
SELECT {_COLUMNS}, search_text FROM lg_store_items
 WHERE {_OF_APP} AND {LIVE} AND {under}
   AND ({after_time} IS NULL OR update_time < {after_time}
        OR (update_time = {after_time}
            AND (namespace, key) > ({dialect.typed(":after_ns", "text")}, :after_key)))
 ORDER BY update_time DESC, namespace, key
 LIMIT :limit
"""
        self.namespaces = (
            f"SELECT DISTINCT namespace FROM lg_store_items WHERE {_OF_APP} AND {LIVE} AND {under}"
        )
        # Erased with the rest of the user or app (app.lifecycle.erasure).
        self.erase_user = f"DELETE FROM lg_store_items WHERE {_OF_APP} AND user_id = :user_id"
        self.erase_app = f"DELETE FROM lg_store_items WHERE {_OF_APP}"
        self.sweep = sweep("lg_store_items", dialect)

    def search(self, condition: Condition | None) -> tuple[str, dict[str, Any]]:
        """The search with the filter's condition, and the condition's parameters."""
        compiled = ConditionSql(self.dialect)
        return self._search.format(condition=compiled.sql(condition)), compiled.parameters


class Rows(Protocol):
    """A backend's connection, running a statement of `:name` parameters."""

    async def fetch(self, sql: str, arguments: dict[str, Any]) -> Sequence[Mapping[Any, Any]]: ...

    async def execute(self, sql: str, arguments: dict[str, Any]) -> int:
        """How many rows the statement changed."""
        ...


class SqlItemTransaction:
    """The ItemTransaction of both backends."""

    def __init__(self, rows: Rows, sql: ItemSql, sealing: Sealing = PLAIN) -> None:
        self.rows = rows
        self.sql = sql
        self.dialect = sql.dialect
        self.sealing = sealing

    def _item(self, row: Mapping[Any, Any]) -> StoredItem:
        return StoredItem(
            split(row["namespace"]),
            row["key"],
            self.sealing.open_item(self.dialect.json_result(row["value"])),
            row["create_time"],
            row["update_time"],
            row["expire_time"],
            row["ttl_seconds"],
        )

    async def get(self, app_name: str, namespace: str, key: str, now: float) -> StoredItem | None:
        where = {"app_name": app_name, "now": now, "namespace": namespace, "key": key}
        rows = await self.rows.fetch(self.sql.get, where)
        return self._item(rows[0]) if rows else None

    async def refresh(self, app_name: str, keys: list[tuple[str, str]], now: float) -> None:
        if keys:
            keys_argument = self.dialect.json_argument([list(key) for key in keys])
            where = {"app_name": app_name, "now": now, "keys": keys_argument}
            await self.rows.execute(self.sql.refresh, where)

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
        item = {
            "app_name": app_name,
            "namespace": namespace,
            "key": key,
            "user_id": user_id,
            "value": self.dialect.json_argument(self.sealing.seal_item(value)),
            "search_text": self.sealing.seal_text(text),
            "now": now,
            "ttl": ttl_seconds,
        }
        await self.rows.execute(self.sql.put, item)

    async def delete(self, app_name: str, namespace: str, key: str) -> None:
        where = {"app_name": app_name, "namespace": namespace, "key": key}
        await self.rows.execute(self.sql.delete, where)

    async def search(
        self,
        app_name: str,
        prefix: str,
        now: float,
        limit: int,
        offset: int,
        condition: Condition | None,
        words: Sequence[str],
        budget: ScanBudget,
    ) -> list[StoredItem]:
        if self.sealing.on and (condition is not None or words):
            return await self._search_opened(
                app_name, prefix, now, limit, offset, condition, words, budget
            )
        query, condition_arguments = self.sql.search(condition)
        where = {
            "app_name": app_name,
            "now": now,
            "prefix": prefix,
            "limit": limit,
            "offset": offset,
            "words": self.dialect.json_argument(list(words)),
            **condition_arguments,
        }
        return [self._item(row) for row in await self.rows.fetch(query, where)]

    async def _search_opened(
        self,
        app_name: str,
        prefix: str,
        now: float,
        limit: int,
        offset: int,
        condition: Condition | None,
        words: Sequence[str],
        budget: ScanBudget,
    ) -> list[StoredItem]:
        """search's page, the filter and words applied to opened values."""
        matched: list[StoredItem] = []
        where: dict[str, Any] = {
            "app_name": app_name,
            "now": now,
            "prefix": prefix,
            "limit": None,
            "after_time": None,
            "after_ns": None,
            "after_key": None,
        }
        while len(matched) < offset + limit:
            if budget.left == 0:
                raise StoreSearchTooBroad.of(budget.read)
            wanted = offset + limit if where["limit"] is None else SCAN_ROWS
            where["limit"] = min(wanted, SCAN_ROWS, budget.left)
            rows = await self.rows.fetch(self.sql.scan, where)
            budget.read += len(rows)
            STORE_SEALED_ROWS_READ.inc(len(rows))
            for row in rows:
                # The words first: their text opens without parsing the value.
                if not self._has_words(row, words):
                    continue
                item = self._item(row)
                if holds(condition, item.value):
                    matched.append(item)
            if len(rows) < where["limit"]:
                break
            last = rows[-1]
            where |= {
                "after_time": last["update_time"],
                "after_ns": last["namespace"],
                "after_key": last["key"],
            }
        return matched[offset : offset + limit]

    def _has_words(self, row: Mapping[Any, Any], words: Sequence[str]) -> bool:
        if not words:
            return True
        text = self.sealing.open_text(row["search_text"])
        return all(word in text for word in words)

    async def namespaces(self, app_name: str, prefix: str, now: float) -> list[str]:
        where = {"app_name": app_name, "now": now, "prefix": prefix}
        return [row["namespace"] for row in await self.rows.fetch(self.sql.namespaces, where)]


async def sweep_expired(rows: Rows, sql: ItemSql, now: float, batch: int) -> int:
    """One batch of the sweep: how many items it deleted."""
    return await rows.execute(sql.sweep, {"now": now, "batch": batch})


async def erase_items(rows: Rows, sql: ItemSql, app_name: str, user_id: str | None) -> int:
    """The items of the user (or app, when None), in the caller's transaction."""
    if user_id is None:
        return await rows.execute(sql.erase_app, {"app_name": app_name})
    return await rows.execute(sql.erase_user, {"app_name": app_name, "user_id": user_id})
