"""The PostgreSQL storage of long-term memory (`MemoryStore`): memories per
(app, user), forgotten ids, keyword and vector candidates, and the embedding
backlog, as `sqlite_memory.py` is SQLite's."""

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import numpy as np
import numpy.typing as npt

from ..db.postgresql_connections import row_count
from ..sessions.domain import (
    EmbeddingBacklogCount,
    MemoryRecord,
    SessionKey,
    StoredEvent,
    TombstoneKind,
)
from ..sessions.postgresql_session_hooks import PostgresSessionHooks
from ..sessions.postgresql_statements import READ_SESSION_FOR_SHARE, session_values
from . import postgresql_statements as sql
from .candidates import gather_memory_candidates
from .domain import MemoryCandidates, VectorQuery
from .embedding import StoredVector
from .first_pass import KeptSignBits
from .search_text import QueryTerms, indexed_text_of, query_terms, search_text
from .store import SessionIngestion

# Rows per statement when memories are written or a session's events read
# for memory: a long history is taken in bounded memory.
MEMORY_BATCH = 500


class PostgresMemory(PostgresSessionHooks):
    async def _session_deleted(
        self,
        connection: asyncpg.Connection,
        key: SessionKey,
        kind: TombstoneKind,
        now: float,
        *,
        with_memories: bool,
    ) -> None:
        if with_memories:
            await delete_session_memories(connection, key)
        await super()._session_deleted(connection, key, kind, now, with_memories=with_memories)

    @asynccontextmanager
    async def _memory_write(self, app_name: str, user_id: str) -> AsyncIterator[asyncpg.Connection]:
        """A transaction holding the user's memory lock: an add racing a
        delete_memory cannot bring a deleted id back."""
        async with self._transaction() as connection:
            await lock_user_memory(connection, app_name, user_id)
            yield connection

    async def ingest_session(
        self, key: SessionKey, ingestion: SessionIngestion, now: float
    ) -> int | None:
        added = 0
        found = READ_SESSION_FOR_SHARE
        async with self._memory_write(key.app_name, key.user_id) as connection:
            # Locked for share until the memories are committed: a delete of
            # the session (with its memories) waits, or this finds no session.
            session = await connection.fetchrow(
                found.text, *found.arguments(session_values(key, now=now))
            )
            if session is None:
                return None
            async for batch in _session_events(connection, key):
                ingestion.note(batch)
            async for batch in _session_events(connection, key):
                added += await _insert_memories(
                    connection, key.app_name, key.user_id, ingestion.memories_of(batch)
                )
            await _delete_session_memories_of(connection, key, ingestion.undone_event_ids())
        return added

    async def remove_session_memories(
        self, app_name: str, user_id: str, session_id: str, event_ids: Sequence[str]
    ) -> None:
        key = SessionKey(app_name, user_id, session_id)
        async with self._memory_write(app_name, user_id) as connection:
            await _delete_session_memories_of(connection, key, event_ids)

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
        delete, unforget = sql.DELETE_MEMORIES_OF_IDS, sql.UNFORGET
        async with self._memory_write(app_name, user_id) as connection:
            for start in range(0, len(records), MEMORY_BATCH):
                batch = records[start : start + MEMORY_BATCH]
                ids = [record.event_id for record in batch]
                for session_id in sorted({record.session_id for record in batch}):
                    of_session = {
                        "app_name": app_name,
                        "user_id": user_id,
                        "session_id": session_id,
                        "event_ids": ids,
                    }
                    await connection.execute(delete.text, *delete.arguments(of_session))
                forgotten = {"app_name": app_name, "user_id": user_id, "memory_ids": ids}
                await connection.execute(unforget.text, *unforget.arguments(forgotten))
                await _insert_memories(connection, app_name, user_id, batch)

    async def forget_memory(self, app_name: str, user_id: str, memory_id: str) -> None:
        # As ADK's InMemoryMemoryService when it deleted something: the id is
        # remembered, so adding its session again does not bring it back.
        delete, remember = sql.DELETE_MEMORY, sql.REMEMBER_FORGOTTEN
        values = {"app_name": app_name, "user_id": user_id, "memory_id": memory_id}
        async with self._memory_write(app_name, user_id) as connection:
            deleted = await connection.execute(delete.text, *delete.arguments(values))
            if deleted != "DELETE 0":
                await connection.execute(remember.text, *remember.arguments(values))

    async def search_memories(
        self, app_name: str, user_id: str, question: str, limit: int, budget: int
    ) -> list[tuple[MemoryRecord, float]]:
        statement = sql.SEARCH_MEMORIES
        async with self._connection() as connection:
            terms = query_terms(question)
            if not terms:
                return []
            values = _term_values(app_name, user_id, terms, limit=limit, budget=budget)
            rows = await connection.fetch(statement.text, *statement.arguments(values))
        return [(_memory_record(row), row["share_of_terms"]) for row in rows]

    async def forget_user_memories(self, app_name: str, user_id: str) -> None:
        # Everything of the user's memory, the ids it forgot included.
        owner = {"app_name": app_name, "user_id": user_id}
        async with self._memory_write(app_name, user_id) as connection:
            for statement in (sql.DELETE_USER_MEMORIES, sql.DELETE_USER_FORGOTTEN):
                await connection.execute(statement.text, *statement.arguments(owner))

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
    ) -> list[tuple[int, MemoryRecord]]:
        statement = sql.READ_MEMORIES
        values = {"app_name": app_name, "user_id": user_id, "ids": list(ids), "budget": budget}
        async with self._connection() as connection:
            if not ids:
                return []
            rows = await connection.fetch(statement.text, *statement.arguments(values))
        return [(row["id"], _memory_record(row)) for row in rows]

    async def list_memory_ids(
        self, app_name: str, user_id: str, before: int | None, limit: int
    ) -> list[int]:
        statement = sql.LIST_MEMORY_IDS
        values = {"app_name": app_name, "user_id": user_id, "before": before, "limit": limit}
        async with self._connection() as connection:
            rows = await connection.fetch(statement.text, *statement.arguments(values))
        return [row["id"] for row in rows]

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
        statement = sql.CLAIM_MEMORIES_TO_EMBED
        values = {
            **_waiting_values(model, app_name, user_id),
            "max_tries": max_tries,
            "now": now,
            "until": until,
            "limit": limit,
        }
        async with self._connection() as connection:
            rows = await connection.fetch(statement.text, *statement.arguments(values))
        return sorted((row["id"], row["text"]) for row in rows)

    async def release_memories_to_embed(self, ids: Sequence[int]) -> None:
        statement = sql.RELEASE_MEMORIES_TO_EMBED
        if ids:
            async with self._connection() as connection:
                await connection.execute(statement.text, *statement.arguments({"ids": list(ids)}))

    async def refuse_memories_to_embed(self, ids: Sequence[int], retry_at: float) -> None:
        statement = sql.REFUSE_MEMORIES_TO_EMBED
        values = {"ids": list(ids), "retry_at": retry_at}
        if ids:
            async with self._connection() as connection:
                await connection.execute(statement.text, *statement.arguments(values))

    async def retry_refused_embeddings(
        self, model: str, app_name: str | None, user_id: str | None
    ) -> int:
        statement = sql.RETRY_REFUSED_EMBEDDINGS
        values = _waiting_values(model, app_name, user_id)
        async with self._connection() as connection:
            return row_count(await connection.execute(statement.text, *statement.arguments(values)))

    async def count_memories_to_embed(
        self, model: str, app_name: str | None, user_id: str | None, max_tries: int
    ) -> EmbeddingBacklogCount:
        statement = sql.COUNT_MEMORIES_TO_EMBED
        values = {**_waiting_values(model, app_name, user_id), "max_tries": max_tries}
        async with self._connection() as connection:
            row = await connection.fetchrow(statement.text, *statement.arguments(values))
        assert row is not None
        return EmbeddingBacklogCount(waiting=row["waiting"], given_up=row["given_up"])

    async def store_embeddings(
        self, model: str, vectors: Sequence[tuple[int, StoredVector]]
    ) -> None:
        if not vectors:
            return
        statement = sql.STORE_EMBEDDINGS
        values = {
            "model": model,
            "ids": [identifier for identifier, _ in vectors],
            "embeddings": [vector.components for _, vector in vectors],
            "bits": [_bit_string(vector.bits) for _, vector in vectors],
        }
        async with self._connection() as connection:
            await connection.execute(statement.text, *statement.arguments(values))


