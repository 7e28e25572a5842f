"""JSON encoding: orjson for speed, the standard library where orjson would
change a value.

orjson reads an integer beyond 64 bits as a float, silently, and refuses to
write one; the standard library keeps them exact. A document with a run of 19
or more digits (where such integers can hide) is therefore read by the
standard library, so a client's document is never altered.
"""

import json
import math
from collections.abc import Iterator
from typing import Any

import orjson


class InvalidJSON(ValueError):
    """The bytes are not one JSON document (NaN and Infinity included);
    `line` and `column` (from 1) where the parser stopped, when known."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.reason = message
        self.line = line
        self.column = column


class TooDeep(InvalidJSON):
    """The document nests deeper than the parsers go (about 1,000 levels)."""


def _refuse_constant(name: str) -> Any:
    raise InvalidJSON(f"{name} is not valid JSON")


# Each ASCII digit as "0", every other byte as a space: a run of 19 digits is
# then a substring search, a tenth of a regex's time on a large body (the
# base64 of LangGraph's values is full of digits).
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_DIGIT_RUN = b"0" * 19


def has_long_digit_run(raw: bytes) -> bool:
    """Whether `raw` holds 19 or more ASCII digits in a row."""
    return _LONG_DIGIT_RUN in raw.translate(_DIGITS_AS_ZEROS)


def loads(data: bytes | str) -> Any:
    raw = data.encode() if isinstance(data, str) else data
    if not has_long_digit_run(raw):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            if "recursion" in str(error):
                raise TooDeep(str(error)) from None
    # Also where orjson refused a number it reads as infinity or a lone
    # surrogate: the standard library reads them, and the caller's value
    # rules (app.core.json_rules) then name the field that holds them.
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError:
        raise TooDeep("the document nests too deep") from None
    except json.JSONDecodeError as error:
        raise InvalidJSON(error.msg, error.lineno, error.colno) from None
    except ValueError as error:
        raise InvalidJSON(str(error)) from None


# A string followed by a colon (whitespace between them allowed): every object
# key is one, so a text holds at least as many of these as its objects hold
# keys (a `\"` followed by a colon inside a string counts too, which only
# costs the exact check).
_JSON_WHITESPACE = b" \t\r\n"


def _key_like_places(raw: bytes) -> int:
    # At least as many as the places a string is followed by a colon (dropping
    # whitespace only joins a quote to a colon), and faster than a regex.
    return raw.translate(None, _JSON_WHITESPACE).count(b'":')


class _RepeatedKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _distinct_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(pairs)
    if len(document) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return document


def repeated_key(raw: bytes, keys: int) -> str | None:
    """A key that one object of `raw` (valid JSON) holds twice, or None.
    `keys`: how many keys `raw` parsed holds. A parsed object keeps the last
    of a repeated key silently; when the text has no more key-like places
    than that count, no key can have been repeated, and the text is not
    parsed again (the common case, at the cost of one regex count)."""
    if _key_like_places(raw) <= keys:
        return None
    try:
        json.loads(raw, object_pairs_hook=_distinct_keys)
    except _RepeatedKey as repeated:
        return repeated.key
    return None


_DOCUMENTS = json.JSONDecoder(parse_constant=_refuse_constant)
_BLANK = " \t\n\r"


def _past_blanks(text: str, position: int) -> int:
    while position < len(text) and text[position] in _BLANK:
        position += 1
    return position


def split_joined(text: str) -> Iterator[tuple[str, Any]]:
    """The JSON documents `text` holds one after another, a comma between
    two (as a session read joins its stored events), each as its own text
    and its value. orjson reads them all at once; each value written back
    by orjson is then found at its place in `text`, which is where the
    document ends (the common case: events are stored as orjson writes
    them). From the first one written otherwise (another writer's spacing,
    an integer beyond 64 bits), the standard library's decoder, which tells
    where a document ends, reads the rest."""
    position = 0
    try:
        values = orjson.loads("[" + text + "]")
    except orjson.JSONDecodeError:
        values = []
    for value in values:
        written = orjson.dumps(value).decode()
        if not text.startswith(written, position):
            break
        yield written, value
        position = _next_document(text, position + len(written))
    position = _past_blanks(text, position)
    while position < len(text):
        try:
            value, end = _DOCUMENTS.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise InvalidJSON(error.msg, error.lineno, error.colno) from None
        yield text[position:end], value
        position = _next_document(text, end)


def _next_document(text: str, end: int) -> int:
    """Where the document after the one ending at `end` starts (past the
    comma and any blanks); the text's length when there is none."""
    position = _past_blanks(text, end)
    if position == len(text):
        return position
    if text[position] != ",":
        raise InvalidJSON(f"a comma was expected at character {position}")
    return _past_blanks(text, position + 1)


def dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:
        # Integers beyond 64 bits. Never NaN or Infinity: not JSON, and no
        # reader would take the document back.
        return json.dumps(
            value, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode()


def dumps_text(value: Any) -> str:
    return dumps(value).decode()


# JSONB keeps numbers as `numeric`, which prints 1e+16 as 10000000000000000: read
# back, a float written with an exponent would become an integer.
_POSITIVE_EXPONENT = b"e+"
_INT64_RANGE = range(-(2**63), 2**64)


def _jsonb_safe_numbers(value: Any) -> Any:
    """`value` with floats of 1e16 and above written out with a fractional part
    (JSONB keeps "10000000000000000.0" as written) and integers beyond 64 bits
    as raw fragments (orjson refuses them)."""
    if isinstance(value, float):
        if math.isfinite(value) and abs(value) >= 1e16:
            return orjson.Fragment(f"{int(value)}.0")
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value not in _INT64_RANGE:
        return orjson.Fragment(str(value))
    if isinstance(value, dict):
        return {key: _jsonb_safe_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_jsonb_safe_numbers(item) for item in value]
    return value


def dumps_for_jsonb(value: Any) -> str:
    """JSON text for a PostgreSQL JSONB value, such that every number reads back
    with its Python type (int or float) and exact value."""
    try:
        text = orjson.dumps(value)
    except TypeError:
        text = _POSITIVE_EXPONENT  # an integer beyond 64 bits: take the slow path
    if _POSITIVE_EXPONENT in text:
        text = orjson.dumps(_jsonb_safe_numbers(value))
    return text.decode()
