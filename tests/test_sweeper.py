"""The sweeper deletes expired sessions with their events (and, if asked,
their memories), in bounded batches, and nothing else; with several server
processes on one PostgreSQL database one sweeps at a time, under traffic,
and no other write is lost. `session-state sweep`: tests/test_lifecycle.py."""

import asyncio
import re
import time

import asyncpg
import httpx
import pytest

from session_state.core.config import Settings
from session_state.lifecycle.sweeper import Sweeper
from session_state.main import create_app
from session_state.sessions.domain import SessionKey
from session_state.stores import open_store

from .conftest import (
    Clock,
    ServerProcess,
    create_postgres_database,
    drop_postgres_database,
    migrate,
)
from .conftest import _async_url as async_url

APP = "/apps/travel"


def _user(user: str) -> str:
    return f"{APP}/users/{user}"


async def _seed(client: httpx.AsyncClient, user: str, session_id: str, events: int, **body) -> None:
    created = await client.post(f"{_user(user)}/sessions", json={"sessionId": session_id, **body})
    assert created.status_code == 201, created.text
    for index in range(events):
        event = {
            "author": "planner",
            "content": {"role": "model", "parts": [{"text": f"flight {session_id} {index}"}]},
            "actions": {"stateDelta": {"step": index, "user:seen": index}},
        }
        appended = await client.post(f"{_user(user)}/sessions/{session_id}/events", json=event)
        assert appended.status_code == 201, appended.text
    ingested = await client.post(f"{_user(user)}/memory", json={"sessionId": session_id})
    assert ingested.status_code == 200


async def _memory_sessions(client: httpx.AsyncClient, user: str) -> set[str]:
    found = await client.get(f"{_user(user)}/memory", params={"query": "flight", "limit": 100})
    return {
        re.match(r"flight (\S+)", memory["content"]["parts"][0]["text"])[1]
        for memory in found.json()["memories"]
    }


async def test_the_sweeper_deletes_expired_sessions_with_their_events_and_nothing_else(
    clocked_app, clocked_client, clock: Clock
):
    for number in range(4):
        await _seed(clocked_client, "ada", f"old-{number}", events=3, ttlSeconds=10)
    await _seed(clocked_client, "ada", "kept", events=2)
    await _seed(clocked_client, "bob", "later", events=2, ttlSeconds=1000)
    clock.advance(10)

    report = await clocked_app.state.sweeper.sweep_once()

    assert report.swept.sessions == 4 and report.swept.events == 12
    assert report.swept.memories == 0 and report.waiting == 0
    again = await clocked_app.state.sweeper.sweep_once()
    assert again.swept.sessions == 0
    assert (await clocked_client.get(f"{_user('ada')}/sessions/kept")).status_code == 200
    later = await clocked_client.get(f"{_user('bob')}/sessions/later")
    assert len(later.json()["events"]) == 2
    # User state written by the expired sessions' events is the user's: it stays.
    assert (await clocked_client.get(f"{_user('ada')}/state")).json()["state"] == {"seen": 1}
    # Memory is long-term by default.
    assert await _memory_sessions(clocked_client, "ada") == {
        "old-0", "old-1", "old-2", "old-3", "kept"
    }  # fmt: skip
    metrics = (await clocked_client.get("/metrics")).text
    assert re.search(r"^session_state_sessions_swept_total [1-9]", metrics, re.M)
    assert re.search(r'^session_state_swept_rows_total\{table="events"\} [1-9]', metrics, re.M)
    assert re.search(r'^session_state_sweeps_total\{outcome="swept"\} [1-9]', metrics, re.M)
    assert "session_state_sweep_duration_seconds_count" in metrics
    assert re.search(r"^session_state_expired_sessions 0", metrics, re.M)