async def lock_user_memory(connection: asyncpg.Connection, app_name: str, user_id: str) -> None:
    """Serialises the writes of one user's memory until the transaction ends,
    so that an add racing a delete_memory cannot bring a deleted id back."""
    statement = sql.LOCK_USER_MEMORY
    await connection.execute(
        statement.text, *statement.arguments({"owner": f"{app_name}\x1f{user_id}"})
    )


async def delete_session_memories(connection: asyncpg.Connection, key: SessionKey) -> None:
    """The memories taken from a session, deleted with it (in the caller's
    transaction, which holds the session's row)."""
    statement = sql.DELETE_SESSION_MEMORIES
    await connection.execute(statement.text, *statement.arguments(session_values(key)))


async def _insert_memories(
    connection: asyncpg.Connection, app_name: str, user_id: str, records: Sequence[MemoryRecord]
) -> int:
    """Inserts the memories not stored yet and not forgotten; returns how many
    were new. The caller holds the user's memory lock."""
    if not records:
        return 0
    among, insert = sql.FORGOTTEN_AMONG, sql.INSERT_MEMORIES
    ids = sorted({record.event_id for record in records})
    asked = {"app_name": app_name, "user_id": user_id, "memory_ids": ids}
    forgotten = {
        row["memory_id"] for row in await connection.fetch(among.text, *among.arguments(asked))
    }
    kept = [record for record in records if record.event_id not in forgotten]
    if not kept:
        return 0
    indexed = [search_text(indexed_text_of(record)) for record in kept]
    values = {
        "app_name": app_name,
        "user_id": user_id,
        "session_ids": [record.session_id for record in kept],
        "event_ids": [record.event_id for record in kept],
        "authors": [record.author for record in kept],
        "roles": [record.role for record in kept],
        "timestamps": [record.timestamp for record in kept],
        "texts": [record.text for record in kept],
        "contents": [record.content for record in kept],
        "custom_metadata": [record.custom_metadata for record in kept],
        "search_words": [index.words for index in indexed],
        "search_grams": [index.grams for index in indexed],
        "embedding_models": [record.embedding_model for record in kept],
        "embeddings": [record.embedding for record in kept],
        "embedding_bits": [_bit_string(record.embedding_bits) for record in kept],
    }
    inserted = await connection.fetch(insert.text, *insert.arguments(values))
    return len(inserted)


