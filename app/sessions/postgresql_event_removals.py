"""The PostgreSQL storage of removing a session's newest events: what a
removal would take, the removal itself, and a pop (read and removed in one
round trip)."""

import asyncpg

from ..db.postgresql_connections import PostgresConnections
from . import postgresql_statements as sql
from .domain import EventsRemoved, Popped, SessionKey, SessionSnapshot, StoredEvent
from .postgresql_session_rows import session_row
from .postgresql_statements import session_values
from .state import StateDict


class PostgresEventRemovals(PostgresConnections):
    async def newest_kept_seq(
        self, key: SessionKey, remove_count: int, now: float
    ) -> tuple[int, int] | None:
        statement = sql.NEWEST_KEPT_SEQ
        values = session_values(key, count=remove_count, now=now)
        async with self._connection() as connection:
            row = await connection.fetchrow(statement.text, *statement.arguments(values))
        return None if row is None else (int(row["revision"]), int(row["kept_seq"]))

    async def newest_events(
        self, key: SessionKey, count: int, now: float
    ) -> tuple[int, list[StoredEvent]] | None:
        statement = sql.NEWEST_EVENTS
        values = session_values(key, count=count, now=now)
        async with self._connection() as connection:
            rows = await connection.fetch(statement.text, *statement.arguments(values))
        if not rows:
            return None
        found = [StoredEvent(row["seq"], row["data"]) for row in rows if row["seq"] is not None]
        return int(rows[0]["revision"]), found[::-1]

    async def remove_events(
        self,
        key: SessionKey,
        after_seq: int,
        expected_revision: int,
        state: StateDict | None,
        now: float,
    ) -> EventsRemoved | None:
        statement = sql.REMOVE_EVENTS
        values = session_values(
            key, after_seq=after_seq, expected=expected_revision, now=now, state=state
        )
        async with self._connection() as connection:
            row = await connection.fetchrow(statement.text, *statement.arguments(values))
        return None if row is None else EventsRemoved(int(row["revision"]), int(row["removed"]))

    async def pop_newest(
        self,
        key: SessionKey,
        count: int,
        expected_revision: int | None,
        max_bytes: int,
        now: float,
    ) -> Popped | None:
        statement = sql.POP_NEWEST
        values = session_values(
            key, count=count, now=now, expected=expected_revision, max_bytes=max_bytes
        )
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
        seqs, texts = row["seqs"] or (), row["events"] or ()
        events = [StoredEvent(seq, data) for seq, data in zip(seqs, texts, strict=True)]
        snapshot = SessionSnapshot(
            session_row(key, row), row["app_state"] or {}, row["user_state"] or {}, "", 0
        )
        return Popped(row["read_revision"], events, row["removed"], snapshot, row["changes_state"])
