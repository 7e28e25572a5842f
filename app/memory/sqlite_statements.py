"""The SQL of long-term memory on SQLite (`SqliteMemory`, `sqlite_memory.py`;
PostgreSQL's is in `postgresql_memory.py`). Functions run on a connection
inside a transaction that the caller owns; none of them commits.

Full-text search over the searchable form of the text (app.memory.search_text)
with FTS5 and bm25, ranked as on PostgreSQL: by how many of the question's
terms a memory holds first, then by that score, then the newest. Every write
runs in a transaction that holds the database's write lock (`engine.py`), so
one user's memory writes are serialised, as the PostgreSQL store's advisory
lock serialises them."""

import functools
import json
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from sqlalchemy import (
    ColumnElement,
    TextClause,
    bindparam,
    delete,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from ..sessions.domain import EmbeddingBacklogCount, MemoryRecord, SessionKey
from ..sessions.tables import forgotten_memories, memories
from .domain import VectorQuery
from .embedding import StoredVector
from .first_pass import KeptSignBits
from .rules import KEYWORD_HITS_PER_TERM, fts5_queries
from .search_sql import TAKE_WHAT_FITS
from .search_text import indexed_text_of, query_terms, search_text


async def insert_memories(
    connection: AsyncConnection, app_name: str, user_id: str, records: Sequence[MemoryRecord]
) -> int:
    """Inserts the memories not stored yet and not forgotten (delete_memory);
    returns how many were new."""
    forgotten = await _forgotten_among(connection, app_name, user_id, records)
    records = [record for record in records if record.event_id not in forgotten]
    if not records:
        return 0
    # An event already taken (by an earlier or a concurrent ingestion) is
    # skipped by the unique index, not by a list of known ids in memory.
    added = 0
    for first in range(0, len(records), _ROWS_PER_INSERT):
        chunk = records[first : first + _ROWS_PER_INSERT]
        values: list[object] = []
        for record in chunk:
            indexed = search_text(indexed_text_of(record))
            values += (
                app_name,
                user_id,
                record.session_id,
                record.event_id,
                record.author,
                record.role,
                record.timestamp,
                record.text,
                record.content,
                record.custom_metadata,
                record.embedding_model,
                record.embedding,
                record.embedding_bits,
                indexed.words,
                indexed.grams,
            )
        result = await connection.exec_driver_sql(_insert_rows(len(chunk)), tuple(values))
        added += len(result.all())
    return added


# One multi-row INSERT of plain parameters: SQLAlchemy's insert of the same
# rows spends much of a batch on each row's parameters, and executemany of a
# one-row INSERT runs a statement per row in SQLite, each through the
# full-text trigger (docs/performance.md, "SQLite ingest, fourth round").
_INSERTED_COLUMNS = (
    "app_name, user_id, session_id, event_id, author, role, timestamp, text, content, "
    "custom_metadata, embedding_model, embedding, embedding_bits, search_words, search_grams"
)
# 15 parameters a row, within SQLite's 32,766 a statement.
_ROWS_PER_INSERT = 2_000


@functools.lru_cache(maxsize=16)  # a full batch and the last, mostly
def _insert_rows(count: int) -> str:
    row = "(" + ", ".join("?" * len(_INSERTED_COLUMNS.split(","))) + ")"
    return (
        f"INSERT INTO memories ({_INSERTED_COLUMNS}) VALUES {', '.join([row] * count)}"
        " ON CONFLICT (app_name, user_id, session_id, event_id) DO NOTHING RETURNING id"
    )


async def _forgotten_among(
    connection: AsyncConnection, app_name: str, user_id: str, records: Sequence[MemoryRecord]
) -> set[str]:
    if not records:
        return set()
    result = await connection.execute(
        select(forgotten_memories.c.memory_id).where(
            forgotten_memories.c.app_name == app_name,
            forgotten_memories.c.user_id == user_id,
            forgotten_memories.c.memory_id.in_({record.event_id for record in records}),
        )
    )
    return set(result.scalars())


async def delete_session_memories_of(
    connection: AsyncConnection, key: SessionKey, event_ids: Sequence[str]
) -> None:
    """Deletes the session's memories of these events (not forgotten: the
    ids may be taken again)."""
    await connection.execute(
        delete(memories).where(
            memories.c.app_name == key.app_name,
            memories.c.user_id == key.user_id,
            memories.c.session_id == key.session_id,
            memories.c.event_id.in_(event_ids),
        )
    )


async def replace_memories(
    connection: AsyncConnection, app_name: str, user_id: str, records: Sequence[MemoryRecord]
) -> None:
    """Stores memories written directly (add_memory): an id given again
    replaces its memory, and an id deleted before may be written again. A
    delete and an insert, not an UPDATE: SQLite's full-text index follows
    inserts and deletes only."""
    ids = [record.event_id for record in records]
    for session_id in {record.session_id for record in records}:
        await connection.execute(
            delete(memories).where(
                memories.c.app_name == app_name,
                memories.c.user_id == user_id,
                memories.c.session_id == session_id,
                memories.c.event_id.in_(ids),
            )
        )
    await connection.execute(
        delete(forgotten_memories).where(
            forgotten_memories.c.app_name == app_name,
            forgotten_memories.c.user_id == user_id,
            forgotten_memories.c.memory_id.in_(ids),
        )
    )
    await insert_memories(connection, app_name, user_id, records)


async def forget_memory(
    connection: AsyncConnection, app_name: str, user_id: str, memory_id: str
) -> bool:
    """Deletes the user's memories of that id (one per session that holds it)
    and, as ADK's InMemoryMemoryService does when it deleted something,
    remembers the id so that adding its session again does not bring it
    back."""
    result = await connection.execute(
        delete(memories).where(
            memories.c.app_name == app_name,
            memories.c.user_id == user_id,
            memories.c.event_id == memory_id,
        )
    )
    if result.rowcount == 0:
        return False
    await connection.execute(
        sqlite_insert(forgotten_memories)
        .values(app_name=app_name, user_id=user_id, memory_id=memory_id)
        .on_conflict_do_nothing()
    )
    return True


# One FTS5 query per term (see app.memory.rules.fts5_queries); a memory's score is
# the sum of its terms' bm25, as for an OR of them. Each term ranks only the
# user's KEYWORD_HITS_PER_TERM memories stored last that hold it (app.memory.rules):
# FTS5 walks a term's hits by row id, last first (CROSS JOIN keeps it the outer loop,
# so no sort is needed) and stops there. MATERIALIZED: bm25 is only allowed
# where the query planner keeps the full-text scan as written.
_TERM_HITS = """
    SELECT * FROM (
        SELECT memories_fts.rowid AS id, bm25(memories_fts) AS score
          FROM memories_fts CROSS JOIN memories AS m ON m.id = memories_fts.rowid
         WHERE memories_fts MATCH :q{index} AND m.app_name = :app_name AND m.user_id = :user_id
         ORDER BY memories_fts.rowid DESC LIMIT :per_term
    )"""


def _keyword_hits(terms: int) -> str:
    """The hits of `terms` queries (:q0, :q1, ...), counted per row."""
    hits = " UNION ALL ".join(_TERM_HITS.format(index=index) for index in range(terms))
    return f"""
    WITH hit AS MATERIALIZED ({hits}
    ), grouped AS (
        SELECT id, count(*) AS matched, sum(score) AS rank_order FROM hit GROUP BY id
    )
"""


_KEYWORD_RANKING = """
      FROM grouped JOIN memories AS m ON m.id = grouped.id
     ORDER BY matched DESC, rank_order, m.timestamp DESC, m.id
     LIMIT :limit
"""


@functools.cache
def _sqlite_search(terms: int) -> TextClause:
    """The best matches with their sizes first, then what fits, each with
    the share of the question's terms it holds."""
    return text(
        _keyword_hits(terms)
        + """, best AS (SELECT m.id, m.timestamp, matched, rank_order"""
        + _KEYWORD_RANKING
        + f"""
    ), top AS (
        SELECT best.*, CAST(matched AS REAL) / {terms} AS share_of_terms,
               length(CAST(m.text AS BLOB)) + coalesce(length(CAST(m.content AS BLOB)), 0)
               + coalesce(length(CAST(m.custom_metadata AS BLOB)), 0) AS size
          FROM best JOIN memories AS m ON m.id = best.id
"""
        + TAKE_WHAT_FITS
    )


@functools.cache
def _sqlite_keyword_ids(terms: int) -> TextClause:
    """The same ranking, ids only (the keyword side of a hybrid search),
    each with the share of the question's terms the memory holds."""
    return text(
        _keyword_hits(terms) + f"SELECT m.id, CAST(matched AS REAL) / {terms}" + _KEYWORD_RANKING
    )


def _term_parameters(queries: Sequence[str]) -> dict[str, object]:
    return {f"q{index}": query for index, query in enumerate(queries)} | {
        "per_term": KEYWORD_HITS_PER_TERM
    }


# Memories by row id, in the order given, as many as fit in `budget` bytes
# (always the first), as TAKE_WHAT_FITS takes them, each with its row id.
_READ_MEMORIES = text(
    """
    WITH wanted AS (
        SELECT CAST(value AS INTEGER) AS id, key AS position FROM json_each(:ids)
    ), sized AS (
        SELECT m.id, wanted.position,
               length(CAST(m.text AS BLOB)) + coalesce(length(CAST(m.content AS BLOB)), 0)
               + coalesce(length(CAST(m.custom_metadata AS BLOB)), 0) AS size
          FROM wanted JOIN memories AS m ON m.id = wanted.id
         WHERE m.app_name = :app_name AND m.user_id = :user_id
    ), ranked AS (
        SELECT id, row_number() OVER best AS position, sum(size) OVER best AS running
          FROM sized WINDOW best AS (ORDER BY position)
    )
    SELECT m.session_id, m.event_id, m.author, m.role, m.timestamp, m.text,
           m.content, m.custom_metadata, m.id
      FROM ranked JOIN memories AS m ON m.id = ranked.id
     WHERE ranked.position = 1 OR ranked.running <= :budget
     ORDER BY ranked.position
"""
)


async def search(
    connection: AsyncConnection,
    app_name: str,
    user_id: str,
    question: str,
    limit: int,
    budget: int,
) -> list[tuple[MemoryRecord, float]]:
    """The best matches, at most `limit` and about `budget` bytes of text,
    each with the share of the question's terms it holds (1: every term)."""
    terms = query_terms(question)
    if not terms:
        return []
    parameters: dict[str, object] = {
        "app_name": app_name,
        "user_id": user_id,
        "limit": limit,
        "budget": budget,
    }
    queries = fts5_queries(terms)
    result = await connection.execute(
        _sqlite_search(len(queries)), parameters | _term_parameters(queries)
    )
    return [(MemoryRecord(*row[:8]), float(row[8])) for row in result]


async def keyword_ids(
    connection: AsyncConnection, app_name: str, user_id: str, question: str, limit: int
) -> list[tuple[int, float]]:
    """Row ids of the best keyword matches, best first (as `search` ranks),
    each with the share of the question's terms it holds (1: every term)."""
    terms = query_terms(question)
    if not terms or limit == 0:
        return []
    queries = fts5_queries(terms)
    result = await connection.execute(
        _sqlite_keyword_ids(len(queries)),
        {"app_name": app_name, "user_id": user_id, "limit": limit} | _term_parameters(queries),
    )
    return [(row[0], float(row[1])) for row in result]


# The row ids and sign bits of the user's memories of one model, each
# concatenated by SQLite in one scan of ix_memories_vector_bits, in the same
# row order: ids as text (parsed in C by numpy), bits as they are (the blobs
# joined as text, which keeps every byte in a UTF-8 database, then cast back:
# half the time of joining them as hex). SQLite has no bit count: numpy
# counts (app.memory.first_pass; docs/performance.md, "Memory search at
# 100,000 memories", second and fourth rounds).
_USER_MODEL = """
    FROM memories
     WHERE app_name = :app_name AND user_id = :user_id AND embedding_model = :model
"""
# One step to the end of the index (no other condition, or SQLite scans).
_NEWEST_ROW = text("SELECT max(id)" + _USER_MODEL)
_SIGN_BITS = text(
    "SELECT group_concat(id), CAST(group_concat(embedding_bits, '') AS BLOB)"
    + _USER_MODEL
    + " AND length(embedding_bits) = :length AND id > :after"
)
# The components of the rows kept, if they are still the user's, of that
# model: found by row id (CROSS JOIN keeps the ids the outer loop; else
# SQLite walks the user's index entries).
_COMPONENTS = text(
    """
    SELECT m.id, m.embedding FROM json_each(:ids) AS wanted
      CROSS JOIN memories AS m ON m.id = wanted.value
     WHERE m.app_name = :app_name AND m.user_id = :user_id AND m.embedding_model = :model
"""
)


class _SignBits:
    def __init__(
        self, connection: AsyncConnection, app_name: str, user_id: str, query: VectorQuery
    ) -> None:
        self.connection = connection
        self.length = len(query.bits)
        self.parameters: dict[str, object] = {
            "app_name": app_name,
            "user_id": user_id,
            "model": query.model,
        }

    async def newest_row(self) -> int | None:
        newest: int | None = (
            await self.connection.execute(_NEWEST_ROW, self.parameters)
        ).scalar_one()
        return newest

    async def rows_after(self, row: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
        found = (
            await self.connection.execute(
                _SIGN_BITS, self.parameters | {"length": self.length, "after": row}
            )
        ).one()
        if not found[0]:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.length), dtype=np.uint8)
        ids = np.fromstring(found[0], dtype=np.int64, sep=",")
        return ids, np.frombuffer(found[1], dtype=np.uint8).reshape(-1, self.length)


