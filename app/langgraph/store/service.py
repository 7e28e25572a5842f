"""The rules of LangGraph's long-term store, between the routes and an
ItemStorage: a batch as LangGraph's InMemoryStore runs one (its reads see
the store as it was before the batch; its puts, the last per item, apply
after them), in one transaction; filters, keyword queries and namespace
conditions applied here, the same on both backends (filters and keywords
compiled here, evaluated by the database: a search reads one page; with
encryption at rest on, applied to opened values within one ScanBudget a
request); TTL refreshed on read.
No backend branches here."""

import time
from collections.abc import Callable, Sequence

from ...core.end_user_tokens import acting_end_user
from ...core.errors import FieldError, Forbidden, InvalidInput, ItemTooLarge
from ...core.json_codec import dumps
from ...core.limits import Limits
from .domain import (
    GetItem,
    ListNamespaces,
    Namespace,
    Operation,
    PutItem,
    Result,
    ScanBudget,
    SearchItems,
    foreign_namespace,
    joined,
    split,
)
from .filters import Condition, FilterProblem, compile_filter
from .matching import literal_prefix, matches_namespace, query_words, searchable_text
from .metrics import STORE_OPERATIONS
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
        user = acting_end_user()
        if user is not None and foreign_namespace(operations, user.user_id):
            raise Forbidden(
                "an end-user token reaches only the store's namespaces whose first label is "
                "its user id (a search or a namespace listing must name that prefix)"
            )
        filters = self._check(operations)
        now = self.clock()
        puts: dict[tuple[Namespace, str], PutItem] = {}
        refreshing = any(
            isinstance(op, GetItem | SearchItems) and op.refresh_ttl for op in operations
        )
        budget = ScanBudget(self.limits.max_store_scan_rows)
        results: list[Result] = []
        async with self.storage.transaction(write=refreshing or _has_puts(operations)) as items:
            refresh: list[tuple[str, str]] = []
            for index, op in enumerate(operations):
                if isinstance(op, GetItem):
                    found = await items.get(app_name, joined(op.namespace), op.key, now)
                    if found is not None and op.refresh_ttl and found.ttl_seconds is not None:
                        refresh.append((joined(found.namespace), found.key))
                    results.append(found)
                elif isinstance(op, SearchItems):
                    page = await items.search(
                        app_name,
                        joined(op.namespace_prefix),
                        now,
                        op.limit,
                        op.offset,
                        filters.get(index),
                        query_words(op.query or ""),
                        budget,
                    )
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
                        searchable_text(put.value),
                        put.ttl_seconds,
                        now,
                    )
        return results

    def _check(self, operations: Sequence[Operation]) -> dict[int, Condition]:
        """Refuses what cannot be stored or searched; the searches' filters
        compiled, by the index of their operation."""
        filters: dict[int, Condition] = {}
        for index, op in enumerate(operations):
            if isinstance(op, PutItem) and op.value is not None:
                size = len(dumps(op.value))
                if size > self.limits.max_state_bytes:
                    raise ItemTooLarge.of(index, size, self.limits.max_state_bytes)
            if isinstance(op, SearchItems) and op.filter:
                try:
                    filters[index] = compile_filter(op.filter)
                except FilterProblem as problem:
                    raise InvalidInput(
                        [FieldError(["body", "ops", index, "filter"], str(problem))]
                    ) from None
        return filters


def _has_puts(operations: Sequence[Operation]) -> bool:
    return any(isinstance(op, PutItem) for op in operations)


def _kind(op: Operation) -> str:
    if isinstance(op, PutItem):
        return "put" if op.value is not None else "delete"
    return {GetItem: "get", SearchItems: "search", ListNamespaces: "listNamespaces"}[type(op)]


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
