"""The PostgreSQL change relay tells other processes' streams of a change
only while there are other processes: a process alone sends no NOTIFY (one
per batch of appends was a sixth of an append's server CPU), and a process
that connects later is heard of at once (its hello), not after a recount."""

import asyncio
import time
import uuid
from collections.abc import Callable

from session_state.admin.commands import sweep
from session_state.core.config import Settings
from session_state.db.postgresql_connections import asyncpg_dsn
from session_state.sessions.changes import Change
from session_state.sessions.domain import Expiry, SessionKey
from session_state.sessions.state import ScopedDelta
from session_state.stores import open_store
from session_state.streams.changes import ChangeHub, PostgresChangeRelay


async def _connected(hub: ChangeHub, dsn: str) -> PostgresChangeRelay:
    relay = PostgresChangeRelay(hub, dsn, timeout=10)
    hub.relay = relay
    relay.start()
    await asyncio.wait_for(relay.connected.wait(), 10)
    return relay


async def _until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"not seen within 4 s: {what}")


async def test_a_process_alone_sends_no_hints_and_a_newcomer_is_told_at_once(
    fresh_postgres_url: str,
) -> None:
    dsn = asyncpg_dsn(fresh_postgres_url)
    first_hub, second_hub = ChangeHub(), ChangeHub()
    first = await _connected(first_hub, dsn)
    try:
        assert first.peers is False  # counted: nobody else on this database
        first_hub.publish(Change("app", "u", "s", "appended", 1))
        assert first._pending == []  # dropped, not queued for a NOTIFY

        second = await _connected(second_hub, dsn)
        try:
            assert second.peers is True  # counted the first
            await _until(lambda: first.peers, "the first relay hearing the hello")
            with second_hub.watch("app", "u", "s") as waiter:
                first_hub.publish(Change("app", "u", "s", "appended", 2))
                await asyncio.wait_for(waiter.flag.wait(), 10)
                assert waiter.flag.is_set()
        finally:
            await second.close()
    finally:
        await first.close()


async def test_a_sweep_run_from_the_command_line_tells_the_servers_streams(
    postgres_url: str,
) -> None:
    """`session-state sweep` sends the hint serve's sweeper sends: a user
    stream of a server process announces the expiry at once."""
    settings = Settings(database_url=postgres_url)
    user = f"cron{uuid.uuid4().hex[:8]}"
    store = await open_store(settings)
    try:
        key = SessionKey("app", user, "s")
        created = await store.create_session(
            key,
            ScopedDelta({}, {}, {}),
            time.time() - 10,
            Expiry(ttl_seconds=1),
            1 << 20,
            forget_expired_memories=False,
        )
        assert created is not None
    finally:
        await store.close()
    hub = ChangeHub()
    relay = await _connected(hub, asyncpg_dsn(postgres_url))
    try:
        with hub.watch("app", user, None) as waiter:
            assert await sweep(settings, open_store=open_store) == 0
            # Nothing else changes this user's sessions.
            await asyncio.wait_for(waiter.flag.wait(), 10)
    finally:
        await relay.close()


async def test_a_relay_closed_as_a_change_is_pending_ends(fresh_postgres_url: str) -> None:
    """Shutdown right after an append: the relay's wait for a change ends as
    it is cancelled. (Python 3.11's wait_for returned the change and lost the
    cancellation, and the relay outlived close(): a test's shutdown hung.)"""
    dsn = asyncpg_dsn(fresh_postgres_url)
    hubs = ChangeHub(), ChangeHub()
    first, second = [await _connected(hub, dsn) for hub in hubs]
    try:
        await _until(lambda: first.peers, "the first relay hearing the hello")
        for revision in range(1, 21):
            await asyncio.sleep(0.05)  # the relay back in its wait for a change
            hubs[1].publish(Change("app", "u", "s", "appended", revision))
        # A change pending, and the close in the same turn of the loop.
        hubs[0].publish(Change("app", "u", "s", "appended", 21))
        closing = asyncio.create_task(first.close())
        done, _ = await asyncio.wait([closing], timeout=15)
        assert done, "the relay did not end when closed"
    finally:
        await second.close()
