"""What ADK reads from a stored event, read from its JSON: the fields the
rewind and compaction rules act on. An event is stored as its client sent
it, so each field is looked up under ADK's JSON name (camelCase) and then
its field name (snake_case), as ADK's own models accept either."""

from dataclasses import dataclass
from typing import Any

from ..core import json_codec
from .event_contract import INVOCATION_ID, STATE_DELTA

Document = dict[str, Any]
Interval = tuple[float, float]

ACTIONS = ("actions", "actions")
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
    value = document.get(names[0])
    return document.get(names[1]) if value is None else value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _does_nothing(value: Any) -> bool:
    """An action's value that asks nothing: ADK writes its empty defaults."""
    if value is None or value is False:
        return True
    return not value and type(value) in (dict, list, str)


def invocation_id(document: Document) -> str | None:
    return _text(field(document, INVOCATION_ID))


def state_delta(document: Document) -> dict[str, Any]:
    """The event's whole state delta (every scope's keys), {} when none."""
    delta = field(field(document, ACTIONS), STATE_DELTA)
    return delta if isinstance(delta, dict) else {}


@dataclass(frozen=True, slots=True)
class Facts:
    """What the compaction rules read of one event."""

    invocation: str | None
    # The invocation a rewind marker rewinds to before; None for other events.
    rewind_target: str | None
    timestamp: float
    branch: str | None
    scoped: bool
    is_compaction: bool
    # A compaction's range as ADK counts it (with its summary and both
    # bounds), and the end it names whatever else it holds.
    compaction_range: Interval | None
    compaction_end: float | None
    # Whether its actions do anything (a state or artifact change, a
    # transfer, a rewind, a confirmation asked for...) or it carries an
    # error code: ADK reads such events for more than the prompt.
    acts: bool


_NO_ACTIONS: dict[str, Any] = {}


def facts(document: Document) -> Facts:
    actions = field(document, ACTIONS)
    if not isinstance(actions, dict):
        actions = _NO_ACTIONS
    compaction = field(actions, COMPACTION)
    start = end = None
    with_summary = False
    if compaction is not None:
        end = _number(field(compaction, END_TIMESTAMP))
        start = _number(field(compaction, START_TIMESTAMP))
        with_summary = field(compaction, COMPACTED_CONTENT) is not None
    return Facts(
        invocation=invocation_id(document),
        rewind_target=_text(field(actions, REWIND_BEFORE)) if actions else None,
        # Every stored event has one: the server assigns it when missing.
        timestamp=_number(document.get("timestamp")) or 0.0,
        branch=_text(document.get("branch")),
        scoped=_text(field(document, ISOLATION_SCOPE)) is not None,
        is_compaction=compaction is not None,
        compaction_range=(start, end)
        if with_summary and start is not None and end is not None
        else None,
        compaction_end=end,
        acts=not all(map(_does_nothing, actions.values()))
        or _text(field(document, ERROR_CODE)) is not None,
    )


def function_call_ids(document: Document) -> set[str]:
    return _ids(document, FUNCTION_CALL)


def function_response_ids(document: Document) -> set[str]:
    return _ids(document, FUNCTION_RESPONSE)


def _ids(document: Document, kind: tuple[str, str]) -> set[str]:
    content = document.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    found = set()
    for part in parts if isinstance(parts, list) else []:
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
