"""Pure rules for an incoming event document: validation, ``temp:`` removal,
assigned id and timestamp, and recognising a retry."""

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app import json_codec
from app.db.repository import NewEvent
from app.errors import FieldError, InvalidInput
from app.state import drop_temp_keys, find_nul_character, split_delta

MAX_EVENT_ID_LENGTH = 128
NUL_MESSAGE = "state cannot hold the NUL character (U+0000)"


@dataclass(frozen=True)
class PreparedEvent:
    """What the service stores for one append request."""

    document: dict[str, Any]
    partial: bool
    had_timestamp: bool
    record: NewEvent


def _field(document: dict[str, Any], camel: str, snake: str) -> tuple[str, Any]:
    """The key the client used (camelCase preferred) and its value."""
    if camel in document:
        return camel, document[camel]
    if snake in document:
        return snake, document[snake]
    return camel, None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check(document: Any) -> list[FieldError]:
    if not isinstance(document, dict):
        return [FieldError(["body"], "an event must be a JSON object")]
    errors: list[FieldError] = []
    event_id = document.get("id")
    if event_id is not None and not (
        isinstance(event_id, str) and 1 <= len(event_id) <= MAX_EVENT_ID_LENGTH
    ):
        errors.append(
            FieldError(["body", "id"], f"must be a string of 1 to {MAX_EVENT_ID_LENGTH} characters")
        )
    author = document.get("author")
    if not isinstance(author, str):
        errors.append(FieldError(["body", "author"], "is required and must be a string"))
    timestamp = document.get("timestamp")
    if timestamp is not None and not (_is_number(timestamp) and math.isfinite(timestamp)):
        errors.append(FieldError(["body", "timestamp"], "must be a number (epoch seconds)"))
    key, invocation_id = _field(document, "invocationId", "invocation_id")
    if invocation_id is not None and not isinstance(invocation_id, str):
        errors.append(FieldError(["body", key], "must be a string"))
    partial = document.get("partial")
    if partial is not None and not isinstance(partial, bool):
        errors.append(FieldError(["body", "partial"], "must be a boolean"))
    actions = document.get("actions")
    if actions is not None:
        if not isinstance(actions, dict):
            errors.append(FieldError(["body", "actions"], "must be an object"))
        else:
            key, delta = _field(actions, "stateDelta", "state_delta")
            if delta is not None and not isinstance(delta, dict):
                errors.append(FieldError(["body", "actions", key], "must be an object"))
            elif (nul_at := find_nul_character(delta)) is not None:
                errors.append(FieldError(["body", "actions", key, *nul_at], NUL_MESSAGE))
    return errors


def prepare_event(
    document: Any, *, now: Callable[[], float], new_id: Callable[[], str]
) -> PreparedEvent:
    """Validates the event and returns it as it will be stored.

    Raises InvalidInput listing every problem found.
    """
    errors = _check(document)
    if errors:
        raise InvalidInput(errors)
    stored = dict(document)
    delta: dict[str, Any] = {}
    actions = stored.get("actions")
    if isinstance(actions, dict):
        key, raw_delta = _field(actions, "stateDelta", "state_delta")
        if raw_delta:
            delta = drop_temp_keys(raw_delta)
            if len(delta) != len(raw_delta):
                stored["actions"] = {**actions, key: delta}
    had_timestamp = stored.get("timestamp") is not None
    if stored.get("id") is None:
        stored["id"] = new_id()
    if not had_timestamp:
        stored["timestamp"] = now()
    _, invocation_id = _field(stored, "invocationId", "invocation_id")
    record = NewEvent(
        id=stored["id"],
        invocation_id=invocation_id or "",
        author=stored["author"],
        timestamp=float(stored["timestamp"]),
        data=json_codec.dumps_text(stored),
        delta=split_delta(delta),
    )
    return PreparedEvent(stored, bool(stored.get("partial")), had_timestamp, record)


def is_same_event(stored: dict[str, Any], incoming: PreparedEvent) -> bool:
    """Whether a request repeats the stored event (a retry), ignoring the
    timestamp the server assigned when the request carried none."""
    candidate = incoming.document
    if not incoming.had_timestamp:
        candidate = {**candidate, "timestamp": stored.get("timestamp")}
    return stored == candidate
