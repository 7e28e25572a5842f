"""JSON encoding: orjson for speed, the standard library where orjson refuses.

orjson rejects integers beyond 64 bits; the standard library keeps them, so a
client's document is never refused or altered for that reason.
"""

import json
from typing import Any

import orjson


class InvalidJSON(ValueError):
    """The bytes are not one JSON document (NaN and Infinity included)."""


def _refuse_constant(name: str) -> Any:
    raise InvalidJSON(f"{name} is not valid JSON")


def loads(data: bytes | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(data, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:
        raise InvalidJSON(str(error)) from None


def dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def dumps_text(value: Any) -> str:
    return dumps(value).decode()
