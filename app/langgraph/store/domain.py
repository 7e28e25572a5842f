"""The values the store's routes, rules and storage pass each other. A
namespace is a tuple of labels, stored as its labels joined by "."."""

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
