"""The rules of LangGraph's long-term store, between the routes and an
ItemStorage: a batch as LangGraph's InMemoryStore runs one (its reads see
the store as it was before the batch; its puts, the last per item, apply
after them), in one transaction; filters, keyword queries and namespace
conditions applied here, the same on both backends; TTL refreshed on read.
No backend branches here."""

import time
from collections.abc import Callable, Sequence

from ..errors import FieldError, InvalidInput
from ..json_codec import dumps
from ..limits import Limits
from .domain import (
    GetItem,
    ListNamespaces,
    Namespace,
    Operation,
    PutItem,
    Result,
    SearchItems,
    StoredItem,
    joined,
    split,
)
from .errors import ItemTooLarge
from .matching import (
    filter_problem,
    literal_prefix,
    matches_filter,
    matches_namespace,
    matches_query,
    query_words,
)
from .metrics import STORE_ITEMS_REMOVED, STORE_OPERATIONS
from .storage import ItemStorage, ItemTransaction

SWEEP_BATCH_ITEMS = 1000


class StoreService:
    def __init__(
        self,
        storage: ItemStorage,
        limits: Limits | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.storage = storage
        self.limits = limits or Limits()
        self.clock = clock

    async def batch(self, app_name: str, operations: Sequence[Operation]) -> list[Result]:
        self._check(operations)
        now = self.clock()
        puts: dict[tuple[Namespace, str], PutItem] = {}
        refreshing = any(
            isinstance(op, GetItem | SearchItems) and op.refresh_ttl for op in operations
        )
        results: list[Result] = []
        async with self.storage.transaction(write=refreshing or _has_puts(operations)) as items:
            refresh: list[tuple[str, str]] = []
            for op in operations:
                if isinstance(op, GetItem):
                    found = await items.get(app_name, joined(op.namespace), op.key, now)
                    if found is not None and op.refresh_ttl and found.ttl_seconds is not None:
                        refresh.append((joined(found.namespace), found.key))
                    results.append(found)
                elif isinstance(op, SearchItems):
                    page = await _search(items, app_name, op, now)
                    if op.refresh_ttl:
                        refresh += [
                            (joined(item.namespace), item.key)
                            for item in page
                            if item.ttl_seconds is not None
                        ]
                    results.append(page)
                elif isinstance(op, ListNamespaces):
                    results.append(await _namespaces(items, app_name, op, now))
                else:
                    puts[(op.namespace, op.key)] = op
                    results.append(None)
                STORE_OPERATIONS.labels(_kind(op)).inc()
            await items.refresh(app_name, refresh, now)
            for put in puts.values():
                if put.value is None:
                    await items.delete(app_name, joined(put.namespace), put.key)
                else:
                    await items.put(
                        app_name,
                        joined(put.namespace),
                        put.key,
                        put.namespace[0],
                        put.value,
                        put.ttl_seconds,
                        now,
                    )
        return results

    def _check(self, operations: Sequence[Operation]) -> None:
        for index, op in enumerate(operations):
            if isinstance(op, PutItem) and op.value is not None:
                size = len(dumps(op.value))
                if size > self.limits.max_state_bytes:
                    raise ItemTooLarge(
                        f"operation {index}: the value is {size} bytes as JSON, more than "
                        f"{self.limits.max_state_bytes} (MAX_STATE_BYTES)"
                    )
            if isinstance(op, SearchItems) and op.filter is not None:
                problem = filter_problem(op.filter)
                if problem is not None:
                    raise InvalidInput([FieldError(["body", "ops", index, "filter"], problem)])

    async def erase_user(self, app_name: str, user_id: str) -> None:
        STORE_ITEMS_REMOVED.labels("erased").inc(await self.storage.erase_user(app_name, user_id))

    async def erase_app(self, app_name: str) -> None:
        STORE_ITEMS_REMOVED.labels("erased").inc(await self.storage.erase_app(app_name))

    async def sweep_expired(self, now: float) -> int:
        swept = await self.storage.sweep_expired(now, SWEEP_BATCH_ITEMS)
        STORE_ITEMS_REMOVED.labels("swept").inc(swept)
        return swept


def _has_puts(operations: Sequence[Operation]) -> bool:
    return any(isinstance(op, PutItem) for op in operations)


def _kind(op: Operation) -> str:
    if isinstance(op, PutItem):
        return "put" if op.value is not None else "delete"
    return {GetItem: "get", SearchItems: "search", ListNamespaces: "listNamespaces"}[type(op)]


async def _search(
    items: ItemTransaction, app_name: str, op: SearchItems, now: float
) -> list[StoredItem]:
    prefix = joined(op.namespace_prefix)
    if not op.filter and not op.query:
        return await items.search(app_name, prefix, now, op.limit, op.offset)
    # Filters and keywords are applied here, over the prefix's items: the
    # same rules on both backends (namespaces are per user or per topic, so
    # a prefix holds what one agent remembers, not the whole app).
    words = query_words(op.query or "")
    found = [
        item
        for item in await items.search(app_name, prefix, now, None, 0)
        if (not op.filter or matches_filter(item.value, op.filter))
        and matches_query(item.value, words)
    ]
    return found[op.offset : op.offset + op.limit]


async def _namespaces(
    items: ItemTransaction, app_name: str, op: ListNamespaces, now: float
) -> list[Namespace]:
    stored = await items.namespaces(app_name, joined(literal_prefix(op.conditions)), now)
    namespaces = [
        namespace
        for namespace in map(split, stored)
        if all(matches_namespace(condition, namespace) for condition in op.conditions)
    ]
    if op.max_depth is not None:
        namespaces = [namespace[: op.max_depth] for namespace in namespaces]
    return sorted(set(namespaces))[op.offset : op.offset + op.limit]
