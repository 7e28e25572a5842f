"""The PostgreSQL store's memory writes and search, on a connection inside
a transaction the store owns (`PostgresStore`'s memory methods), as
`memory_repository.py` is the SQLite store's."""

from collections.abc import Sequence

import asyncpg
import numpy as np
import numpy.typing as npt

from ..sessions import postgresql_statements as sql
from ..sessions.domain import EmbeddingBacklogCount, MemoryRecord, VectorQuery
from .embedding import StoredVector
from .first_pass import KeptSignBits
from .search_text import query_terms, search_text


async def lock_user_memory(connection: asyncpg.Connection, app_name: str, user_id: str) -> None:
    """Serialises the writes of one user's memory until the transaction ends,
    so that an add racing a delete_memory cannot bring a deleted id back."""
    await connection.execute(sql.LOCK_USER_MEMORY, f"{app_name}\x1f{user_id}")


async def insert_memories(
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


async def replace_memories(
    connection: asyncpg.Connection, app_name: str, user_id: str, records: Sequence[MemoryRecord]
) -> None:
    """A delete and an insert: an id given again replaces its memory, and a
    forgotten id may be written again. The caller holds the memory lock."""
    ids = [record.event_id for record in records]
    for session_id in sorted({record.session_id for record in records}):
        await connection.execute(sql.DELETE_MEMORIES_OF_IDS, app_name, user_id, session_id, ids)
    await connection.execute(sql.UNFORGET, app_name, user_id, ids)
    await insert_memories(connection, app_name, user_id, records)


async def forget_memory(
    connection: asyncpg.Connection, app_name: str, user_id: str, memory_id: str
) -> None:
    """As ADK's InMemoryMemoryService when it deleted something: the id is
    remembered, so adding its session again does not bring it back."""
    deleted = await connection.execute(sql.DELETE_MEMORY, app_name, user_id, memory_id)
    if deleted != "DELETE 0":
        await connection.execute(sql.REMEMBER_FORGOTTEN, app_name, user_id, memory_id)


async def search(
    connection: asyncpg.Connection,
    app_name: str,
    user_id: str,
    question: str,
    limit: int,
    budget: int,
) -> list[MemoryRecord]:
    """The best matches, at most `limit` and about `budget` bytes of text."""
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


async def delete_user_memories(connection: asyncpg.Connection, app_name: str, user_id: str) -> None:
    """Everything of the user's memory, the ids it forgot included."""
    await connection.execute(sql.DELETE_USER_MEMORIES, app_name, user_id)
    await connection.execute(sql.DELETE_USER_FORGOTTEN, app_name, user_id)


def _bit_string(bits: bytes | None) -> asyncpg.BitString | None:
    return None if bits is None else asyncpg.BitString.frombytes(bits, len(bits) * 8)


async def keyword_ids(
    connection: asyncpg.Connection, app_name: str, user_id: str, question: str, limit: int
) -> list[tuple[int, float]]:
    """Row ids of the best keyword matches, best first (as `search` ranks),
    each with the share of the question's terms it holds (1: every term)."""
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


class _SignBits:
    def __init__(
        self, connection: asyncpg.Connection, app_name: str, user_id: str, query: VectorQuery
    ) -> None:
        self.connection = connection
        self.user = (app_name, user_id, query.model)
        self.length = len(query.bits)

    async def newest_row(self) -> int | None:
        newest: int | None = await self.connection.fetchval(sql.NEWEST_MEMORY_ROW, *self.user)
        return newest

    async def rows_after(self, row: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
        ids, bits = await self.connection.fetchrow(
            sql.MEMORY_SIGN_BITS, *self.user, self.length * 8, row
        )
        if ids is None:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.length), dtype=np.uint8)
        # varbit_send: the bit count (4 bytes), then the bits.
        rows = np.frombuffer(bits, dtype=np.uint8).reshape(-1, 4 + self.length)[:, 4:]
        return np.frombuffer(ids, dtype=">i8").astype(np.int64), rows


async def nearest(
    connection: asyncpg.Connection, app_name: str, user_id: str, query: VectorQuery
) -> list[tuple[int, bytes]]:
    """The `query.keep` memories nearest by sign bits (Hamming distance, ties
    by row id), with their components."""
    kept = query.kept or KeptSignBits(kept_bytes=0)
    source = _SignBits(connection, app_name, user_id, query)
    ids = await kept.nearest(source, app_name, user_id, query.model, query.bits, query.keep)
    if not ids:
        return []
    rows = await connection.fetch(sql.MEMORY_COMPONENTS, *source.user, ids)
    components = {row[0]: bytes(row[1]) for row in rows}
    return [(identifier, components[identifier]) for identifier in ids if identifier in components]


async def read_memories(
    connection: asyncpg.Connection, app_name: str, user_id: str, ids: Sequence[int], budget: int
) -> list[MemoryRecord]:
    if not ids:
        return []
    rows = await connection.fetch(sql.READ_MEMORIES, app_name, user_id, list(ids), budget)
    return [MemoryRecord(*row) for row in rows]


async def claim_memories_to_embed(
    connection: asyncpg.Connection,
    model: str,
    limit: int,
    app_name: str | None,
    user_id: str | None,
    *,
    now: float,
    until: float,
    max_tries: int,
) -> list[tuple[int, str]]:
    rows = await connection.fetch(
        sql.CLAIM_MEMORIES_TO_EMBED, model, app_name, user_id, max_tries, now, until, limit
    )
    return sorted((row[0], row[1]) for row in rows)


async def release_memories_to_embed(connection: asyncpg.Connection, ids: Sequence[int]) -> None:
    await connection.execute(sql.RELEASE_MEMORIES_TO_EMBED, list(ids))


async def refuse_memories_to_embed(
    connection: asyncpg.Connection, ids: Sequence[int], retry_at: float
) -> None:
    await connection.execute(sql.REFUSE_MEMORIES_TO_EMBED, list(ids), retry_at)


async def retry_refused_embeddings(
    connection: asyncpg.Connection, model: str, app_name: str | None, user_id: str | None
) -> int:
    status: str = await connection.execute(sql.RETRY_REFUSED_EMBEDDINGS, model, app_name, user_id)
    return int(status.rsplit(" ", 1)[1])


async def count_memories_to_embed(
    connection: asyncpg.Connection,
    model: str,
    app_name: str | None,
    user_id: str | None,
    max_tries: int,
) -> EmbeddingBacklogCount:
    row = await connection.fetchrow(
        sql.COUNT_MEMORIES_TO_EMBED, model, app_name, user_id, max_tries
    )
    assert row is not None
    return EmbeddingBacklogCount(waiting=row[0], given_up=row[1])


async def store_embeddings(
    connection: asyncpg.Connection, model: str, vectors: Sequence[tuple[int, StoredVector]]
) -> None:
    if not vectors:
        return
    await connection.execute(
        sql.STORE_EMBEDDINGS,
        model,
        [identifier for identifier, _ in vectors],
        [vector.components for _, vector in vectors],
        [_bit_string(vector.bits) for _, vector in vectors],
    )