async def test_a_sweep_takes_the_session_due_now_and_not_the_one_due_in_a_second(
    clocked_app, clocked_client, clock: Clock
):
    """The sweep's rule is the readers' rule: expired at its expiry time,
    not a moment before. One session expires exactly at the sweep, the
    other one second later."""
    await _seed(clocked_client, "ada", "due", events=2, ttlSeconds=10)
    await _seed(clocked_client, "ada", "soon", events=1, ttlSeconds=11)
    clock.advance(10)
    store = clocked_app.state.service.store
    assert await store.count_expired(clock()) == 1
    # Missing for readers from its expiry time, before any sweep.
    assert (await clocked_client.get(f"{_user('ada')}/sessions/due")).status_code == 404

    report = await clocked_app.state.sweeper.sweep_once()

    assert (report.swept.sessions, report.swept.events) == (1, 2)
    assert await store.read_session(SessionKey("travel", "ada", "due"), clock() - 1) is None
    soon = await clocked_client.get(f"{_user('ada')}/sessions/soon")
    assert soon.status_code == 200 and len(soon.json()["events"]) == 1
    clock.advance(1)
    assert (await clocked_app.state.sweeper.sweep_once()).swept.sessions == 1


async def test_memories_go_with_expired_sessions_when_configured(database_url, clock: Clock):
    settings = Settings(
        database_url=database_url, expired_session_memories="delete", sweep_interval_seconds=0
    )
    app = create_app(settings, clock=clock)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
    ):
        await _seed(client, "ada", "old", events=3, ttlSeconds=10)
        await _seed(client, "ada", "kept", events=2)
        clock.advance(10)
        report = await app.state.sweeper.sweep_once()
        assert report.swept.memories == 3
        assert await _memory_sessions(client, "ada") == {"kept"}
        # A new session taking an expired one's id takes its place whole:
        # with this setting, the old session's memories go too.
        await _seed(client, "ada", "reused", events=1, ttlSeconds=10)
        clock.advance(10)
        created = await client.post(f"{_user('ada')}/sessions", json={"sessionId": "reused"})
        assert created.status_code == 201
        assert await _memory_sessions(client, "ada") == {"kept"}


async def test_a_sweep_takes_bounded_batches_and_misses_nothing(
    clocked_app, clocked_client, clock: Clock
):
    for number in range(7):
        await _seed(clocked_client, "ada", f"old-{number}", events=number % 3, ttlSeconds=5)
    clock.advance(5)
    sweeper = Sweeper(clocked_app.state.service.store, clock=clock, batch_events=2)
    report = await sweeper.sweep_once()
    assert (report.swept.sessions, report.swept.events) == (7, 0 + 1 + 2 + 0 + 1 + 2 + 0)
    assert (await clocked_client.get(f"{_user('ada')}/sessions")).json()["sessions"] == []


async def test_while_another_process_sweeps_a_pass_is_skipped(postgres_url, clock: Clock):
    store = await open_store(Settings(database_url=postgres_url))
    holder = await asyncpg.connect(postgres_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        app = create_app(Settings(database_url=postgres_url, sweep_interval_seconds=0), clock=clock)
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
        ):
            await _seed(client, "ada", "old", events=1, ttlSeconds=5)
        clock.advance(5)
        sweeper = Sweeper(store, clock=clock)
        assert await holder.fetchval(
            "SELECT pg_try_advisory_lock(hashtextextended('session-state sweep', 0))"
        )
        skipped = await sweeper.sweep_once()
        assert skipped.swept is None and skipped.waiting == 1
        await holder.execute("SELECT pg_advisory_unlock_all()")
        swept = await sweeper.sweep_once()
        assert swept.swept.sessions == 1 and swept.waiting == 0
    finally:
        await holder.close()
        await store.close()


def _swept_total(server: ServerProcess) -> float:
    metrics = httpx.get(f"{server.base_url}/metrics").text
    match = re.search(r"^session_state_sessions_swept_total (\S+)", metrics, re.M)
    return float(match[1]) if match else 0.0


