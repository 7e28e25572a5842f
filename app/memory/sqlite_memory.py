"""Long-term memory on SQLite (`MemoryStore`), with its SQL in
`sqlite_statements.py`. A deleted session's memories go with it when asked,
in the deleting transaction, through the sessions' hook
(app.sessions.sqlite_session_hooks)."""

from collections.abc import AsyncIterator, Sequence
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from ..sessions import sqlite_statements as session_sql
from ..sessions.domain import (
    EmbeddingBacklogCount,
    MemoryRecord,
    SessionKey,
    StoredEvent,
    TombstoneKind,
)
from ..sessions.sqlite_session_hooks import SqliteSessionHooks
from . import sqlite_statements as sql
from .candidates import gather_memory_candidates
from .domain import MemoryCandidates, VectorQuery
from .embedding import StoredVector
from .store import SessionIngestion

# Rows per statement when memories are written or a session's events read
# for memory: a long history is taken in bounded memory.
MEMORY_BATCH = 500

T = TypeVar("T")


def _batches(items: Sequence[T]) -> list[Sequence[T]]:
    return [items[start : start + MEMORY_BATCH] for start in range(0, len(items), MEMORY_BATCH)]


async def _session_events(
    connection: AsyncConnection, key: SessionKey
) -> AsyncIterator[list[StoredEvent]]:
    """The session's events in order, MEMORY_BATCH at a time."""
    after_seq = 0
    while batch := await session_sql.read_events_after(connection, key, after_seq, MEMORY_BATCH):
        after_seq = batch[-1].seq
        yield batch


class SqliteMemory(SqliteSessionHooks):
    async def ingest_session(
        self, key: SessionKey, ingestion: SessionIngestion, now: float
    ) -> int | None:
        added = 0
        async with self._write() as connection:
            # The write lock is held until the memories are committed: a
            # delete of the session (with its memories) waits.
            if await session_sql.read_session(connection, key, now) is None:
                return None
            async for batch in _session_events(connection, key):
                ingestion.note(batch)
            async for batch in _session_events(connection, key):
                added += await sql.insert_memories(
                    connection, key.app_name, key.user_id, ingestion.memories_of(batch)
                )
            for event_ids in _batches(ingestion.undone_event_ids()):
                await sql.delete_session_memories_of(connection, key, event_ids)
        return added

    async def remove_session_memories(
        self, app_name: str, user_id: str, session_id: str, event_ids: Sequence[str]
    ) -> None:
        key = SessionKey(app_name, user_id, session_id)
        async with self._write() as connection:
            for batch in _batches(event_ids):
                await sql.delete_session_memories_of(connection, key, batch)

    async def add_memories(
        self, app_name: str, user_id: str, records: Sequence[MemoryRecord]
    ) -> int:
        added = 0
        async with self._write() as connection:
            for batch in _batches(records):
                added += await sql.insert_memories(connection, app_name, user_id, batch)
        return added

    async def replace_memories(
        self, app_name: str, user_id: str, records: Sequence[MemoryRecord]
    ) -> None:
        async with self._write() as connection:
            for batch in _batches(records):
                await sql.replace_memories(connection, app_name, user_id, batch)

    async def forget_memory(self, app_name: str, user_id: str, memory_id: str) -> None:
        async with self._write() as connection:
            await sql.forget_memory(connection, app_name, user_id, memory_id)

    async def search_memories(
        self, app_name: str, user_id: str, question: str, limit: int, budget: int
    ) -> list[tuple[MemoryRecord, float]]:
        async with self._read() as connection:
            return await sql.search(connection, app_name, user_id, question, limit, budget)

    async def forget_user_memories(self, app_name: str, user_id: str) -> None:
        async with self._write() as connection:
            await sql.delete_user_memories(connection, app_name, user_id)

    async def memory_candidates(
        self,
        app_name: str,
        user_id: str,
        question: str,
        keyword_limit: int,
        query: VectorQuery | None,
    ) -> MemoryCandidates:
        return await gather_memory_candidates(
            self._read,
            sql.keyword_ids,
            sql.nearest,
            app_name,
            user_id,
            question,
            keyword_limit,
            query,
        )

    async def read_memories(
        self, app_name: str, user_id: str, ids: Sequence[int], budget: int
    ) -> list[tuple[int, MemoryRecord]]:
        async with self._read() as connection:
            return await sql.read_memories(connection, app_name, user_id, ids, budget)

    async def list_memory_ids(
        self, app_name: str, user_id: str, before: int | None, limit: int
    ) -> list[int]:
        async with self._read() as connection:
            return await sql.list_memory_ids(connection, app_name, user_id, before, limit)

    async def claim_memories_to_embed(
        self,
        model: str,
        limit: int,
        app_name: str | None,
        user_id: str | None,
        *,
        now: float,
        until: float,
        max_tries: int,
    ) -> list[tuple[int, str]]:
        async with self._write() as connection:
            return await sql.claim_memories_to_embed(
                connection,
                model,
                limit,
                app_name,
                user_id,
                now=now,
                until=until,
                max_tries=max_tries,
            )

    async def release_memories_to_embed(self, ids: Sequence[int]) -> None:
        if ids:
            async with self._write() as connection:
                await sql.release_memories_to_embed(connection, ids)

    async def refuse_memories_to_embed(self, ids: Sequence[int], retry_at: float) -> None:
        if ids:
            async with self._write() as connection:
                await sql.refuse_memories_to_embed(connection, ids, retry_at)

    async def retry_refused_embeddings(
        self, model: str, app_name: str | None, user_id: str | None
    ) -> int:
        async with self._write() as connection:
            return await sql.retry_refused_embeddings(connection, model, app_name, user_id)

    async def count_memories_to_embed(
        self, model: str, app_name: str | None, user_id: str | None, max_tries: int
    ) -> EmbeddingBacklogCount:
        async with self._read() as connection:
            return await sql.count_memories_to_embed(
                connection, model, app_name, user_id, max_tries
            )

    async def store_embeddings(
        self, model: str, vectors: Sequence[tuple[int, StoredVector]]
    ) -> None:
        async with self._write() as connection:
            await sql.store_embeddings(connection, model, vectors)

    async def _session_deleted(
        self,
        connection: AsyncConnection,
        key: SessionKey,
        kind: TombstoneKind,
        now: float,
        *,
        with_memories: bool,
    ) -> None:
        if with_memories:
            await sql.delete_session_memories(connection, key)
        await super()._session_deleted(connection, key, kind, now, with_memories=with_memories)