def _memory_record(row: asyncpg.Record) -> MemoryRecord:
    """A memory from a row of a search's or a read's columns."""
    return MemoryRecord(
        row["session_id"],
        row["event_id"],
        row["author"],
        row["role"],
        row["timestamp"],
        row["text"],
        row["content"],
        row["custom_metadata"],
    )


def _term_values(app_name: str, user_id: str, terms: QueryTerms, **values: Any) -> dict[str, Any]:
    """A keyword statement's values: the question's terms, with the others given."""
    return {
        "app_name": app_name,
        "user_id": user_id,
        "words": list(terms.words),
        "grams": list(terms.grams),
        "prefixes": list(terms.prefixes),
        **values,
    }


def _waiting_values(model: str, app_name: str | None, user_id: str | None) -> dict[str, Any]:
    """The values naming the memories waiting for `model` (of one app, or one
    user, when given)."""
    return {"model": model, "app_name": app_name, "user_id": user_id}


def _bit_string(bits: bytes | None) -> asyncpg.BitString | None:
    return None if bits is None else asyncpg.BitString.frombytes(bits, len(bits) * 8)


async def _keyword_ids(
    connection: asyncpg.Connection, app_name: str, user_id: str, question: str, limit: int
) -> list[tuple[int, float]]:
    """Row ids of the best keyword matches, best first (as a search ranks),
    each with the share of the question's terms it holds (1: every term)."""
    terms = query_terms(question)
    if not terms or limit == 0:
        return []
    statement = sql.KEYWORD_MEMORY_IDS
    values = _term_values(app_name, user_id, terms, limit=limit)
    rows = await connection.fetch(statement.text, *statement.arguments(values))
    return [(row["id"], row["share_of_terms"]) for row in rows]


