"""Opaque page tokens: base64url JSON naming what they page over.

A token names its kind of list and carries a digest of the list it was made
for (app, user, session, order), so a token of another list is refused; what
it decodes to is checked in full by the caller (types, ranges) before any of
it reaches the database.
"""

import base64
import binascii
import hashlib
from typing import Any

from . import json_codec
from .errors import BadRequest

# Above any token we issue: a cursor of two 128-character identifiers and a
# walk's horizon (limits.MAX_RUNNING_IN_HORIZON numbers).
MAX_TOKEN_LENGTH = 4096
INVALID_TOKEN = "pageToken is not a valid page token"
FOREIGN_TOKEN = "pageToken does not belong to this list"


def _digest(list_identity: tuple[str, ...]) -> str:
    joined = "\x1f".join(list_identity).encode("utf-8", "backslashreplace")
    return hashlib.sha256(joined).hexdigest()[:16]


def encode_token(kind: str, list_identity: tuple[str, ...], position: list[Any]) -> str:
    raw = json_codec.dumps({"k": kind, "l": _digest(list_identity), "p": position})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str, kind: str, list_identity: tuple[str, ...]) -> list[Any]:
    """The position a token holds; BadRequest when it is not one of ours or
    not for this list."""
    if len(token) > MAX_TOKEN_LENGTH:
        raise BadRequest(INVALID_TOKEN)
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        decoded = json_codec.loads(raw)
    except (binascii.Error, ValueError):
        raise BadRequest(INVALID_TOKEN) from None
    if not isinstance(decoded, dict) or not isinstance(decoded.get("p"), list):
        raise BadRequest(INVALID_TOKEN)
    if decoded.get("k") != kind or decoded.get("l") != _digest(list_identity):
        raise BadRequest(FOREIGN_TOKEN)
    position: list[Any] = decoded["p"]
    return position
