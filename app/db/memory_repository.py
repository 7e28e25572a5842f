"""SQL of long-term memory. Full-text search is PostgreSQL's tsvector with
websearch_to_tsquery and ts_rank_cd, or SQLite's FTS5 with bm25."""

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import delete, text
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.repository import SessionKey
from app.db.tables import memories
from app.memory import fts5_query


@dataclass(frozen=True)
class MemoryRecord:
    session_id: str
    event_id: str
    author: str
    role: str | None
    timestamp: float
    text: str


async def insert_memories(
    connection: AsyncConnection, app_name: str, user_id: str, records: Sequence[MemoryRecord]
) -> int:
    """Inserts the memories not stored yet; returns how many were new."""
    if not records:
        return 0
    insert = postgresql_insert if connection.dialect.name == "postgresql" else sqlite_insert
    # An event already taken (by an earlier or a concurrent ingestion) is
    # skipped by the unique index, not by a list of known ids in memory.
    statement = (
        insert(memories)
        .on_conflict_do_nothing(index_elements=["app_name", "user_id", "session_id", "event_id"])
        .returning(memories.c.id)
    )
    result = await connection.execute(
        statement,
        [
            {
                "app_name": app_name,
                "user_id": user_id,
                "session_id": record.session_id,
                "event_id": record.event_id,
                "author": record.author,
                "role": record.role,
                "timestamp": record.timestamp,
                "text": record.text,
            }
            for record in records
        ],
    )
    return len(result.all())


# Both searches take the best `limit` matches with their sizes first, then
# read the texts of those that fit in the response (`budget` bytes; always
# the first): results are bounded in bytes, not only in count.
_TAKE_WHAT_FITS = """
    ), ranked AS (
        SELECT id, row_number() OVER best AS position, sum(size) OVER best AS running
          FROM top WINDOW best AS (ORDER BY rank_order, timestamp DESC, id)
    )
    SELECT m.session_id, m.event_id, m.author, m.role, m.timestamp, m.text
      FROM ranked JOIN memories AS m ON m.id = ranked.id
     WHERE ranked.position = 1 OR ranked.running <= :budget
     ORDER BY ranked.position
"""

_POSTGRESQL_SEARCH = text(
    """
    WITH parsed AS (
        SELECT websearch_to_tsquery('english', :question)::text AS query_text
    ), matching AS (
        -- Any word may match (a question rarely repeats every word of the
        -- answer), except when the user wrote a negation: then keep the
        -- query as written.
        SELECT CASE WHEN position('!' IN query_text) > 0 THEN query_text::tsquery
                    ELSE replace(query_text, ' & ', ' | ')::tsquery END AS query
          FROM parsed
    ), top AS (
        SELECT m.id, m.timestamp, octet_length(m.text) AS size,
               -ts_rank_cd(m.search_vector, matching.query) AS rank_order
          FROM memories AS m, matching
         WHERE m.app_name = :app_name AND m.user_id = :user_id
           AND m.search_vector @@ matching.query
         ORDER BY rank_order, m.timestamp DESC, m.id
         LIMIT :limit
    """
    + _TAKE_WHAT_FITS
)

_SQLITE_SEARCH = text(
    """
    WITH top AS (
        SELECT m.id, m.timestamp, length(CAST(m.text AS BLOB)) AS size,
               bm25(memories_fts) AS rank_order
          FROM memories_fts
          JOIN memories AS m ON m.id = memories_fts.rowid
         WHERE memories_fts MATCH :question
           AND m.app_name = :app_name AND m.user_id = :user_id
         ORDER BY rank_order, m.timestamp DESC, m.id
         LIMIT :limit
    """
    + _TAKE_WHAT_FITS
)


async def search(
    connection: AsyncConnection,
    app_name: str,
    user_id: str,
    question: str,
    limit: int,
    budget: int,
) -> list[MemoryRecord]:
    """The best matches, at most `limit` and about `budget` bytes of text."""
    parameters: dict[str, object] = {
        "app_name": app_name,
        "user_id": user_id,
        "limit": limit,
        "budget": budget,
    }
    if connection.dialect.name == "postgresql":
        statement = _POSTGRESQL_SEARCH
        parameters["question"] = question
    else:
        query = fts5_query(question)
        if query is None:
            return []
        statement = _SQLITE_SEARCH
        parameters["question"] = query
    result = await connection.execute(statement, parameters)
    return [MemoryRecord(*row) for row in result]


async def delete_session_memories(connection: AsyncConnection, key: SessionKey) -> None:
    await connection.execute(
        delete(memories).where(
            memories.c.app_name == key.app_name,
            memories.c.user_id == key.user_id,
            memories.c.session_id == key.session_id,
        )
    )


async def delete_user_memories(connection: AsyncConnection, app_name: str, user_id: str) -> int:
    result = await connection.execute(
        delete(memories).where(memories.c.app_name == app_name, memories.c.user_id == user_id)
    )
    return result.rowcount