class _SignBits:
    """The user's sign bits as app.memory.first_pass reads them."""

    def __init__(
        self, connection: asyncpg.Connection, app_name: str, user_id: str, query: VectorQuery
    ) -> None:
        self.connection = connection
        self.user = {"app_name": app_name, "user_id": user_id, "model": query.model}
        self.length = len(query.bits)

    async def newest_row(self) -> int | None:
        statement = sql.NEWEST_MEMORY_ROW
        newest: int | None = await self.connection.fetchval(
            statement.text, *statement.arguments(self.user)
        )
        return newest

    async def rows_after(self, row: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
        statement = sql.MEMORY_SIGN_BITS
        values = {**self.user, "bit_count": self.length * 8, "after_id": row}
        found = await self.connection.fetchrow(statement.text, *statement.arguments(values))
        assert found is not None
        ids, bits = found["ids"], found["bits"]
        if ids is None:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.length), dtype=np.uint8)
        # varbit_send: the bit count (4 bytes), then the bits.
        rows = np.frombuffer(bits, dtype=np.uint8).reshape(-1, 4 + self.length)[:, 4:]
        return np.frombuffer(ids, dtype=">i8").astype(np.int64), rows


async def _nearest(
    connection: asyncpg.Connection, app_name: str, user_id: str, query: VectorQuery
) -> list[tuple[int, bytes]]:
    """The `query.keep` memories nearest by sign bits (Hamming distance, ties
    by row id), with their components."""
    kept = query.kept or KeptSignBits(kept_bytes=0)
    source = _SignBits(connection, app_name, user_id, query)
    ids = await kept.nearest(source, app_name, user_id, query.model, query.bits, query.keep)
    if not ids:
        return []
    statement = sql.MEMORY_COMPONENTS
    values = {**source.user, "ids": ids}
    rows = await connection.fetch(statement.text, *statement.arguments(values))
    components = {row["id"]: bytes(row["embedding"]) for row in rows}
    return [(identifier, components[identifier]) for identifier in ids if identifier in components]


async def _session_events(
    connection: asyncpg.Connection, key: SessionKey
) -> AsyncIterator[list[StoredEvent]]:
    """The session's events in order, MEMORY_BATCH at a time."""
    events = sql.EVENTS_AFTER
    after_seq = 0
    while rows := await connection.fetch(
        events.text,
        *events.arguments(session_values(key, after_seq=after_seq, limit=MEMORY_BATCH)),
    ):
        batch = [StoredEvent(row["seq"], row["data"]) for row in rows]
        after_seq = batch[-1].seq
        yield batch


async def _delete_session_memories_of(
    connection: asyncpg.Connection, key: SessionKey, event_ids: Sequence[str]
) -> None:
    delete = sql.DELETE_MEMORIES_OF_IDS
    for start in range(0, len(event_ids), MEMORY_BATCH):
        of_session = {
            "app_name": key.app_name,
            "user_id": key.user_id,
            "session_id": key.session_id,
            "event_ids": list(event_ids[start : start + MEMORY_BATCH]),
        }
        await connection.execute(delete.text, *delete.arguments(of_session))
