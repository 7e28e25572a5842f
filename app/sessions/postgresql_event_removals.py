"""The PostgreSQL storage of removing a session's newest events: what a
removal would take, the removal itself, and a pop (read and removed in one
round trip)."""

import asyncpg

from ..db.postgresql_connections import PostgresConnections
from . import postgresql_statements as sql
from .domain import EventsRemoved, Popped, SessionKey, SessionRow, SessionSnapshot, StoredEvent
from .state import StateDict


class PostgresEventRemovals(PostgresConnections):
    async def newest_kept_seq(
        self, key: SessionKey, remove_count: int, now: float
    ) -> tuple[int, int] | None:
        async with self._connection() as connection:
            row = await connection.fetchrow(
                sql.NEWEST_KEPT_SEQ, key.app_name, key.user_id, key.session_id, remove_count, now
            )
        return None if row is None else (int(row[0]), int(row[1]))

    async def newest_events(
        self, key: SessionKey, count: int, now: float
    ) -> tuple[int, list[StoredEvent]] | None:
        async with self._connection() as connection:
            rows = await connection.fetch(
                sql.NEWEST_EVENTS, key.app_name, key.user_id, key.session_id, count, now
            )
        if not rows:
            return None
        found = [StoredEvent(row[1], row[2]) for row in rows if row[1] is not None]
        return int(rows[0][0]), found[::-1]

    async def remove_events(
        self,
        key: SessionKey,
        after_seq: int,
        expected_revision: int,
        state: StateDict | None,
        now: float,
    ) -> EventsRemoved | None:
        async with self._connection() as connection:
            row = await connection.fetchrow(
                sql.REMOVE_EVENTS,
                key.app_name,
                key.user_id,
                key.session_id,
                after_seq,
                expected_revision,
                now,
                state,
            )
        return None if row is None else EventsRemoved(int(row[0]), int(row[1]))

    async def pop_newest(
        self,
        key: SessionKey,
        count: int,
        expected_revision: int | None,
        max_bytes: int,
        now: float,
    ) -> Popped | None:
        statement = sql.POP_NEWEST
        values = {
            "app_name": key.app_name,
            "user_id": key.user_id,
            "session_id": key.session_id,
            "count": count,
            "now": now,
            "expected": expected_revision,
            "max_bytes": max_bytes,
        }
        try:
            async with self._connection() as connection:
                row = await connection.fetchrow(statement.text, *statement.arguments(values))
        except asyncpg.DataError:
            # An event stored before the value rules (app.core.json_rules) that
            # PostgreSQL's JSON does not parse: the service derives it all.
            found = await self.newest_events(key, count, now)
            if found is None:
                return None
            return Popped(found[0], found[1], None, None, changes_state=True)
        if row is None:
            return None
        revision, changes_state, state, after_revision, update_time, expire_time, labels = row[:7]
        app_state, user_state, texts, seqs, removed = row[7:]
        session = SessionRow(
            key.app_name,
            key.user_id,
            key.session_id,
            state,
            after_revision,
            update_time,
            expire_time,
            labels or {},
        )
        events = [StoredEvent(seq, data) for seq, data in zip(seqs or (), texts or (), strict=True)]
        snapshot = SessionSnapshot(session, app_state or {}, user_state or {}, "", 0)
        return Popped(revision, events, removed, snapshot, changes_state)
