"""The PostgreSQL storage of live streams (`ChangeLog`): a session's changes
by revision, and a user's changes (tombstones of deleted sessions, live
sessions by change number)."""

from ..core import json_codec
from ..db.postgresql_connections import PostgresConnections, row_count
from ..sessions.domain import (
    ChangeCursor,
    ChangedSession,
    Removal,
    SessionChanges,
    SessionKey,
    StoredEvent,
    UserChanges,
)
from . import postgresql_statements as sql
from . import postgresql_tombstones as tombstones


class PostgresChangeLog(PostgresConnections):
    async def read_user_changes(
        self,
        app_name: str,
        user_id: str,
        after_seq: int,
        after: ChangeCursor,
        limit: int,
        now: float,
    ) -> UserChanges:
        # One snapshot: a session listed is newer than every tombstone read,
        # and the horizon is this snapshot's.
        async with (
            self._connection() as connection,
            connection.transaction(isolation="repeatable_read", readonly=True),
        ):
            horizon, next_change = await connection.fetchrow(sql.CHANGE_HORIZON)
            gone, newest = await tombstones.read(connection, app_name, user_id, after_seq, limit)
            rows = await connection.fetch(
                sql.USER_CHANGES, app_name, user_id, *after, horizon, now, limit + 1
            )
            pending = len(rows) <= limit and bool(
                await connection.fetchval(
                    sql.CHANGES_PAST_HORIZON, app_name, user_id, horizon, next_change
                )
            )
        page = [ChangedSession(row[0], row[1], row[2], row[3], row[4]) for row in rows]
        return UserChanges(
            gone, newest, page[:limit], len(page) > limit, horizon, next_change, pending
        )

    async def prune_tombstones(self, before: float) -> int:
        async with self._connection() as connection:
            return row_count(await connection.execute(tombstones.PRUNE, before))

    async def read_changes(
        self, key: SessionKey, after_revision: int, limit: int, max_bytes: int, now: float
    ) -> SessionChanges | None:
        session = (key.app_name, key.user_id, key.session_id)
        # One snapshot: the events and removals agree with the revision.
        async with (
            self._connection() as connection,
            connection.transaction(isolation="repeatable_read", readonly=True),
        ):
            found = await connection.fetchrow(sql.READ_REVISION, *session, now)
            if found is None:
                return None
            rows = await connection.fetch(
                sql.CHANGED_EVENTS, *session, after_revision, limit + 1, max_bytes
            )
            changed = [StoredEvent(seq, data) for seq, data in rows[:limit] if data is not None]
            changes = SessionChanges(int(found[0]), found[1], changed, [], len(rows) > len(changed))
            if changes.up_to - after_revision == len(changed):  # all were events
                return changes
            removals = await connection.fetch(
                sql.READ_REMOVALS, *session, after_revision, changes.up_to
            )
        return SessionChanges(
            changes.revision,
            changes.expire_time,
            changed,
            [Removal(int(row[0]), json_codec.loads(row[1])) for row in removals],
            changes.more,
        )
