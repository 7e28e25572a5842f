"""The PostgreSQL storage of long-term memory (`MemoryStore`): memories per
(app, user), forgotten ids, keyword and vector candidates, and the embedding
backlog, as `sqlite_memory.py` is SQLite's."""

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import asyncpg

from ..db.postgresql_connections import PostgresConnections, row_count
from ..sessions.domain import (
    EmbeddingBacklogCount,
    MemoryCandidates,
    MemoryRecord,
    SessionKey,
    StoredEvent,
    VectorQuery,
)
from ..sessions.postgresql_statements import READ_SESSION_FOR_SHARE
from . import postgresql_statements as sql
from .candidates import gather_memory_candidates
from .embedding import StoredVector
from .search_text import query_terms, search_text
from .store import MemoriesOf

# Rows per statement when memories are written or a session's events read
# for memory: a long history is taken in bounded memory.
MEMORY_BATCH = 500


class PostgresMemory(PostgresConnections):
    @asynccontextmanager
    async def _memory_write(self, app_name: str, user_id: str) -> AsyncIterator[asyncpg.Connection]:
        """A transaction holding the user's memory lock: an add racing a
        delete_memory cannot bring a deleted id back."""
        async with self._transaction() as connection:
            await lock_user_memory(connection, app_name, user_id)
            yield connection

    async def ingest_session(
        self, key: SessionKey, memories_of: MemoriesOf, now: float
    ) -> int | None:
        added = 0
        session = (key.app_name, key.user_id, key.session_id)
        async with self._memory_write(key.app_name, key.user_id) as connection:
            # Locked for share until the memories are committed: a delete of
            # the session (with its memories) waits, or this finds no session.
            if await connection.fetchrow(READ_SESSION_FOR_SHARE, *session, now) is None:
                return None
            after_seq = 0
            while rows := await connection.fetch(
                sql.EVENTS_AFTER, *session, after_seq, MEMORY_BATCH
            ):
                batch = [StoredEvent(seq, data) for seq, data in rows]
                after_seq = batch[-1].seq
                added += await _insert_memories(
                    connection, key.app_name, key.user_id, memories_of(batch)
                )
        return added

    async def add_memories(
        self, app_name: str, user_id: str, records: Sequence[MemoryRecord]
    ) -> int:
        added = 0
        async with self._memory_write(app_name, user_id) as connection:
            for start in range(0, len(records), MEMORY_BATCH):
                batch = records[start : start + MEMORY_BATCH]
                added += await _insert_memories(connection, app_name, user_id, batch)
        return added

    async def replace_memories(
        self, app_name: str, user_id: str, records: Sequence[MemoryRecord]
    ) -> None:
        # A delete and an insert: an id given again replaces its memory, and
        # a forgotten id may be written again.
        async with self._memory_write(app_name, user_id) as connection:
            for start in range(0, len(records), MEMORY_BATCH):
                batch = records[start : start + MEMORY_BATCH]
                ids = [record.event_id for record in batch]
                for session_id in sorted({record.session_id for record in batch}):
                    await connection.execute(
                        sql.DELETE_MEMORIES_OF_IDS, app_name, user_id, session_id, ids
                    )
                await connection.execute(sql.UNFORGET, app_name, user_id, ids)
                await _insert_memories(connection, app_name, user_id, batch)

    async def forget_memory(self, app_name: str, user_id: str, memory_id: str) -> None:
        # As ADK's InMemoryMemoryService when it deleted something: the id is
        # remembered, so adding its session again does not bring it back.
        async with self._memory_write(app_name, user_id) as connection:
            deleted = await connection.execute(sql.DELETE_MEMORY, app_name, user_id, memory_id)
            if deleted != "DELETE 0":
                await connection.execute(sql.REMEMBER_FORGOTTEN, app_name, user_id, memory_id)

    async def search_memories(
        self, app_name: str, user_id: str, question: str, limit: int, budget: int
    ) -> list[MemoryRecord]:
        async with self._connection() as connection:
            terms = query_terms(question)
            if not terms:
                return []
            rows = await connection.fetch(
                sql.SEARCH_MEMORIES,
                app_name,
                user_id,
                list(terms.words),
                list(terms.grams),
                list(terms.prefixes),
                limit,
                budget,
            )
        return [MemoryRecord(*row) for row in rows]

    async def forget_user_memories(self, app_name: str, user_id: str) -> None:
        # Everything of the user's memory, the ids it forgot included.
        async with self._memory_write(app_name, user_id) as connection:
            await connection.execute(sql.DELETE_USER_MEMORIES, app_name, user_id)
            await connection.execute(sql.DELETE_USER_FORGOTTEN, app_name, user_id)

    async def memory_candidates(
        self,
        app_name: str,
        user_id: str,
        question: str,
        keyword_limit: int,
        query: VectorQuery | None,
    ) -> MemoryCandidates:
        return await gather_memory_candidates(
            self._connection,
            _keyword_ids,
            _nearest,
            app_name,
            user_id,
            question,
            keyword_limit,
            query,
        )

    async def read_memories(
        self, app_name: str, user_id: str, ids: Sequence[int], budget: int
    ) -> list[MemoryRecord]:
        async with self._connection() as connection:
            if not ids:
                return []
            rows = await connection.fetch(sql.READ_MEMORIES, app_name, user_id, list(ids), budget)
        return [MemoryRecord(*row) for row in rows]

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
        async with self._connection() as connection:
            rows = await connection.fetch(
                sql.CLAIM_MEMORIES_TO_EMBED, model, app_name, user_id, max_tries, now, until, limit
            )
        return sorted((row[0], row[1]) for row in rows)

    async def release_memories_to_embed(self, ids: Sequence[int]) -> None:
        if ids:
            async with self._connection() as connection:
                await connection.execute(sql.RELEASE_MEMORIES_TO_EMBED, list(ids))

    async def refuse_memories_to_embed(self, ids: Sequence[int], retry_at: float) -> None:
        if ids:
            async with self._connection() as connection:
                await connection.execute(sql.REFUSE_MEMORIES_TO_EMBED, list(ids), retry_at)

    async def retry_refused_embeddings(
        self, model: str, app_name: str | None, user_id: str | None
    ) -> int:
        async with self._connection() as connection:
            return row_count(
                await connection.execute(sql.RETRY_REFUSED_EMBEDDINGS, model, app_name, user_id)
            )

    async def count_memories_to_embed(
        self, model: str, app_name: str | None, user_id: str | None, max_tries: int
    ) -> EmbeddingBacklogCount:
        async with self._connection() as connection:
            row = await connection.fetchrow(
                sql.COUNT_MEMORIES_TO_EMBED, model, app_name, user_id, max_tries
            )
        assert row is not None
        return EmbeddingBacklogCount(waiting=row[0], given_up=row[1])

    async def store_embeddings(
        self, model: str, vectors: Sequence[tuple[int, StoredVector]]
    ) -> None:
        if not vectors:
            return
        async with self._connection() as connection:
            await connection.execute(
                sql.STORE_EMBEDDINGS,
                model,
                [identifier for identifier, _ in vectors],
                [vector.components for _, vector in vectors],
                [_bit_string(vector.bits) for _, vector in vectors],
            )


