"""Small builders for the item storage contract tests: an item put, got or
searched in a transaction of its own, and what a search finds as keys."""

from collections.abc import Sequence
from typing import Any

from session_state.core.limits import DEFAULT_MAX_STORE_SCAN_ROWS
from session_state.langgraph.store.domain import ScanBudget, StoredItem
from session_state.langgraph.store.filters import Condition, compile_filter
from session_state.langgraph.store.matching import searchable_text
from session_state.langgraph.store.storage import ItemStorage

NOW = 1_800_000_000.0
APP = "memories"


async def put(
    items: ItemStorage,
    namespace: str,
    key: str,
    value: dict[str, Any],
    *,
    ttl: float | None = None,
    now: float = NOW,
    text: str | None = None,
    app_name: str = APP,
) -> None:
    """Puts the item, its user its namespace's first label, as the service does."""
    async with items.transaction(write=True) as transaction:
        await transaction.put(
            app_name,
            namespace,
            key,
            namespace.split(".")[0],
            value,
            searchable_text(value) if text is None else text,
            ttl,
            now,
        )


async def get(
    items: ItemStorage, namespace: str, key: str, now: float = NOW, app_name: str = APP
) -> StoredItem | None:
    async with items.transaction(write=False) as transaction:
        return await transaction.get(app_name, namespace, key, now)


async def search(
    items: ItemStorage,
    prefix: str = "",
    *,
    now: float = NOW,
    limit: int = 100,
    offset: int = 0,
    condition: Condition | None = None,
    words: Sequence[str] = (),
    app_name: str = APP,
    budget: ScanBudget | None = None,
) -> list[StoredItem]:
    """A search with a request's default ScanBudget unless given one."""
    budget = budget or ScanBudget(DEFAULT_MAX_STORE_SCAN_ROWS)
    async with items.transaction(write=False) as transaction:
        return await transaction.search(
            app_name, prefix, now, limit, offset, condition, words, budget
        )


async def found_keys(items: ItemStorage, prefix: str = "", **search_options: Any) -> list[str]:
    """The keys a search finds, as "namespace/key", in its order."""
    return [
        f"{'.'.join(item.namespace)}/{item.key}"
        for item in await search(items, prefix, **search_options)
    ]


async def keys_matching(items: ItemStorage, filter_: dict[str, Any]) -> list[str]:
    """The keys whose value meets the filter (compiled as the service does), sorted."""
    return sorted(item.key for item in await search(items, condition=compile_filter(filter_)))


async def namespaces(items: ItemStorage, prefix: str = "", now: float = NOW) -> list[str]:
    async with items.transaction(write=False) as transaction:
        return sorted(await transaction.namespaces(APP, prefix, now))
