"""Long-term memory: sessions ingested into a per-(app, user) searchable store,
as ADK's MemoryService does with `add_session_to_memory` and `search_memory`."""

from typing import Any

from app import json_codec
from app.config import RESPONSE_OVERHEAD_BYTES
from app.db import memory_repository, repository
from app.db.database import Database
from app.db.memory_repository import MemoryRecord
from app.db.repository import SessionKey
from app.errors import SessionNotFound
from app.limits import MAX_TIMESTAMP, MIN_TIMESTAMP, Limits
from app.memory import event_role, event_text

# Events read per batch: a long history is taken in bounded memory.
INGEST_BATCH_EVENTS = 500


def memory_record(session_id: str, document: dict[str, Any]) -> MemoryRecord | None:
    """What memory keeps of a stored event; None for an event without text.

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
        event_id=str(document["id"]),
        author=str(document.get("author", "")).replace("\x00", ""),
        role=event_role(document),
        timestamp=min(max(float(timestamp), MIN_TIMESTAMP), MAX_TIMESTAMP),
        text=text.replace("\x00", ""),
    )


class MemoryService:
    def __init__(self, db: Database, limits: Limits | None = None) -> None:
        self.db = db
        self.limits = limits or Limits()

    async def ingest_session(self, key: SessionKey) -> int:
        """Stores the text of the session's events not ingested yet; returns
        how many were added. Ingesting twice stores nothing twice."""
        added = 0
        async with self.db.write() as connection:
            # Locked for share until the memories are committed: a delete of
            # the session (with its memories) waits, or this finds no session.
            if await repository.read_session(connection, key, lock_for_share=True) is None:
                raise SessionNotFound(f"session {key.session_id!r} not found")
            after_seq = 0
            while True:
                batch = await repository.read_events_after(
                    connection, key, after_seq, INGEST_BATCH_EVENTS
                )
                if not batch:
                    break
                after_seq = batch[-1].seq
                records = [
                    record
                    for stored in batch
                    if (record := memory_record(key.session_id, json_codec.loads(stored.data)))
                    is not None
                ]
                added += await memory_repository.insert_memories(
                    connection, key.app_name, key.user_id, records
                )
        return added

    async def search(
        self, app_name: str, user_id: str, question: str, limit: int
    ) -> list[MemoryRecord]:
        budget = self.limits.max_response_bytes - RESPONSE_OVERHEAD_BYTES
        async with self.db.read() as connection:
            return await memory_repository.search(
                connection, app_name, user_id, question, limit, budget
            )

    async def forget_user(self, app_name: str, user_id: str) -> None:
        async with self.db.write() as connection:
            await memory_repository.delete_user_memories(connection, app_name, user_id)