async def lock_user_memory(connection: asyncpg.Connection, app_name: str, user_id: str) -> None:
    """Serialises the writes of one user's memory until the transaction ends,
    so that an add racing a delete_memory cannot bring a deleted id back."""
    await connection.execute(sql.LOCK_USER_MEMORY, f"{app_name}\x1f{user_id}")


async def delete_session_memories(connection: asyncpg.Connection, key: SessionKey) -> None:
    """The memories taken from a session, deleted with it (in the caller's
    transaction, which holds the session's row)."""
    await connection.execute(sql.DELETE_SESSION_MEMORIES, key.app_name, key.user_id, key.session_id)


async def _insert_memories(
    connection: asyncpg.Connection, app_name: str, user_id: str, records: Sequence[MemoryRecord]
) -> int:
    """Inserts the memories not stored yet and not forgotten; returns how many
    were new. The caller holds the user's memory lock."""
    if not records:
        return 0
    ids = sorted({record.event_id for record in records})
    forgotten = {
        row[0] for row in await connection.fetch(sql.FORGOTTEN_AMONG, app_name, user_id, ids)
    }
    kept = [record for record in records if record.event_id not in forgotten]
    if not kept:
        return 0
    indexed = [search_text(record.text) for record in kept]
    inserted = await connection.fetch(
        sql.INSERT_MEMORIES,
        app_name,
        user_id,
        [record.session_id for record in kept],
        [record.event_id for record in kept],
        [record.author for record in kept],
        [record.role for record in kept],
        [record.timestamp for record in kept],
        [record.text for record in kept],
        [record.content for record in kept],
        [record.custom_metadata for record in kept],
        [index.words for index in indexed],
        [index.grams for index in indexed],
        [record.embedding_model for record in kept],
        [record.embedding for record in kept],
        [_bit_string(record.embedding_bits) for record in kept],
    )
    return len(inserted)


def _bit_string(bits: bytes | None) -> asyncpg.BitString | None:
    return None if bits is None else asyncpg.BitString.frombytes(bits, len(bits) * 8)


async def _keyword_ids(
    connection: asyncpg.Connection, app_name: str, user_id: str, question: str, limit: int
) -> list[tuple[int, bool]]:
    """Row ids of the best keyword matches, best first (as a search ranks),
    each with whether it holds every term of the question."""
    terms = query_terms(question)
    if not terms or limit == 0:
        return []
    rows = await connection.fetch(
        sql.KEYWORD_MEMORY_IDS,
        app_name,
        user_id,
        list(terms.words),
        list(terms.grams),
        list(terms.prefixes),
        limit,
    )
    return [(row[0], row[1]) for row in rows]


async def _nearest(
    connection: asyncpg.Connection, app_name: str, user_id: str, query: VectorQuery
) -> list[tuple[int, bytes]]:
    rows = await connection.fetch(
        sql.NEAREST_MEMORIES, app_name, user_id, query.model, _bit_string(query.bits), query.keep
    )
    return [(row[0], bytes(row[1])) for row in rows]
