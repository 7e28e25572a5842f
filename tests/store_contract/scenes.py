"""Small builders for the contract tests: keys, events, sessions, and the
outcome of a store call as a value."""

import json
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from session_state.sessions.domain import (
    NEVER_EXPIRES,
    Expiry,
    MemoryRecord,
    NewEvent,
    SessionKey,
    SharedScopes,
    StoredEvent,
)
from session_state.sessions.state import ScopedDelta, StateDict
from session_state.stores import Store

T = TypeVar("T")

NOW = 1_800_000_000.0
LIMIT = 1024 * 1024
APP = "contract"
# A shared scope's size: per key, its UTF-8 bytes, its value's compact JSON
# and 4 (quotes, colon, comma); a session's: its compact JSON (docs/design.md).
KEY_OVERHEAD = 4


def compact_json_bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def entry_bytes(name: str, value: Any) -> int:
    return len(name.encode()) + compact_json_bytes(value) + KEY_OVERHEAD


def key(session_id: str = "s1", user_id: str = "ada", app_name: str = APP) -> SessionKey:
    return SessionKey(app_name, user_id, session_id)


def event(
    event_id: str,
    *,
    session: StateDict | None = None,
    app: StateDict | None = None,
    user: StateDict | None = None,
    timestamp: float = NOW,
    text: str | None = None,
) -> NewEvent:
    delta = ScopedDelta(app or {}, user or {}, session or {})
    document = {
        "id": event_id,
        "invocationId": f"inv-{event_id}",
        "author": "planner",
        "timestamp": timestamp,
        "content": {"role": "model", "parts": [{"text": text or f"flight {event_id}"}]},
        "actions": {"stateDelta": {**(session or {})}},
    }
    return NewEvent(event_id, f"inv-{event_id}", "planner", timestamp, json.dumps(document), delta)


async def create(
    store: Store,
    session_key: SessionKey,
    *,
    session: StateDict | None = None,
    app: StateDict | None = None,
    user: StateDict | None = None,
    now: float = NOW,
    expiry: Expiry = NEVER_EXPIRES,
    limit: int = LIMIT,
) -> SharedScopes:
    created = await store.create_session(
        session_key,
        ScopedDelta(app or {}, user or {}, session or {}),
        now,
        expiry,
        limit,
        forget_expired_memories=False,
    )
    assert created is not None, f"{session_key} could not be created"
    return created


async def append(
    store: Store,
    session_key: SessionKey,
    *events: NewEvent,
    now: float = NOW,
    limit: int = LIMIT,
) -> int:
    """Appends the events one by one; the last revision."""
    revision = -1
    for one in events:
        revision = await store.append_event(session_key, one, None, limit, now)
    return revision


async def outcome_of(awaitable: Awaitable[T]) -> T | Exception:
    """The call's value, or the exception it raised."""
    try:
        return await awaitable
    except Exception as error:
        return error


class _Ingestion:
    """What memory keeps of stored events: one record per event, its text;
    no rewinds (app.memory.session_ingestion reads those)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id

    def note(self, events: Sequence[StoredEvent]) -> None:
        pass

    def memories_of(self, events: Sequence[StoredEvent]) -> list[MemoryRecord]:
        kept = []
        for stored in events:
            document: dict[str, Any] = json.loads(stored.data)
            text = document["content"]["parts"][0]["text"]
            kept.append(
                MemoryRecord(self.session_id, document["id"], "planner", "model", NOW, text)
            )
        return kept

    def undone_event_ids(self) -> list[str]:
        return []


def memories_of(session_id: str) -> _Ingestion:
    return _Ingestion(session_id)


def memory(
    event_id: str, text: str, session_id: str = "s1", timestamp: float = NOW
) -> MemoryRecord:
    return MemoryRecord(session_id, event_id, "planner", "model", timestamp, text)
