"""One pool per process on PostgreSQL: the connections that serve appends and
session reads are the pool's, bounded by SESSION_STATE_DB_POOL_SIZE plus
SESSION_STATE_DB_MAX_OVERFLOW and counted by the pool gauge like every other
request's. (Before, appends and reads had an asyncpg pool of their own: a
process could open twice the configured connections, and the gauge never
saw the connections that served most requests.)"""

import asyncio
import re

import asyncpg
import httpx

from session_state.backends.postgresql import PostgresStore
from session_state.core.config import Settings
from session_state.main import create_app

POOL_SIZE = 2
MAX_OVERFLOW = 1
BASE = "/apps/pool/users/u/sessions"
_IN_USE = re.compile(r"^session_state_db_pool_connections_in_use(?:\{[^}]*\})? (\S+)$", re.M)


async def _server_connections(admin: asyncpg.Connection, database: str) -> int:
    count: int = await admin.fetchval(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = $1 AND application_name = 'session-state'",
        database,
    )
    return count


async def test_appends_reads_and_the_rest_share_one_bounded_counted_pool(postgres_url: str):
    # A generous timeout: this is about the pool's bound, and on a loaded CI
    # machine the first connection once took longer than the default 5 s.
    settings = Settings(
        database_url=postgres_url,
        db_pool_size=POOL_SIZE,
        db_max_overflow=MAX_OVERFLOW,
        db_timeout_seconds=60,
    )
    app = create_app(settings)
    database = postgres_url.rsplit("/", 1)[1]
    admin = await asyncpg.connect(
        postgres_url.replace("postgresql+asyncpg://", "postgresql://"),
        server_settings={"application_name": "pool-test-observer"},
    )
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http,
    ):
        sessions = [f"s{number}" for number in range(8)]
        for session_id in sessions:
            assert (await http.post(BASE, json={"sessionId": session_id})).status_code == 201

        busy = True
        gauge_seen: list[float] = []
        connections_seen: list[int] = []

        async def observe() -> None:
            while busy:
                metrics = (await http.get("/metrics")).text
                gauge_seen.extend(float(value) for value in _IN_USE.findall(metrics))
                connections_seen.append(await _server_connections(admin, database))
                await asyncio.sleep(0.002)

        async def turn(session_id: str, number: int) -> None:
            event = {
                "author": "agent",
                "invocationId": f"i{number}",
                "actions": {"stateDelta": {"n": number, "user:n": number, "app:n": number}},
            }
            appended = await http.post(f"{BASE}/{session_id}/events", json=event)
            assert appended.status_code == 201, appended.text
            assert (await http.get(f"{BASE}/{session_id}")).status_code == 200

        async def append_and_read() -> None:
            await asyncio.gather(
                *(turn(session_id, n) for n in range(12) for session_id in sessions)
            )

        observer = asyncio.create_task(observe())
        # Appends and session reads only: the gauge must see their connections.
        await append_and_read()
        hot_path_gauge = max(gauge_seen, default=0.0)
        # Then everything at once: lists, events pages and memory beside them.
        await asyncio.gather(
            append_and_read(),
            *(http.get(BASE) for _ in range(10)),
            *(http.get(f"{BASE}/{session_id}/events") for session_id in sessions),
            *(http.get("/apps/pool/users/u/memory", params={"query": "x"}) for _ in range(10)),
        )
        busy = False
        await observer

        assert hot_path_gauge >= 1
        assert max(gauge_seen) <= POOL_SIZE + MAX_OVERFLOW
        assert 1 <= max(connections_seen) <= POOL_SIZE + MAX_OVERFLOW
        final = (await http.get("/metrics")).text
        assert [float(value) for value in _IN_USE.findall(final)] == [0.0]
    await admin.close()


async def test_grouped_appends_keep_their_plans_on_connections_of_their_own(postgres_url: str):
    """Batches of appends go on connections taken out of the configured
    number (still the bound on a process's connections), where PostgreSQL
    keeps the append statements' generic plans: planned anew for every
    batch, they cost about a millisecond of the database's CPU each time.
    Every other request's connections plan as PostgreSQL chooses."""
    settings = Settings(database_url=postgres_url, db_pool_size=4, db_max_overflow=1)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        store = app.state.service.store
        assert store.batch_pool is not store.pool
        assert store.pool.get_max_size() + store.batch_pool.get_max_size() == 5
        async with store.batch_pool.acquire() as connection:
            assert await connection.fetchval("SHOW plan_cache_mode") == "force_generic_plan"
        async with store.pool.acquire() as connection:
            assert await connection.fetchval("SHOW plan_cache_mode") == "auto"

    # The replicas' store only reads: all its connections serve reads.
    replica = await PostgresStore.connect(settings, database_url=postgres_url)
    try:
        assert replica.batch_pool is replica.pool
        assert replica.pool.get_max_size() == 5
    finally:
        await replica.close()

    unbatched = create_app(settings.model_copy(update={"append_batch_size": 1}))
    async with unbatched.router.lifespan_context(unbatched):
        store = unbatched.state.service.store
        assert store.batch_pool is store.pool
        assert store.pool.get_max_size() == 5
