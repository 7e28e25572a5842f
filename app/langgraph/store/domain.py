"""The values the store's routes, rules and storage pass each other. A
namespace is a tuple of labels, stored as its labels joined by "."."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Namespace = tuple[str, ...]
SEPARATOR = "."


def joined(namespace: Namespace) -> str:
    return SEPARATOR.join(namespace)


def split(stored: str) -> Namespace:
    return tuple(stored.split(SEPARATOR)) if stored else ()


@dataclass(frozen=True)
class StoredItem:
    namespace: Namespace
    key: str
    value: dict[str, Any]
    create_time: float
    update_time: float
    expire_time: float | None
    ttl_seconds: float | None


@dataclass
class ScanBudget:
    """The stored items a request's searches may still open and read where
    they filter opened values (encryption at rest on): its share of
    SESSION_STATE_MAX_STORE_SCAN_ROWS, drawn down by each of them."""

    limit: int
    read: int = 0

    @property
    def left(self) -> int:
        return max(self.limit - self.read, 0)


@dataclass(frozen=True)
class GetItem:
    namespace: Namespace
    key: str
    refresh_ttl: bool = True


@dataclass(frozen=True)
class PutItem:
    """`value` None: the item is deleted. `ttl_seconds` None: never expires."""

    namespace: Namespace
    key: str
    value: dict[str, Any] | None
    ttl_seconds: float | None = None


@dataclass(frozen=True)
class SearchItems:
    namespace_prefix: Namespace
    filter: dict[str, Any] | None = None
    query: str | None = None
    limit: int = 10
    offset: int = 0
    refresh_ttl: bool = True


@dataclass(frozen=True)
class NamespaceCondition:
    """LangGraph's MatchCondition: labels compared from the start (prefix)
    or the end (suffix); "*" matches any label."""

    match_type: Literal["prefix", "suffix"]
    path: Namespace


@dataclass(frozen=True)
class ListNamespaces:
    conditions: list[NamespaceCondition] = field(default_factory=list)
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0


Operation = GetItem | PutItem | SearchItems | ListNamespaces
Result = StoredItem | None | list[StoredItem] | list[Namespace]


def foreign_namespace(operations: Sequence[Operation], user_id: str) -> bool:
    """Whether an operation reaches past the user's own namespaces (those
    whose first label is the user, as erasure counts them): an end user's
    gets, puts and searches name them, and a namespace listing must be
    limited to them by a prefix condition."""
    for op in operations:
        if isinstance(op, GetItem | PutItem):
            reached = op.namespace
        elif isinstance(op, SearchItems):
            reached = op.namespace_prefix
        else:
            prefixes = [c.path for c in op.conditions if c.match_type == "prefix"]
            if not any(prefix[:1] == (user_id,) for prefix in prefixes):
                return True
            continue
        if reached[:1] != (user_id,):
            return True
    return False
