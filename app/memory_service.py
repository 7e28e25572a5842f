"""Long-term memory: a per-(app, user) searchable store, written as ADK's
BaseMemoryService writes it (a stored session, events, entries; delete one
memory, forget a user) and searched with `search_memory`."""

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from . import json_codec
from .config import RESPONSE_OVERHEAD_BYTES
from .db.replica import ReadRouting, Replica
from .db.store import Store
from .domain import MemoryRecord, SessionKey, StoredEvent
from .errors import SessionNotFound
from .limits import MAX_TIMESTAMP, MIN_TIMESTAMP, Limits
from .memory import event_memory_id, event_role, event_text


def memory_record(session_id: str, document: dict[str, Any]) -> MemoryRecord | None:
    """What memory keeps of an event: its text (searched) and its content as
    given (returned, every part); None for an event without text.

    Events stored before the value rules (app.json_rules) may hold NUL or a
    timestamp out of range: the NUL is dropped and the time clamped, so such
    an event cannot stop its session's ingestion.
    """
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


def _as_taken(document: dict[str, Any], now: float) -> dict[str, Any]:
    """The event with its id (named before the server's time is given to an
    event without a timestamp, so that sending it again names it the same)
    and a timestamp."""
    if document.get("id") and document.get("timestamp") is not None:
        return document
    taken = {**document, "id": event_memory_id(document)}
    if taken.get("timestamp") is None:
        taken["timestamp"] = now
    return taken


class MemoryService:
    def __init__(
        self,
        store: Store,
        limits: Limits | None = None,
        *,
        clock: Callable[[], float] = time.time,
        replica: Replica | None = None,
    ) -> None:
        """Searches go to `replica` when it may answer them (app.db.replica)."""
        self.store = store
        self.reads = ReadRouting(store, replica)
        self.limits = limits or Limits()
        self.clock = clock

    async def ingest_session(self, key: SessionKey) -> int:
        """Stores the text of the session's events not ingested yet; returns
        how many were added. Ingesting twice stores nothing twice."""

        def memories_of(batch: Sequence[StoredEvent]) -> list[MemoryRecord]:
            return [
                record
                for stored in batch
                if (record := memory_record(key.session_id, json_codec.loads(stored.data)))
                is not None
            ]

        added = await self.store.ingest_session(key, memories_of, self.clock())
        if added is None:
            raise SessionNotFound.of(key)
        return added

    async def add_events(
        self, app_name: str, user_id: str, session_id: str | None, events: Sequence[dict[str, Any]]
    ) -> int:
        """Takes the events' texts into memory (ADK's add_events_to_memory);
        returns how many were new. Events without a session share one."""
        now = self.clock()
        records = [
            record
            for document in events
            if (record := memory_record(session_id or "", _as_taken(document, now))) is not None
        ]
        return await self.store.add_memories(app_name, user_id, records)

    async def add_entries(
        self, app_name: str, user_id: str, entries: Sequence[tuple[dict[str, Any], float | None]]
    ) -> list[str]:
        """Writes memory entries directly (ADK's add_memory), each with its
        time (None: now); returns their ids in order."""
        now = self.clock()
        records = [entry_record(entry, now if at is None else at) for entry, at in entries]
        # The last of several entries sent with one id is the one kept.
        unique = list({record.event_id: record for record in records}.values())
        await self.store.replace_memories(app_name, user_id, unique)
        return [record.event_id for record in records]

    async def delete_memory(self, app_name: str, user_id: str, memory_id: str) -> None:
        """Deletes one memory (ADK's delete_memory); an unknown id is a no-op."""
        await self.store.forget_memory(app_name, user_id, memory_id)

    async def search(
        self, app_name: str, user_id: str, question: str, limit: int
    ) -> list[MemoryRecord]:
        budget = self.limits.max_response_bytes - RESPONSE_OVERHEAD_BYTES
        return await self.reads.read(
            lambda store: store.search_memories(app_name, user_id, question, limit, budget)
        )

    async def forget_user(self, app_name: str, user_id: str) -> None:
        await self.store.forget_user_memories(app_name, user_id)