@pytest.fixture
def own_postgres_url(postgres_available: bool):
    """A migrated PostgreSQL database of this test's own: it counts every row."""
    if not postgres_available:
        pytest.skip("PostgreSQL not reachable")
    name = create_postgres_database("session_state_sweep")
    url = async_url(name)
    migrate(url)
    yield url
    drop_postgres_database(name)


async def test_two_servers_sweep_under_traffic_and_lose_nothing(own_postgres_url):
    servers = [
        ServerProcess(own_postgres_url, SESSION_STATE_SWEEP_INTERVAL_SECONDS="0.2").start()
        for _ in range(2)
    ]
    try:
        async with httpx.AsyncClient(timeout=30) as http:

            def url(number: int, path: str) -> str:
                return f"{servers[number % 2].base_url}{path}"

            expiring = [f"old-{number}" for number in range(120)]
            for number, session_id in enumerate(expiring):
                body = {"sessionId": session_id, "ttlSeconds": 0.5}
                created = await http.post(url(number, f"{_user('ada')}/sessions"), json=body)
                assert created.status_code == 201
            # Kept alive by appends (each pushes the 4 s timeout out; appends go
            # on for longer than that), and never expiring: both take appends
            # through either server while the servers sweep. (At 1.5 s, a stall
            # of a loaded machine once let an alive session expire.)
            alive = [f"alive-{number}" for number in range(6)]
            forever = [f"forever-{number}" for number in range(6)]
            for number, session_id in enumerate(alive + forever):
                body = {"sessionId": session_id} | (
                    {"ttlSeconds": 4} if session_id in alive else {}
                )
                created = await http.post(url(number, f"{_user('bob')}/sessions"), json=body)
                assert created.status_code == 201
            stored: dict[str, int] = dict.fromkeys(alive + forever, 0)
            # Expiring once the appends have begun: swept under traffic.
            late = [f"late-{number}" for number in range(10)]
            for number, session_id in enumerate(late):
                body = {"sessionId": session_id, "ttlSeconds": 2}
                created = await http.post(url(number, f"{_user('cy')}/sessions"), json=body)
                assert created.status_code == 201
            swept_before_traffic = sum(_swept_total(server) for server in servers)

            async def keep_appending(session_id: str) -> None:
                deadline = time.monotonic() + 6.0
                number = 0
                while time.monotonic() < deadline:
                    event = {"author": "user", "actions": {"stateDelta": {"n": number}}}
                    path = f"{_user('bob')}/sessions/{session_id}/events"
                    answer = await http.post(url(number, path), json=event)
                    assert answer.status_code == 201, (session_id, answer.text)
                    stored[session_id] += 1
                    number += 1
                    await asyncio.sleep(0.1)

            await asyncio.gather(*(keep_appending(session_id) for session_id in stored))
            swept_under_traffic = (
                sum(_swept_total(server) for server in servers) - swept_before_traffic
            )
        # The servers swept while the appends went on, the late sessions at least.
        assert swept_under_traffic >= len(late), swept_under_traffic

        deadline = time.monotonic() + 10
        while sum(_swept_total(server) for server in servers) < len(expiring + late):
            assert time.monotonic() < deadline, "the expired sessions were not all swept"
            await asyncio.sleep(0.2)
        # Each expired session was swept once, by one of the two.
        assert sum(_swept_total(server) for server in servers) == len(expiring + late)
        connection = await asyncpg.connect(own_postgres_url.replace("+asyncpg", ""))
        try:
            rows = await connection.fetch("SELECT id, revision FROM sessions ORDER BY id")
            counts = dict(
                await connection.fetch(
                    "SELECT session_id, count(*) FROM events GROUP BY session_id"
                )
            )
        finally:
            await connection.close()
        assert {row["id"]: row["revision"] for row in rows} == stored
        assert {session_id: counts[session_id] for session_id in stored} == stored
    finally:
        for server in servers:
            server.stop()
