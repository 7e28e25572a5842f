"""Long-term memory: sessions ingested into a per-(app, user) searchable store,
as ADK's MemoryService does with `add_session_to_memory` and `search_memory`."""

from app import json_codec
from app.db import memory_repository, repository
from app.db.database import Database
from app.db.memory_repository import MemoryRecord
from app.db.repository import SessionKey
from app.errors import SessionNotFound
from app.memory import event_role, event_text


class MemoryService:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def ingest_session(self, key: SessionKey) -> int:
        """Stores the text of the session's events not ingested yet; returns
        how many were added. Ingesting twice stores nothing twice."""
        async with self.db.write() as connection:
            if await repository.read_session(connection, key) is None:
                raise SessionNotFound(f"session {key.session_id!r} not found")
            known = await memory_repository.stored_event_ids(connection, key)
            records = []
            for stored in await repository.read_all_events(connection, key):
                document = json_codec.loads(stored.data)
                text = event_text(document)
                if text is None or document["id"] in known:
                    continue
                records.append(
                    MemoryRecord(
                        session_id=key.session_id,
                        event_id=document["id"],
                        author=document["author"],
                        role=event_role(document),
                        timestamp=float(document["timestamp"]),
                        text=text,
                    )
                )
            await memory_repository.insert_memories(connection, key.app_name, key.user_id, records)
        return len(records)

    async def search(
        self, app_name: str, user_id: str, question: str, limit: int
    ) -> list[MemoryRecord]:
        async with self.db.read() as connection:
            return await memory_repository.search(connection, app_name, user_id, question, limit)

    async def forget_user(self, app_name: str, user_id: str) -> None:
        async with self.db.write() as connection:
            await memory_repository.delete_user_memories(connection, app_name, user_id)
