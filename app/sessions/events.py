"""Pure rules for an incoming event document: validation, ``temp:`` removal,
assigned id and timestamp, and recognising a retry."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core import json_codec
from ..core.end_user_tokens import refuse_app_state_writes
from ..core.errors import EventTooLarge, FieldError, InvalidInput
from ..core.limits import Limits
from ..http.wire import UNKNOWN_FIELD_MESSAGE
from .domain import NewEvent
from .event_contract import (
    AUTHOR_MESSAGE,
    BOOLEAN_MESSAGE,
    ID_MAX_LENGTH,
    ID_MESSAGE,
    ID_MIN_LENGTH,
    INVOCATION_ID,
    MAX_BATCH_EVENTS,
    NOT_AN_OBJECT_MESSAGE,
    OBJECT_MESSAGE,
    STATE_DELTA,
    STRING_MESSAGE,
    TIMESTAMP_MAXIMUM,
    TIMESTAMP_MESSAGE,
    TIMESTAMP_MINIMUM,
)
from .state import drop_temp_keys, find_refused_entry, split_delta


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


def is_valid_timestamp(value: Any) -> bool:
    return _is_number(value) and TIMESTAMP_MINIMUM <= value <= TIMESTAMP_MAXIMUM


def _check(document: Any, limits: Limits) -> list[FieldError]:
    if not isinstance(document, dict):
        return [FieldError(["body"], NOT_AN_OBJECT_MESSAGE)]
    errors: list[FieldError] = []
    event_id = document.get("id")
    if event_id is not None and not (
        isinstance(event_id, str) and ID_MIN_LENGTH <= len(event_id) <= ID_MAX_LENGTH
    ):
        errors.append(FieldError(["body", "id"], ID_MESSAGE))
    author = document.get("author")
    if not isinstance(author, str):
        errors.append(FieldError(["body", "author"], AUTHOR_MESSAGE))
    timestamp = document.get("timestamp")
    if timestamp is not None and not is_valid_timestamp(timestamp):
        errors.append(FieldError(["body", "timestamp"], TIMESTAMP_MESSAGE))
    key, invocation_id = _field(document, *INVOCATION_ID)
    if invocation_id is not None and not isinstance(invocation_id, str):
        errors.append(FieldError(["body", key], STRING_MESSAGE))
    partial = document.get("partial")
    if partial is not None and not isinstance(partial, bool):
        errors.append(FieldError(["body", "partial"], BOOLEAN_MESSAGE))
    actions = document.get("actions")
    if actions is not None:
        if not isinstance(actions, dict):
            errors.append(FieldError(["body", "actions"], OBJECT_MESSAGE))
        else:
            key, delta = _field(actions, *STATE_DELTA)
            if delta is not None and not isinstance(delta, dict):
                errors.append(FieldError(["body", "actions", key], OBJECT_MESSAGE))
            elif delta is not None and (long_key := find_refused_entry(delta, limits)) is not None:
                errors.append(long_key.under("body", "actions", key))
    return errors


def prepare_event(
    document: Any, limits: Limits, *, now: Callable[[], float], new_id: Callable[[], str]
) -> PreparedEvent:
    """Validates the event and returns it as it will be stored.

    Raises InvalidInput listing every problem found, EventTooLarge when its
    JSON is larger than the limit. Its values were checked when the body was
    read (app.core.json_rules).
    """
    errors = _check(document, limits)
    if errors:
        raise InvalidInput(errors)
    stored = dict(document)
    delta: dict[str, Any] = {}
    actions = stored.get("actions")
    if isinstance(actions, dict):
        key, raw_delta = _field(actions, *STATE_DELTA)
        if raw_delta:
            delta = drop_temp_keys(raw_delta)
            if len(delta) != len(raw_delta):
                stored["actions"] = {**actions, key: delta}
    had_timestamp = stored.get("timestamp") is not None
    if stored.get("id") is None:
        stored["id"] = new_id()
    if not had_timestamp:
        stored["timestamp"] = now()
    _, invocation_id = _field(stored, *INVOCATION_ID)
    encoded = json_codec.dumps(stored)
    if len(encoded) > limits.max_event_bytes:
        raise EventTooLarge(
            f"the event is {len(encoded)} bytes as JSON, above the limit of "
            f"{limits.max_event_bytes} (SESSION_STATE_MAX_EVENT_BYTES)"
        )
    scoped = split_delta(delta)
    refuse_app_state_writes(scoped.app)
    record = NewEvent(
        id=stored["id"],
        invocation_id=invocation_id or "",
        author=stored["author"],
        timestamp=float(stored["timestamp"]),
        data=encoded.decode(),
        delta=scoped,
    )
    return PreparedEvent(stored, bool(stored.get("partial")), had_timestamp, record)


BATCH_FIELD = "events"


def prepare_batch(
    body: Any, limits: Limits, *, now: Callable[[], float], new_id: Callable[[], str]
) -> list[PreparedEvent]:
    """Validates a batch body (`{"events": [event, ...]}`) and returns its
    events as they will be stored, in order.

    Raises InvalidInput listing every problem found (located at
    body.events.<index>), EventTooLarge for an event past the limit. A batch
    stores every event or none, so partial events (never stored) and an id
    given twice are refused rather than skipped.
    """
    if not isinstance(body, dict) or not isinstance(body.get(BATCH_FIELD), list):
        raise InvalidInput([FieldError(["body", BATCH_FIELD], "must be an array of events")])
    unknown = sorted(set(body) - {BATCH_FIELD})
    if unknown:
        # The wrapper is ours, not ADK's: a field it does not define is refused.
        raise InvalidInput([FieldError(["body", name], UNKNOWN_FIELD_MESSAGE) for name in unknown])
    documents: list[Any] = body[BATCH_FIELD]
    if not 1 <= len(documents) <= MAX_BATCH_EVENTS:
        raise InvalidInput(
            [FieldError(["body", BATCH_FIELD], f"must hold 1 to {MAX_BATCH_EVENTS} events")]
        )
    prepared: list[PreparedEvent] = []
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, document in enumerate(documents):
        where: list[str | int] = ["body", BATCH_FIELD, index]
        try:
            event = prepare_event(document, limits, now=now, new_id=new_id)
        except InvalidInput as invalid:  # located from the body of one event: re-rooted
            errors.extend(
                FieldError([*where, *error.loc[1:]], error.msg) for error in invalid.errors
            )
            continue
        except EventTooLarge as too_large:
            raise EventTooLarge(f"{BATCH_FIELD}[{index}]: {too_large.detail}") from None
        if event.partial:
            errors.append(FieldError([*where, "partial"], "partial events are not stored"))
        if event.record.id in seen:
            errors.append(FieldError([*where, "id"], "is given twice in the batch"))
        seen.add(event.record.id)
        prepared.append(event)
    if errors:
        raise InvalidInput(errors)
    return prepared


def restored_event(document: Any, limits: Limits) -> NewEvent:
    """An event as a dump holds it (stored before: its id and timestamp set,
    no temp: keys), checked as an append checks it; InvalidInput if not."""
    errors = _check(document, limits)
    if not errors and document.get("id") is None:
        errors.append(FieldError(["body", "id"], "a stored event has an id"))
    if not errors and document.get("timestamp") is None:
        errors.append(FieldError(["body", "timestamp"], "a stored event has a timestamp"))
    if errors:
        raise InvalidInput(errors)
    _, invocation_id = _field(document, *INVOCATION_ID)
    return NewEvent(
        id=document["id"],
        invocation_id=invocation_id or "",
        author=document["author"],
        timestamp=float(document["timestamp"]),
        data=json_codec.dumps_text(document),
        delta=split_delta({}),
    )


def is_same_event(stored: dict[str, Any], incoming: PreparedEvent) -> bool:
    """Whether a request repeats the stored event (a retry), ignoring the
    timestamp the server assigned when the request carried none."""
    candidate = incoming.document
    if not incoming.had_timestamp:
        candidate = {**candidate, "timestamp": stored.get("timestamp")}
    return stored == candidate


def session_delta_of(stored: dict[str, Any]) -> dict[str, Any]:
    """The session-scope changes a stored event made: its delta's keys
    without a scope prefix (``temp:`` keys were never stored)."""
    actions = stored.get("actions")
    if not isinstance(actions, dict):
        return {}
    _, delta = _field(actions, *STATE_DELTA)
    return split_delta(delta).session if isinstance(delta, dict) else {}
