"""Opaque page tokens: base64url JSON naming what they page over."""

import base64
import binascii
from typing import Any

from app import json_codec
from app.errors import BadRequest


def encode_token(kind: str, position: list[Any]) -> str:
    raw = json_codec.dumps({"k": kind, "p": position})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str, kind: str) -> list[Any]:
    """The position a token holds; BadRequest when it is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        decoded = json_codec.loads(raw)
    except (binascii.Error, ValueError):
        raise BadRequest("pageToken is not a valid page token") from None
    if not isinstance(decoded, dict) or decoded.get("k") != kind:
        raise BadRequest("pageToken does not belong to this list")
    position = decoded.get("p")
    if not isinstance(position, list):
        raise BadRequest("pageToken is not a valid page token")
    return position
