"""The PostgreSQL storage of what is asked of every feature at once
(`LifecycleStore`): erasing a user or an app, and sweeping expired
sessions, over every feature's tables (app.lifecycle.tables)."""

import time

import asyncpg

from ..db.postgresql_connections import PostgresConnections, row_count
from ..langgraph.checkpoints import postgresql as checkpoints
from ..langgraph.store import postgresql as store_items
from ..memory import postgresql_statements as memory_sql
from ..memory.postgresql_memory import lock_user_memory
from ..sessions.domain import Erased, SessionKey, Swept
from ..sessions.event_windows import ERASE_CANDIDATES, events_batch
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
                if not await connection.fetchval(sql.TRY_SWEEP_LOCK):
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
            return int(await connection.fetchval(sql.EXPIRED_COUNT, now))


async def _sweep_batch(
    connection: asyncpg.Connection, now: float, batch_events: int, with_memories: bool
) -> tuple[Swept, list[SessionKey]] | None:
    """One transaction's sweep (the caller's): the next expired sessions
    holding at most `batch_events` events (a bigger one alone), deleted
    whole; None when none is left."""
    candidates = await connection.fetch(sql.EXPIRED_SESSIONS, now, ERASE_CANDIDATES)
    sized = [((row[0], row[1], row[2]), row[3]) for row in candidates]
    batch = events_batch(sized, batch_events)
    if not batch:
        return None
    columns = [list(column) for column in zip(*batch, strict=True)]
    events = row_count(await connection.execute(sql.DELETE_EVENTS_OF_ANY_SESSIONS, *columns))
    sessions = row_count(await connection.execute(sql.DELETE_ANY_SESSIONS, *columns))
    memories = 0
    if with_memories:
        memories = row_count(
            await connection.execute(sql.DELETE_MEMORIES_OF_ANY_SESSIONS, *columns)
        )
    keys = [SessionKey(*key) for key in batch]
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
    while True:
        candidates = await connection.fetch(
            sql.ERASABLE_SESSIONS, app_name, user_id, ERASE_CANDIDATES
        )
        batch = events_batch([((row[0], row[1]), row[2]) for row in candidates], batch_events)
        if not batch:
            break
        users = [user for user, _ in batch]
        ids = [session_id for _, session_id in batch]
        events = await connection.execute(sql.DELETE_EVENTS_OF_SESSIONS, app_name, users, ids)
        sessions = await connection.execute(sql.DELETE_SESSIONS, app_name, users, ids)
        erased_keys = [SessionKey(app_name, user, id_) for user, id_ in batch]
        await tombstones.write(connection, erased_keys, "deleted", time.time())
        erased += Erased(sessions=row_count(sessions), events=row_count(events))
    await tombstones.collapse(connection, app_name, user_id, time.time())
    if user_id is None:
        state_keys = row_count(await connection.execute(sql.DELETE_APP_STATE, app_name))
        state_keys += row_count(await connection.execute(sql.DELETE_APP_USER_STATES, app_name))
        memories = row_count(await connection.execute(sql.DELETE_APP_MEMORIES, app_name))
        await connection.execute(sql.DELETE_APP_FORGOTTEN, app_name)
        threads = row_count(await connection.execute(checkpoints.ERASE_APP_THREADS, app_name))
        items = row_count(await connection.execute(store_items.ERASE_APP_ITEMS, app_name))
    else:
        owner = (app_name, user_id)
        state_keys = row_count(await connection.execute(sql.DELETE_USER_STATE, *owner))
        memories = row_count(await connection.execute(memory_sql.DELETE_USER_MEMORIES, *owner))
        await connection.execute(memory_sql.DELETE_USER_FORGOTTEN, *owner)
        threads = row_count(await connection.execute(checkpoints.ERASE_USER_THREADS, *owner))
        items = row_count(await connection.execute(store_items.ERASE_USER_ITEMS, *owner))
    return erased + Erased(
        state_keys=state_keys, memories=memories, threads=threads, store_items=items
    )