async def nearest(
    connection: AsyncConnection, app_name: str, user_id: str, query: VectorQuery
) -> list[tuple[int, bytes]]:
    """The `query.keep` memories nearest by sign bits (Hamming distance, ties
    by row id), with their components."""
    kept = query.kept or KeptSignBits(kept_bytes=0)
    source = _SignBits(connection, app_name, user_id, query)
    ids = await kept.nearest(source, app_name, user_id, query.model, query.bits, query.keep)
    if not ids:
        return []
    result = await connection.execute(_COMPONENTS, source.parameters | {"ids": json.dumps(ids)})
    components: dict[int, bytes] = {row[0]: row[1] for row in result}
    return [(identifier, components[identifier]) for identifier in ids if identifier in components]


async def read_memories(
    connection: AsyncConnection, app_name: str, user_id: str, ids: Sequence[int], budget: int
) -> list[tuple[int, MemoryRecord]]:
    if not ids:
        return []
    result = await connection.execute(
        _READ_MEMORIES,
        {"ids": json.dumps(list(ids)), "app_name": app_name, "user_id": user_id, "budget": budget},
    )
    return [(row[8], MemoryRecord(*row[:8])) for row in result]


async def list_memory_ids(
    connection: AsyncConnection, app_name: str, user_id: str, before: int | None, limit: int
) -> list[int]:
    """A page of the user's memories, newest first: the next entries of
    ix_memories_app_user (app, user, row id)."""
    conditions = [memories.c.app_name == app_name, memories.c.user_id == user_id]
    if before is not None:
        conditions.append(memories.c.id < before)
    statement = select(memories.c.id).where(*conditions).order_by(memories.c.id.desc()).limit(limit)
    return [row[0] for row in await connection.execute(statement)]


