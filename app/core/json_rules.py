"""Which JSON values the API accepts: the one rule for every body, on both
backends.

A value is accepted only if both databases can store it and give it back
exactly: numbers are finite (`1e999` parses to infinity, which JSON cannot
write back), strings hold no NUL (PostgreSQL text and JSONB cannot hold
U+0000) and no lone surrogate (no UTF-8 encoding exists for one), and arrays
and objects nest at most `max_depth` levels (deeper documents cost recursion
in every JSON library on the way, and orjson refuses to write past 254).
"""

import math
import re
from collections.abc import Iterable
from typing import Any

from .errors import FieldError

_SURROGATE = re.compile("[\ud800-\udfff]")

NON_FINITE_MESSAGE = "numbers must be finite (JSON has no infinity or NaN)"
NUL_MESSAGE = "strings cannot hold the NUL character (U+0000)"
SURROGATE_MESSAGE = "strings cannot hold a lone surrogate (U+D800 to U+DFFF)"

Path = tuple[str | int, ...]


def text_problem(text: str) -> str | None:
    """Why `text` cannot be stored, or None."""
    if "\x00" in text:
        return NUL_MESSAGE
    if not text.isascii() and _SURROGATE.search(text):
        return SURROGATE_MESSAGE
    return None


def printable(text: str) -> str:
    """`text` with lone surrogates written as escapes, so that an error
    naming it can itself be encoded."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def depth_message(max_depth: int) -> str:
    return f"arrays and objects may nest at most {max_depth} levels"


def find_unstorable(document: Any, max_depth: int) -> FieldError | None:
    """The first value of `document` that breaks the rule, as a field error
    located under "body"; None when every value is storable."""
    # The quick check runs on every body, so it stays cheap; the walk that
    # names the field only when it found something.
    if count_keys_if_storable(document, max_depth) is not None:
        return None
    return _locate_problem(document, max_depth)


def count_keys_if_storable(document: Any, max_depth: int) -> int | None:
    """How many object keys `document` holds, all objects counted, or None
    when a value breaks the rule (find_unstorable then names it). The count
    lets a caller tell, without parsing again, that its text repeated no key."""
    # The quick check runs on every body, so it only counts (its cost:
    # docs/performance.md, "Small costs the code is shaped by"); the walk that
    # names the field runs only when it found something.
    keys = _scan(document, max_depth)
    return None if keys < 0 else keys


def _scan(value: Any, levels_left: int) -> int:
    """The keys counted, or -1 at the first value that breaks the rule."""
    # Recursion is bounded: it stops at `levels_left`, at most 200 deep.
    kind = type(value)
    if kind is str:
        bad = "\x00" in value or (not value.isascii() and _SURROGATE.search(value) is not None)
        return -1 if bad else 0
    if kind is float:
        return 0 if math.isfinite(value) else -1
    if kind is dict:
        if levels_left == 0:
            return -1
        for key in value:
            if "\x00" in key or (not key.isascii() and _SURROGATE.search(key) is not None):
                return -1
        inside = _scan_items(value.values(), levels_left - 1)
        return -1 if inside < 0 else len(value) + inside
    if kind is list:
        if levels_left == 0:
            return -1
        return _scan_items(value, levels_left - 1)
    return 0


def _scan_items(items: Iterable[Any], levels_left: int) -> int:
    """The keys the containers among `items` hold, or -1 at the first value
    that breaks the rule."""
    keys = 0
    for item in items:
        if type(item) in _CONTAINERS_AND_TEXT:
            inside = _scan(item, levels_left)
            if inside < 0:
                return -1
            keys += inside
    return keys


def _locate_problem(document: Any, max_depth: int) -> FieldError | None:
    stack: list[tuple[Any, int, Path]] = [(document, 1, ())]
    while stack:
        value, depth, path = stack.pop()
        kind = type(value)
        if kind is str:
            problem = text_problem(value)
            if problem is not None:
                return FieldError(["body", *path], problem)
        elif kind is float:
            if not math.isfinite(value):
                return FieldError(["body", *path], NON_FINITE_MESSAGE)
        elif kind is dict:
            if depth > max_depth:
                return FieldError(["body", *path], depth_message(max_depth))
            for key, item in value.items():
                problem = text_problem(key)
                if problem is not None:
                    return FieldError(["body", *path, printable(key)], f"key: {problem}")
                if type(item) in _CONTAINERS_AND_TEXT:
                    stack.append((item, depth + 1, (*path, key)))
        elif kind is list:
            if depth > max_depth:
                return FieldError(["body", *path], depth_message(max_depth))
            for index, item in enumerate(value):
                if type(item) in _CONTAINERS_AND_TEXT:
                    stack.append((item, depth + 1, (*path, index)))
    return None


# What can hide a problem; ints, booleans and null are always storable.
_CONTAINERS_AND_TEXT = frozenset({str, float, dict, list})
