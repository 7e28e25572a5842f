"""The store's pure rules: the text a keyword query looks in, which
namespaces a condition matches (filters: app.langgraph.store.filters)."""

from typing import Any

from ...memory.search_text import normalize
from .domain import Namespace, NamespaceCondition


def query_words(query: str) -> list[str]:
    """The distinct words of a query: an item matches when each appears in
    its searchable_text."""
    return list(dict.fromkeys(normalize(query).split()))


def searchable_text(value: dict[str, Any]) -> str:
    """What a keyword query looks in, stored with the item: its strings
    (keys not included), normalised and case-folded."""
    return normalize(" ".join(_strings(value)))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def matches_namespace(condition: NamespaceCondition, namespace: Namespace) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    labels = (
        namespace if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    )
    return all(wanted in ("*", label) for label, wanted in zip(labels, path, strict=False))


def literal_prefix(conditions: list[NamespaceCondition]) -> Namespace:
    """The labels every matching namespace starts with, for the database to
    narrow by (a prefix condition's labels before its first wildcard)."""
    for condition in conditions:
        if condition.match_type == "prefix":
            labels: list[str] = []
            for label in condition.path:
                if label == "*":
                    break
                labels.append(label)
            return tuple(labels)
    return ()
