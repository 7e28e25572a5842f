"""The PostgreSQL storage of live streams (`ChangeLog`): a session's changes
by revision, and a user's changes (tombstones of deleted sessions, live
sessions by change number)."""

import asyncpg

from ..core import json_codec
from ..db.postgresql_connections import row_count
from ..sessions.domain import (
    ChangeCursor,
    ChangedSession,
    Removal,
    SessionChanges,
    SessionKey,
    StoredEvent,
    TombstoneKind,
    UserChanges,
)
from ..sessions.postgresql_session_hooks import PostgresSessionHooks
from ..sessions.postgresql_statements import session_values
from . import postgresql_statements as sql
from . import postgresql_tombstones as tombstones


class PostgresChangeLog(PostgresSessionHooks):
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
            numbers = await connection.fetchrow(sql.CHANGE_HORIZON.text)
            horizon, next_change = numbers["horizon"], numbers["next_change"]
            gone, newest = await tombstones.read(connection, app_name, user_id, after_seq, limit)
            owner = {"app_name": app_name, "user_id": user_id, "horizon": horizon}
            after_change, after_id = after
            page_after = {"after_change": after_change, "after_id": after_id, "limit": limit + 1}
            changed, past = sql.USER_CHANGES, sql.CHANGES_PAST_HORIZON
            rows = await connection.fetch(
                changed.text, *changed.arguments({**owner, **page_after, "now": now})
            )
            pending = len(rows) <= limit and bool(
                await connection.fetchval(
                    past.text, *past.arguments({**owner, "next_change": next_change})
                )
            )
        page = [
            ChangedSession(
                row["id"], row["revision"], row["update_time"], row["change_number"], row["removed"]
            )
            for row in rows
        ]
        return UserChanges(
            gone, newest, page[:limit], len(page) > limit, horizon, next_change, pending
        )

    async def prune_tombstones(self, before: float) -> int:
        async with self._connection() as connection:
            prune = tombstones.PRUNE
            return row_count(
                await connection.execute(prune.text, *prune.arguments({"before": before}))
            )

    async def read_changes(
        self, key: SessionKey, after_revision: int, limit: int, max_bytes: int, now: float
    ) -> SessionChanges | None:
        revision, events, removed = sql.READ_REVISION, sql.CHANGED_EVENTS, sql.READ_REMOVALS
        # One snapshot: the events and removals agree with the revision.
        async with (
            self._connection() as connection,
            connection.transaction(isolation="repeatable_read", readonly=True),
        ):
            found = await connection.fetchrow(
                revision.text, *revision.arguments(session_values(key, now=now))
            )
            if found is None:
                return None
            page = session_values(
                key, after_seq=after_revision, limit=limit + 1, max_bytes=max_bytes
            )
            rows = await connection.fetch(events.text, *events.arguments(page))
            changed = [
                StoredEvent(row["seq"], row["data"])
                for row in rows[:limit]
                if row["data"] is not None
            ]
            changes = SessionChanges(
                int(found["revision"]), found["expire_time"], changed, [], len(rows) > len(changed)
            )
            if changes.up_to - after_revision == len(changed):  # all were events
                return changes
            span = session_values(key, after_revision=after_revision, up_to_revision=changes.up_to)
            removals = await connection.fetch(removed.text, *removed.arguments(span))
        return SessionChanges(
            changes.revision,
            changes.expire_time,
            changed,
            [Removal(int(row["revision"]), json_codec.loads(row["event_ids"])) for row in removals],
            changes.more,
        )

    async def _session_deleted(
        self,
        connection: asyncpg.Connection,
        key: SessionKey,
        kind: TombstoneKind,
        now: float,
        *,
        with_memories: bool,
    ) -> None:
        # Live user streams learn that the session went.
        await tombstones.write(connection, [key], kind, now)
        await super()._session_deleted(connection, key, kind, now, with_memories=with_memories)