def _waiting(model: str, app_name: str | None, user_id: str | None) -> list[ColumnElement[bool]]:
    conditions = [or_(memories.c.embedding_model.is_(None), memories.c.embedding_model != model)]
    if app_name is not None:
        conditions.append(memories.c.app_name == app_name)
    if user_id is not None:
        conditions.append(memories.c.user_id == user_id)
    return conditions


async def claim_memories_to_embed(
    connection: AsyncConnection,
    model: str,
    limit: int,
    app_name: str | None,
    user_id: str | None,
    *,
    now: float,
    until: float,
    max_tries: int,
) -> list[tuple[int, str]]:
    """Memories waiting for `model`, unclaimed, claimed until `until`, in id
    order. The caller holds the write lock: one claim per row."""
    claimable = (
        select(memories.c.id)
        .where(
            *_waiting(model, app_name, user_id),
            memories.c.embedding_failures < max_tries,
            or_(
                memories.c.embedding_claimed_until.is_(None),
                memories.c.embedding_claimed_until <= now,
            ),
        )
        .order_by(memories.c.id)
        .limit(limit)
    )
    result = await connection.execute(
        update(memories)
        .where(memories.c.id.in_(claimable.scalar_subquery()))
        .values(embedding_claimed_until=until)
        .returning(memories.c.id, memories.c.text)
    )
    return sorted((row[0], row[1]) for row in result)


