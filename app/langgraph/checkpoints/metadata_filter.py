"""A checkpoint list's metadata filter: JSON containment, as LangGraph's
PostgresSaver applies it (`metadata @> filter`). A checkpoint matches when
its metadata holds every key of the filter with a value that contains the
filter's: objects by their keys, recursively; arrays when each element of
the filter's is contained by some element of the stored one (in any order);
strings, numbers (by value), booleans and null equal.

Bounded like the store's filters: past MAX_CONDITIONS values or MAX_DEPTH
levels it is refused; keys hold no double quote (SQLite's JSON paths cannot
name one)."""

from typing import Any

from ...core.json_rules import text_problem

MAX_CONDITIONS = 128
MAX_DEPTH = 16


def metadata_filter_problem(filter_: dict[str, Any]) -> str | None:
    """Why the filter cannot be applied, or None."""
    conditions = 0
    pending: list[tuple[Any, int]] = [(filter_, 0)]
    while pending:
        value, depth = pending.pop()
        conditions += 1
        if conditions > MAX_CONDITIONS + 1:
            return f"more than {MAX_CONDITIONS} values to compare"
        if depth > MAX_DEPTH:
            return f"nests deeper than {MAX_DEPTH} levels"
        if isinstance(value, dict):
            for key, item in value.items():
                if '"' in key:
                    return f"a key holds no double quote: {key!r}"
                problem = text_problem(key)
                if problem is not None:
                    return problem
                pending.append((item, depth + 1))
        elif isinstance(value, list):
            pending.extend((item, depth + 1) for item in value)
    return None
