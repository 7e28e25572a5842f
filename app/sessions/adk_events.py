"""What ADK reads from a stored event, read from its JSON: the fields the
rewind and compaction rules act on. An event is stored as its client sent
it, so each field is looked up under ADK's JSON name (camelCase) and then
its field name (snake_case), as ADK's own models accept either."""

from dataclasses import dataclass
from typing import Any

from ..core import json_codec
from .event_contract import INVOCATION_ID, STATE_DELTA

Document = dict[str, Any]

ACTIONS = ("actions", "actions")
ARTIFACT_DELTA = ("artifactDelta", "artifact_delta")
REWIND_BEFORE = ("rewindBeforeInvocationId", "rewind_before_invocation_id")
COMPACTION = ("compaction", "compaction")
COMPACTED_CONTENT = ("compactedContent", "compacted_content")
START_TIMESTAMP = ("startTimestamp", "start_timestamp")
END_TIMESTAMP = ("endTimestamp", "end_timestamp")
ISOLATION_SCOPE = ("isolationScope", "isolation_scope")
ERROR_CODE = ("errorCode", "error_code")
FUNCTION_CALL = ("functionCall", "function_call")
FUNCTION_RESPONSE = ("functionResponse", "function_response")


def field(document: Any, names: tuple[str, str]) -> Any:
    """The value under the JSON name, else the field name; None if neither
    (or `document` is no object)."""
    if not isinstance(document, dict):
        return None
    camel, snake = names
    value = document.get(camel)
    return document.get(snake) if value is None else value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def invocation_id(document: Document) -> str | None:
    return _text(field(document, INVOCATION_ID))


def session_delta_source(document: Document) -> dict[str, Any]:
    """The event's whole state delta (every scope's keys), {} when none."""
    delta = field(field(document, ACTIONS), STATE_DELTA)
    return delta if isinstance(delta, dict) else {}


def rewind_target(document: Document) -> str | None:
    """The invocation a rewind marker rewinds to before; None for any other event."""
    return _text(field(field(document, ACTIONS), REWIND_BEFORE))


def isolation_scope(document: Document) -> str | None:
    return _text(field(document, ISOLATION_SCOPE))


def branch(document: Document) -> str | None:
    return _text(document.get("branch"))


def timestamp(document: Document) -> float:
    # Every stored event has one: the server assigns it when missing.
    return _number(document.get("timestamp")) or 0.0


def is_compaction(document: Document) -> bool:
    return field(field(document, ACTIONS), COMPACTION) is not None


def compaction_range(document: Document) -> tuple[float, float] | None:
    """The timestamps a compaction event summarises, as ADK counts them:
    only with its summary and both bounds; None otherwise."""
    compaction = field(field(document, ACTIONS), COMPACTION)
    if field(compaction, COMPACTED_CONTENT) is None:
        return None
    start = _number(field(compaction, START_TIMESTAMP))
    end = _number(field(compaction, END_TIMESTAMP))
    return None if start is None or end is None else (start, end)


def compaction_end(document: Document) -> float | None:
    """The end a compaction event names, whatever else it holds (the
    sliding window compactor reads just that)."""
    return _number(field(field(field(document, ACTIONS), COMPACTION), END_TIMESTAMP))


def acts(document: Document) -> bool:
    """Whether the event's actions do anything: any of them set to more
    than an empty value (a state or artifact change, a transfer, an
    escalation, a confirmation asked for, a rewind...)."""
    actions = field(document, ACTIONS)
    if not isinstance(actions, dict):
        return False
    return any(value not in (None, False, {}, [], "") for value in actions.values())


def error_code(document: Document) -> str | None:
    return _text(field(document, ERROR_CODE))


def _parts(document: Document) -> list[Any]:
    content = document.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return parts if isinstance(parts, list) else []


def function_call_ids(document: Document) -> set[str]:
    return _ids(document, FUNCTION_CALL)


def function_response_ids(document: Document) -> set[str]:
    return _ids(document, FUNCTION_RESPONSE)


def _ids(document: Document, kind: tuple[str, str]) -> set[str]:
    found = set()
    for part in _parts(document):
        identifier = _text(field(field(part, kind), ("id", "id")))
        if identifier is not None:
            found.add(identifier)
    return found


@dataclass(frozen=True)
class StoredText:
    """One stored event: its JSON text as stored and what it says."""

    text: str
    document: Document


def split_events(events_json: str) -> list[StoredText]:
    """The events of a session read (their JSON texts joined by commas),
    each with its text exactly as stored."""
    return [
        StoredText(text, document if isinstance(document, dict) else {})
        for text, document in json_codec.split_joined(events_json)
    ]