async def release_memories_to_embed(connection: AsyncConnection, ids: Sequence[int]) -> None:
    await connection.execute(
        update(memories).where(memories.c.id.in_(ids)).values(embedding_claimed_until=None)
    )


async def refuse_memories_to_embed(
    connection: AsyncConnection, ids: Sequence[int], retry_at: float
) -> None:
    await connection.execute(
        update(memories)
        .where(memories.c.id.in_(ids))
        .values(
            embedding_failures=memories.c.embedding_failures + 1,
            embedding_claimed_until=retry_at,
        )
    )


async def retry_refused_embeddings(
    connection: AsyncConnection, model: str, app_name: str | None, user_id: str | None
) -> int:
    result = await connection.execute(
        update(memories)
        .where(*_waiting(model, app_name, user_id), memories.c.embedding_failures > 0)
        .values(embedding_failures=0, embedding_claimed_until=None)
    )
    return result.rowcount


async def count_memories_to_embed(
    connection: AsyncConnection,
    model: str,
    app_name: str | None,
    user_id: str | None,
    max_tries: int,
) -> EmbeddingBacklogCount:
    given_up = memories.c.embedding_failures >= max_tries
    result = await connection.execute(
        select(func.count().filter(~given_up), func.count().filter(given_up)).where(
            *_waiting(model, app_name, user_id)
        )
    )
    waiting, failed = result.one()
    return EmbeddingBacklogCount(waiting=int(waiting), given_up=int(failed))


