"""The storage of the store's items: one implementation per backend
(app.langgraph.store.postgresql, app.langgraph.store.sqlite), one contract.
A batch of operations is one transaction; namespaces are passed joined
(domain.joined). An item whose expiry time is at or before `now` is missing
for every reader."""

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from .domain import ScanBudget, StoredItem
from .filters import Condition


class ItemTransaction(Protocol):
    async def get(
        self, app_name: str, namespace: str, key: str, now: float
    ) -> StoredItem | None: ...

    async def refresh(self, app_name: str, keys: list[tuple[str, str]], now: float) -> None:
        """Pushes out the expiry of those items that have a TTL."""
        ...

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
        """Stores the item (created anew if it had expired) with the text a
        keyword query looks in."""
        ...

    async def delete(self, app_name: str, namespace: str, key: str) -> None: ...

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
        """A page of the live items whose namespace is `prefix` or under it,
        whose value meets `condition` and whose text holds every word, last
        updated first (then by namespace and key). Where the condition and
        words are applied to opened values (encryption at rest on), the rows
        read are drawn from `budget`; StoreSearchTooBroad when it runs out
        before the page is full."""
        ...

    async def namespaces(self, app_name: str, prefix: str, now: float) -> list[str]:
        """The distinct namespaces of live items, `prefix` or under it."""
        ...


class ItemStorage(Protocol):
    def transaction(self, *, write: bool) -> AbstractAsyncContextManager[ItemTransaction]: ...

    async def sweep_expired(self, now: float, batch: int) -> int:
        """Deletes items expired at `now`, `batch` at a time; how many."""
        ...
