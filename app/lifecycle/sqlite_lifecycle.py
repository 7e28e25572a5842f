"""What is asked of every feature at once, on SQLite (`LifecycleStore`):
erasing a user or an app, and sweeping expired sessions. Which tables each
takes is app.lifecycle.tables; sessions go with their events by this
package's `sqlite_statements.py`, every other feature's rows by its own
storage's SQL."""

import time

from sqlalchemy.ext.asyncio import AsyncConnection

from ..db.sqlite_connections import SqliteConnections
from ..langgraph.checkpoints import sqlite as checkpoints
from ..langgraph.store import sqlite as store_items
from ..memory import sqlite_statements as memory_sql
from ..sessions.domain import Erased, SessionKey, Swept
from ..sessions.event_windows import events_batch
from ..streams import sqlite_tombstones as tombstones
from . import sqlite_statements as sql


class SqliteLifecycle(SqliteConnections):
    # -- erasure -------------------------------------------------------------
    # One transaction over every feature's tables (app.lifecycle.tables): a
    # reader sees all of it or none of it, and a failure anywhere leaves it
    # all in place for a retry.

    async def erase_user(self, app_name: str, user_id: str, batch_events: int) -> Erased:
        async with self._write() as connection:
            return await _erase(connection, app_name, user_id, batch_events)

    async def erase_app(self, app_name: str, batch_events: int) -> Erased:
        async with self._write() as connection:
            return await _erase(connection, app_name, None, batch_events)

    # -- the sweeper ---------------------------------------------------------

    async def sweep_expired(
        self,
        now: float,
        batch_events: int,
        *,
        with_memories: bool,
        expired: list[SessionKey] | None = None,
    ) -> Swept | None:
        # Each batch holds the database's write lock: two processes sweeping
        # one file take turns batch by batch and never delete a row twice.
        swept = Swept()
        while True:
            async with self._write() as connection:
                candidates = await sql.expired_sessions(connection, now)
                batch = events_batch(candidates, batch_events)
                if not batch:
                    return swept
                sessions, events = await sql.delete_any_sessions_with_events(connection, batch)
                memories = 0
                if with_memories:
                    for key in batch:
                        memories += await memory_sql.delete_session_memories(connection, key)
                await tombstones.write(connection, batch, "expired", now)
            if expired is not None:
                expired += batch
            swept += Swept(sessions, events, memories)

    async def count_expired(self, now: float) -> int:
        async with self._read() as connection:
            return await sql.count_expired(connection, now)


async def _erase(
    connection: AsyncConnection, app_name: str, user_id: str | None, batch_events: int
) -> Erased:
    """Everything of the user (every user's, and the app's state, when None)
    in the app, in the caller's transaction. Sessions go with their events in
    statements of at most `batch_events` events, each leaving a tombstone,
    collapsed at the end."""
    erased = Erased()
    while batch := events_batch(
        await sql.erasable_sessions(connection, app_name, user_id), batch_events
    ):
        sessions, events = await sql.delete_sessions_with_events(connection, app_name, batch)
        erased_keys = [SessionKey(app_name, user, id_) for user, id_ in batch]
        await tombstones.write(connection, erased_keys, "deleted", time.time())
        erased += Erased(sessions=sessions, events=events)
    await tombstones.collapse(connection, app_name, user_id, time.time())
    state_keys = await sql.delete_scope_state(connection, app_name, user_id)
    if user_id is None:
        memories = await memory_sql.delete_app_memories(connection, app_name)
    else:
        memories = await memory_sql.delete_user_memories(connection, app_name, user_id)
    threads = await checkpoints.erase_threads(connection, app_name, user_id)
    items = await store_items.erase_items(connection, app_name, user_id)
    return erased + Erased(
        state_keys=state_keys, memories=memories, threads=threads, store_items=items
    )