async def store_embeddings(
    connection: AsyncConnection, model: str, vectors: Sequence[tuple[int, StoredVector]]
) -> None:
    """Sets the vectors of these rows (a row deleted meanwhile is skipped).
    An UPDATE leaves the full-text index as it is (its triggers follow
    inserts and deletes)."""
    if not vectors:
        return
    await connection.execute(
        update(memories)
        .where(memories.c.id == bindparam("row_id"))
        .values(
            embedding_model=model,
            embedding=bindparam("components"),
            embedding_bits=bindparam("bits"),
            embedding_claimed_until=None,
            embedding_failures=0,
        ),
        [
            {"row_id": identifier, "components": vector.components, "bits": vector.bits}
            for identifier, vector in vectors
        ],
    )


async def delete_session_memories(connection: AsyncConnection, key: SessionKey) -> int:
    """Deletes the session's memories; returns how many."""
    result = await connection.execute(
        delete(memories).where(
            memories.c.app_name == key.app_name,
            memories.c.user_id == key.user_id,
            memories.c.session_id == key.session_id,
        )
    )
    return result.rowcount


async def delete_user_memories(connection: AsyncConnection, app_name: str, user_id: str) -> int:
    """Everything of the user's memory, the ids it forgot included."""
    result = await connection.execute(
        delete(memories).where(memories.c.app_name == app_name, memories.c.user_id == user_id)
    )
    await connection.execute(
        delete(forgotten_memories).where(
            forgotten_memories.c.app_name == app_name, forgotten_memories.c.user_id == user_id
        )
    )
    return result.rowcount


async def delete_app_memories(connection: AsyncConnection, app_name: str) -> int:
    """Every memory of the app's users, the ids they forgot included."""
    result = await connection.execute(delete(memories).where(memories.c.app_name == app_name))
    await connection.execute(
        delete(forgotten_memories).where(forgotten_memories.c.app_name == app_name)
    )
    return result.rowcount
