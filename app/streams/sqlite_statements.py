"""The SQLite change log's SQL (`sqlite_changes.py`), as SQLAlchemy Core: a
session's changes by revision and a user's sessions by change number (the
tombstones' is `sqlite_tombstones.py`). Functions run on a connection inside a
transaction that the caller owns; none of them commits."""

from sqlalchemy import literal, select, text, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from ..core import json_codec
from ..sessions.domain import Removal, SessionChanges, SessionKey, StoredEvent
from ..sessions.sqlite_statements import next_change_number, not_expired, session_is
from ..sessions.tables import event_removals, sessions


async def read_user_changes(
    connection: AsyncConnection,
    app_name: str,
    user_id: str,
    after: tuple[int, str],
    limit: int,
    now: float,
) -> tuple[list[tuple[str, int, float, int, bool]], int]:
    """The user's live sessions changed after the cursor, in change order
    (at most `limit`) with whether their revision is a removal's, and the
    number the next write will take: every
    number below it is committed."""
    found = await connection.execute(
        select(
            sessions.c.id,
            sessions.c.revision,
            sessions.c.update_time,
            sessions.c.change_number,
            select(event_removals.c.revision)
            .where(
                event_removals.c.app_name == sessions.c.app_name,
                event_removals.c.user_id == sessions.c.user_id,
                event_removals.c.session_id == sessions.c.id,
                event_removals.c.revision == sessions.c.revision,
            )
            .exists(),
        )
        .where(
            sessions.c.app_name == app_name,
            sessions.c.user_id == user_id,
            tuple_(sessions.c.change_number, sessions.c.id)
            > tuple_(literal(after[0]), literal(after[1])),
            not_expired(now),
        )
        .order_by(sessions.c.change_number, sessions.c.id)
        .limit(limit)
    )
    rows = [(row[0], int(row[1]), float(row[2]), int(row[3]), bool(row[4])) for row in found]
    horizon = await connection.execute(select(next_change_number()))
    return rows, int(horizon.scalar_one())


async def read_changes(
    connection: AsyncConnection,
    key: SessionKey,
    after_revision: int,
    limit: int,
    max_bytes: int,
    now: float,
) -> SessionChanges | None:
    found = await connection.execute(
        select(sessions.c.revision, sessions.c.expire_time).where(
            *session_is(key), not_expired(now)
        )
    )
    session = found.first()
    if session is None:
        return None
    rows = await connection.execute(
        text(CHANGED_EVENTS),
        {
            "app_name": key.app_name,
            "user_id": key.user_id,
            "session_id": key.session_id,
            "after": after_revision,
            "limit": limit + 1,
            "max_bytes": max_bytes,
        },
    )
    found_rows = rows.all()
    changed = [StoredEvent(int(seq), data) for seq, data in found_rows[:limit] if data is not None]
    more = len(found_rows) > len(changed)
    changes = SessionChanges(int(session[0]), session[1], changed, [], more)
    if changes.up_to - after_revision != len(changed):  # not all were events
        removals = await read_removals(connection, key, after_revision, changes.up_to)
        changes = SessionChanges(changes.revision, changes.expire_time, changed, removals, more)
    return changes


# A session's events after :after (at most :limit): their JSON while the bytes
# before them are under :max_bytes (the first always), NULL past that.
CHANGED_EVENTS = """
SELECT seq, CASE WHEN before = 0 OR before < :max_bytes THEN data END FROM (
    SELECT seq, data,
           sum(length(CAST(data AS BLOB))) OVER (ORDER BY seq) - length(CAST(data AS BLOB))
               AS before
      FROM (SELECT seq, data FROM events
             WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id
               AND seq > :after
             ORDER BY seq
             LIMIT :limit)
)
 ORDER BY seq
"""


async def read_removals(
    connection: AsyncConnection, key: SessionKey, after_revision: int, up_to_revision: int
) -> list[Removal]:
    result = await connection.execute(
        select(event_removals.c.revision, event_removals.c.event_ids)
        .where(
            event_removals.c.app_name == key.app_name,
            event_removals.c.user_id == key.user_id,
            event_removals.c.session_id == key.session_id,
            event_removals.c.revision > after_revision,
            event_removals.c.revision <= up_to_revision,
        )
        .order_by(event_removals.c.revision)
    )
    return [Removal(int(revision), json_codec.loads(ids)) for revision, ids in result]
