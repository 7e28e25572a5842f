"""The PostgreSQL store's memory writes and search, on a connection inside
a transaction the store owns (`PostgresStore`'s memory methods), as
`memory_repository.py` is the SQLite store's."""

from collections.abc import Sequence

import asyncpg

from ..domain import MemoryRecord
from ..search_text import query_terms, search_text
from . import postgresql_statements as sql


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
