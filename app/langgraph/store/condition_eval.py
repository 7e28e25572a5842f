"""A search filter's condition (app.langgraph.store.filters) evaluated on an
item's value in Python, with the meaning condition_sql gives it in the
database. Used where the database cannot see the value: with encryption at
rest on, values are sealed and a filtered search opens them first
(app.langgraph.store.item_sql)."""

from typing import Any

from .filters import (
    AllOf,
    AnyOf,
    Compares,
    Condition,
    Equals,
    HasLength,
    HasSize,
    IsKind,
    Kind,
    Negated,
    Path,
    is_number,
)

_MISSING = object()


def _at(value: Any, path: Path) -> Any:
    """The value at `path`: a key in an object, an index in an array; _MISSING
    where there is none (a key of an array, an index of an object)."""
    for step in path:
        in_object = isinstance(step, str) and isinstance(value, dict) and step in value
        in_array = isinstance(step, int) and isinstance(value, list) and 0 <= step < len(value)
        if not (in_object or in_array):
            return _MISSING
        value = value[step]
    return value


def _kind(value: Any) -> Kind:
    if value is _MISSING:
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def holds(condition: Condition | None, document: dict[str, Any]) -> bool:
    """None: every item."""
    if condition is None:
        return True
    if isinstance(condition, AllOf):
        return all(holds(part, document) for part in condition.parts)
    if isinstance(condition, AnyOf):
        return any(holds(part, document) for part in condition.parts)
    if isinstance(condition, Negated):
        return not holds(condition.part, document)
    found = _at(document, condition.path)
    if isinstance(condition, IsKind):
        return _kind(found) == condition.kind
    if isinstance(condition, Equals):
        wanted = condition.value
        return _kind(found) == _kind(wanted) and found == wanted
    if isinstance(condition, HasLength):
        return isinstance(found, list) and len(found) == condition.length
    if isinstance(condition, HasSize):
        return isinstance(found, dict) and len(found) == condition.size
    assert isinstance(condition, Compares)
    if not is_number(found):
        return False
    number = condition.number
    if condition.operator == ">":
        return bool(found > number)
    if condition.operator == ">=":
        return bool(found >= number)
    if condition.operator == "<":
        return bool(found < number)
    return bool(found <= number)
