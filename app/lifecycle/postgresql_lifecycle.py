"""The PostgreSQL storage of what is asked of every feature at once
(`LifecycleStore`): erasing a user or an app, and sweeping expired
sessions, over every feature's tables (app.lifecycle.tables)."""

import time
from typing import Any

import asyncpg

from ..db.postgresql_connections import PostgresConnections, row_count
from ..db.postgresql_statement import Statement
from ..langgraph.checkpoints import postgresql as checkpoints
from ..langgraph.store import postgresql as store_items
from ..memory import postgresql_statements as memory_sql
from ..memory.postgresql_memory import lock_user_memory
from ..sessions.domain import Erased, SessionKey, Swept
from ..sessions.event_windows import ERASE_CANDIDATES, events_batch
from ..sessions.postgresql_statements import session_values
from ..streams import postgresql_tombstones as tombstones
from . import postgresql_statements as sql


class PostgresLifecycle(PostgresConnections):
    # -- erasure -------------------------------------------------------------
    # One transaction over every feature's tables (app.lifecycle.tables): a
    # reader sees all of it or none of it, and a failure anywhere leaves it
    # all in place for a retry.

    async def erase_user(self, app_name: str, user_id: str, batch_events: int) -> Erased:
        # The memory lock first, as every memory write takes it before rows.
        async with self._transaction() as connection:
            await lock_user_memory(connection, app_name, user_id)
            return await _erase(connection, app_name, user_id, batch_events)

    async def erase_app(self, app_name: str, batch_events: int) -> Erased:
        async with self._transaction() as connection:
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
        # Each batch's transaction takes the lock that keeps a second process
        # from sweeping; a pass that finds it held stops (skipped if it had
        # swept nothing), leaving the rest to the process holding it.
        swept: Swept | None = None
        while True:
            async with self._transaction() as connection:
                if not await connection.fetchval(sql.TRY_SWEEP_LOCK.text):
                    return swept
                batch = await _sweep_batch(connection, now, batch_events, with_memories)
            if batch is None:
                return swept or Swept()
            counts, keys = batch
            if expired is not None:
                expired += keys
            swept = (swept or Swept()) + counts

    async def count_expired(self, now: float) -> int:
        async with self._connection() as connection:
            count = sql.EXPIRED_COUNT
            return int(await connection.fetchval(count.text, *count.arguments({"now": now})))


async def _sweep_batch(
    connection: asyncpg.Connection, now: float, batch_events: int, with_memories: bool
) -> tuple[Swept, list[SessionKey]] | None:
    """One transaction's sweep (the caller's): the next expired sessions
    holding at most `batch_events` events (a bigger one alone), deleted
    whole; None when none is left."""
    expired = sql.EXPIRED_SESSIONS
    candidates = await connection.fetch(
        expired.text, *expired.arguments({"now": now, "limit": ERASE_CANDIDATES})
    )
    sized = [
        (SessionKey(row["app_name"], row["user_id"], row["id"]), row["revision"])
        for row in candidates
    ]
    keys = events_batch(sized, batch_events)
    if not keys:
        return None
    sessions_of = [session_values(key) for key in keys]

    async def delete(statement: Statement) -> int:
        """The rows of the batch's sessions `statement` deletes."""
        return row_count(await connection.execute(statement.text, *statement.columns(sessions_of)))

    events = await delete(sql.DELETE_EVENTS_OF_ANY_SESSIONS)
    sessions = await delete(sql.DELETE_ANY_SESSIONS)
    memories = await delete(sql.DELETE_MEMORIES_OF_ANY_SESSIONS) if with_memories else 0
    await tombstones.write(connection, keys, "expired", now)
    return Swept(sessions, events, memories), keys


async def _erase(
    connection: asyncpg.Connection, app_name: str, user_id: str | None, batch_events: int
) -> Erased:
    """Everything of the user (every user's, and the app's state, when None)
    in the app, in the caller's transaction. Sessions go with their events in
    statements of at most `batch_events` events (sessions created meanwhile
    included), each leaving a tombstone, collapsed at the end."""
    erased = Erased()
    erasable = sql.ERASABLE_SESSIONS
    scope = {"app_name": app_name, "user_id": user_id}

    async def delete(statement: Statement, values: dict[str, Any]) -> int:
        return row_count(await connection.execute(statement.text, *statement.arguments(values)))

    while True:
        candidates = await connection.fetch(
            erasable.text, *erasable.arguments({**scope, "limit": ERASE_CANDIDATES})
        )
        keys = events_batch(
            [
                (SessionKey(app_name, row["user_id"], row["id"]), row["revision"])
                for row in candidates
            ],
            batch_events,
        )
        if not keys:
            break
        sessions_of = {
            "app_name": app_name,
            "user_ids": [key.user_id for key in keys],
            "session_ids": [key.session_id for key in keys],
        }
        events = await delete(sql.DELETE_EVENTS_OF_SESSIONS, sessions_of)
        sessions = await delete(sql.DELETE_SESSIONS, sessions_of)
        await tombstones.write(connection, keys, "deleted", time.time())
        erased += Erased(sessions=sessions, events=events)
    await tombstones.collapse(connection, app_name, user_id, time.time())
    if user_id is None:
        app = {"app_name": app_name}
        state_keys = await delete(sql.DELETE_APP_STATE, app)
        state_keys += await delete(sql.DELETE_APP_USER_STATES, app)
        memories = await delete(sql.DELETE_APP_MEMORIES, app)
        await delete(sql.DELETE_APP_FORGOTTEN, app)
    else:
        state_keys = await delete(sql.DELETE_USER_STATE, scope)
        memories = await delete(memory_sql.DELETE_USER_MEMORIES, scope)
        await delete(memory_sql.DELETE_USER_FORGOTTEN, scope)
    threads = await checkpoints.erase_threads(connection, app_name, user_id)
    items = await store_items.erase_items(connection, app_name, user_id)
    return erased + Erased(
        state_keys=state_keys, memories=memories, threads=threads, store_items=items
    )
