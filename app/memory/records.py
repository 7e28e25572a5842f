"""What memory keeps of an event or of an entry written directly."""

import uuid
from typing import Any

from ..core import json_codec
from ..core.limits import MAX_TIMESTAMP, MIN_TIMESTAMP
from ..sessions.domain import MemoryRecord
from .rules import event_memory_id, event_role, event_text, without_thoughts


def memory_record(session_id: str, document: dict[str, Any]) -> MemoryRecord | None:
    """What memory keeps of an event: its text (searched) and its content as
    given (returned), thought parts left out of both; None for an event
    without text.

    Events stored before the value rules (app.core.json_rules) may hold NUL or a
    timestamp out of range: the NUL is dropped and the time clamped, so such
    an event cannot stop its session's ingestion.
    """
    document = without_thoughts(document)
    text = event_text(document)
    if text is None:
        return None
    timestamp = document.get("timestamp")
    if not isinstance(timestamp, int | float) or timestamp != timestamp:
        timestamp = MIN_TIMESTAMP
    return MemoryRecord(
        session_id=session_id,
        event_id=event_memory_id(document),
        author=str(document.get("author") or "").replace("\x00", ""),
        role=event_role(document),
        timestamp=min(max(float(timestamp), MIN_TIMESTAMP), MAX_TIMESTAMP),
        text=text.replace("\x00", ""),
        content=json_codec.dumps_text(document["content"]),
    )


def entry_record(entry: dict[str, Any], timestamp: float) -> MemoryRecord:
    """What memory keeps of an entry written directly (ADK's add_memory):
    its id (or a new one), its content and custom metadata as given."""
    content = entry["content"]
    metadata = entry.get("customMetadata", entry.get("custom_metadata"))
    return MemoryRecord(
        session_id="",
        event_id=entry.get("id") or uuid.uuid4().hex,
        author=entry.get("author") or "",
        role=event_role(entry),
        timestamp=timestamp,
        text=event_text(entry) or "",
        content=json_codec.dumps_text(content),
        custom_metadata=None if metadata is None else json_codec.dumps_text(metadata),
    )


def as_taken(document: dict[str, Any], now: float) -> dict[str, Any]:
    """The event with its id (named before the server's time is given to an
    event without a timestamp, so that sending it again names it the same)
    and a timestamp."""
    if document.get("id") and document.get("timestamp") is not None:
        return document
    taken = {**document, "id": event_memory_id(document)}
    if taken.get("timestamp") is None:
        taken["timestamp"] = now
    return taken
