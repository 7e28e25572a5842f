"""The store's pure rules: which items a filter and a query match, which
namespaces a condition matches. The filter follows LangGraph's InMemoryStore
and PostgresStore: a key's value equal (objects and arrays compared
member-wise), or operators $eq $ne $gt $gte $lt $lte."""

from typing import Any

from ..search_text import normalize
from .domain import Namespace, NamespaceCondition

OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_ORDERING = frozenset({"$gt", "$gte", "$lt", "$lte"})


def filter_problem(filter_: dict[str, Any]) -> str | None:
    """Why a filter cannot be applied, or None: an unknown operator, or an
    ordering operator with something other than a number."""
    for value in filter_.values():
        if isinstance(value, dict):
            for name, operand in value.items():
                if not name.startswith("$"):
                    continue
                if name not in OPERATORS:
                    return f"unknown operator {name!r} (known: {', '.join(sorted(OPERATORS))})"
                if name in _ORDERING and not _is_number(operand):
                    return f"{name} compares numbers"
            if any(name.startswith("$") for name in value) and not all(
                name.startswith("$") for name in value
            ):
                return "an object mixes operators and keys"
    return None


def matches_filter(value: dict[str, Any], filter_: dict[str, Any]) -> bool:
    return all(_compare(value.get(key), wanted) for key, wanted in filter_.items())


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _compare(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(name.startswith("$") for name in wanted):
            return all(_apply(value, name, operand) for name, operand in wanted.items())
        return isinstance(value, dict) and all(
            _compare(value.get(key), item) for key, item in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(value, list)
            and len(value) == len(wanted)
            and all(_compare(item, other) for item, other in zip(value, wanted, strict=True))
        )
    return _equal(value, wanted)


def _equal(value: Any, wanted: Any) -> bool:
    # JSON's true is not its 1 (Python's == says it is).
    return isinstance(value, bool) == isinstance(wanted, bool) and bool(value == wanted)


def _apply(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return _equal(value, operand)
    if operator == "$ne":
        return not _equal(value, operand)
    # An item whose value is not a number is not in an ordering's range.
    if not _is_number(value):
        return False
    if operator == "$gt":
        return bool(value > operand)
    if operator == "$gte":
        return bool(value >= operand)
    if operator == "$lt":
        return bool(value < operand)
    return bool(value <= operand)


def query_words(query: str) -> list[str]:
    return normalize(query).split()


def matches_query(value: dict[str, Any], words: list[str]) -> bool:
    """Every word of the query appears in the value's text (its strings,
    normalised and case-folded, keys not included)."""
    text = normalize(" ".join(_strings(value)))
    return all(word in text for word in words)


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
