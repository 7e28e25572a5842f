"""Reads served by a streaming replica (SESSION_STATE_READ_DATABASE_URL),
never older than what the reader saw, never while the replica lags past
SESSION_STATE_MAX_REPLICA_LAG_SECONDS, never an error when it is down.

A real primary and replica of PostgreSQL 15 (tests/replica_pair.py). Which
server answered is read from `session_state_reads_total{target}`.
"""

import asyncio
import contextlib
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import httpx
import pytest
from prometheus_client import REGISTRY

from session_state.cli.reports import serving
from session_state.core.config import Settings
from session_state.main import create_app
from session_state.sessions.replica import Replica
from session_state_client import AsyncSessionStateClient, SessionStateClient
from session_state_client._revisions import SeenRevisions
from tests.conftest import ServerProcess, free_port, migrate, run_blocking, unavailable
from tests.replica_pair import ReplicaPair, missing_tools

APP = "replicas"
WRITERS = 4
APPENDS_PER_WRITER = 40
# Generous: replay on one machine takes milliseconds.
CATCH_UP_SECONDS = 15.0


@pytest.fixture(scope="module")
def pair() -> Iterator[ReplicaPair]:
    missing = missing_tools()
    if missing is not None:
        unavailable("the replica tests (PostgreSQL 15)", missing)
    replicas = ReplicaPair(free_port(), free_port())
    try:
        replicas.start()
        migrate(replicas.primary_url.replace("postgresql://", "postgresql+asyncpg://"))
        yield replicas
    finally:
        replicas.stop()


def _settings(pair: ReplicaPair, max_lag: float = 5.0) -> Settings:
    return Settings(
        database_url=pair.primary_url,
        read_database_url=pair.replica_url,
        max_replica_lag_seconds=max_lag,
        sweep_interval_seconds=0,
        db_pool_size=4,
    )


@asynccontextmanager
async def _served(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, Replica]]:
    """The app in this process, and its replica."""
    app = create_app(settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as http,
    ):
        replica = app.state.service.reads.replica
        assert replica is not None
        yield http, replica


def _reads(target: str) -> float:
    return REGISTRY.get_sample_value("session_state_reads_total", {"target": target}) or 0.0


class Answered:
    """How many reads each side answered since it was made."""

    def __init__(self) -> None:
        self.replica, self.primary = _reads("replica"), _reads("primary")

    def by(self) -> tuple[float, float]:
        return _reads("replica") - self.replica, _reads("primary") - self.primary


async def _eventually(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + CATCH_UP_SECONDS
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {CATCH_UP_SECONDS} s: {what}")
        await asyncio.sleep(0.05)


def _session_path(user: str, session: str) -> str:
    return f"/apps/{APP}/users/{user}/sessions/{session}"


async def _new_session(
    http: httpx.AsyncClient, text: str = "hello replicas"
) -> tuple[str, str, int]:
    """A session with one event whose text memory takes: (user, id, revision)."""
    user, session = f"u-{uuid.uuid4().hex[:8]}", "s1"
    created = await http.post(f"/apps/{APP}/users/{user}/sessions", json={"sessionId": session})
    assert created.status_code == 201
    appended = await http.post(
        _session_path(user, session) + "/events",
        json={
            "id": uuid.uuid4().hex,
            "author": "user",
            "invocationId": "i1",
            "timestamp": time.time(),
            "content": {"role": "user", "parts": [{"text": text}]},
        },
    )
    assert appended.status_code == 201
    ingested = await http.post(f"/apps/{APP}/users/{user}/memory", json={"sessionId": session})
    assert ingested.status_code == 200, ingested.text
    return user, session, _etag(appended)


async def _append(http: httpx.AsyncClient, user: str, session: str) -> int:
    answer = await http.post(
        _session_path(user, session) + "/events",
        json={"id": uuid.uuid4().hex, "author": "agent", "invocationId": "i2"},
    )
    assert answer.status_code == 201
    return _etag(answer)


def _etag(answer: httpx.Response) -> int:
    return int(answer.headers["etag"].strip('"'))


async def _replica_serves(http: httpx.AsyncClient, user: str, session: str, revision: int) -> None:
    """Waits until a read needing `revision` is answered by the replica."""

    async def served() -> bool:
        answered = Answered()
        answer = await http.get(_session_path(user, session), params={"minRevision": revision})
        assert answer.status_code == 200 and _etag(answer) >= revision
        return answered.by()[0] == 1

    await _eventually(served, f"the replica answers a read of revision {revision}")


def _every_read(user: str, session: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (_session_path(user, session), {}),
        (_session_path(user, session) + "/events", {}),
        (f"/apps/{APP}/users/{user}/sessions", {}),
        (f"/apps/{APP}/sessions", {"pageSize": 5}),
        (f"/apps/{APP}/users/{user}/memory", {"query": "replicas"}),
        (f"/apps/{APP}/users/{user}/memory/entries", {}),
    ]


async def test_a_caught_up_replica_answers_reads_lists_event_pages_and_searches(
    pair: ReplicaPair,
) -> None:
    async with _served(_settings(pair)) as (http, replica):
        user, session, revision = await _new_session(http)
        await _replica_serves(http, user, session, revision)
        assert await replica.measure() is not None
        answered = Answered()
        for path, params in _every_read(user, session):
            answer = await http.get(path, params=params)
            assert answer.status_code == 200, answer.text
        found = await http.get(f"/apps/{APP}/users/{user}/memory", params={"query": "replicas"})
        assert len(found.json()["memories"]) == 1
        assert answered.by() == (len(_every_read(user, session)) + 1, 0)


async def test_a_read_with_a_revision_the_replica_lacks_goes_to_the_primary(
    pair: ReplicaPair,
) -> None:
    # A bound no measurement here reaches: the replica stays usable.
    async with (
        _served(_settings(pair, max_lag=60.0)) as (http, replica),
        _replay_paused(pair) as paused,
    ):
        user, session, before = await _new_session(http)
        await _replica_serves(http, user, session, before)
        await paused.pause()
        newer = await _append(http, user, session)
        assert await replica.measure() is not None
        assert replica.is_usable()

        # The replica may answer, and has not replayed the append: a plain
        # read gets the older revision from it...
        answered = Answered()
        plain = await http.get(_session_path(user, session))
        assert _etag(plain) == before
        assert answered.by() == (1, 0)

        # ...and a read naming the newer revision falls back to the primary.
        answered = Answered()
        read = await http.get(_session_path(user, session), params={"minRevision": newer})
        assert _etag(read) == newer and len(read.json()["events"]) == 2
        page = await http.get(
            _session_path(user, session) + "/events", params={"minRevision": newer}
        )
        assert len(page.json()["events"]) == 2
        assert answered.by() == (0, 2)


async def test_reads_past_the_lag_go_to_the_primary(pair: ReplicaPair) -> None:
    async with (
        _served(_settings(pair, max_lag=1.0)) as (http, replica),
        _replay_paused(pair) as paused,
    ):
        user, session, before = await _new_session(http)
        await _replica_serves(http, user, session, before)
        await paused.pause()
        newer = await _append(http, user, session)

        # Once its lag passes the bound, plain reads go to the primary.
        async def lagging() -> bool:
            lag = await replica.measure()
            return lag is not None and lag > 1.0

        await _eventually(lagging, "the paused replica's lag passes 1 s")
        assert not replica.is_usable()
        answered = Answered()
        plain = await http.get(_session_path(user, session))
        assert _etag(plain) == newer
        assert answered.by() == (0, 1)

        # Replaying again, the replica catches up and answers again.
        await paused.resume()
        await _replica_serves(http, user, session, newer)
        assert before < newer


async def test_a_stopped_replica_costs_reads_on_the_primary_never_an_error(
    pair: ReplicaPair,
) -> None:
    async with _served(_settings(pair)) as (http, replica):
        user, session, revision = await _new_session(http)
        await _replica_serves(http, user, session, revision)
        pair.stop_replica()
        try:
            answered = Answered()
            for path, params in _every_read(user, session):
                answer = await http.get(path, params=params)
                assert answer.status_code == 200, answer.text
            assert answered.by() == (0, len(_every_read(user, session)))
            assert not replica.is_usable()
            assert await replica.measure() is None
        finally:
            pair.start_replica()
        await _replica_serves(http, user, session, revision)


async def _write_and_read_back(base_url: str, pair: ReplicaPair) -> None:
    """WRITERS writers at once, each appending to a session of its own and
    reading it back after each append through one client. Replay is paused
    for a while midway (the replica stays within its lag bound): the reads
    then need revisions the replica lacks."""
    appended = 0
    # (count, event): each event is set once that many appends were made.
    waits: list[tuple[int, asyncio.Event]] = []

    async def until_appended(count: int, at_most_seconds: float) -> None:
        reached = asyncio.Event()
        waits.append((count, reached))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(reached.wait(), at_most_seconds)

    async with AsyncSessionStateClient(base_url=base_url, max_retries=0) as client:

        async def write_and_read(writer: int) -> None:
            nonlocal appended
            user = f"w{writer}-{uuid.uuid4().hex[:6]}"
            await client.create_session(app_name=APP, user_id=user, session_id="s")
            for turn in range(APPENDS_PER_WRITER):
                event = {"id": f"e{turn}", "author": "agent", "invocationId": "i"}
                stored = await client.append_event(
                    app_name=APP, user_id=user, session_id="s", event=event
                )
                appended += 1
                for count, reached in waits:
                    if appended >= count:
                        reached.set()
                read = await client.get_session(app_name=APP, user_id=user, session_id="s")
                assert read.revision is not None and stored.revision is not None
                assert read.revision >= stored.revision
                assert read.events[-1]["id"] == f"e{turn}"
                assert len(read.events) == turn + 1

        async def pause_replay_midway() -> None:
            async with _replay_paused(pair) as replay:
                await until_appended(WRITERS * APPENDS_PER_WRITER // 4, CATCH_UP_SECONDS * 4)
                await replay.pause()
                # A few appends each while paused, well within the lag bound.
                await until_appended(appended + 3 * WRITERS, 2.0)

        await asyncio.gather(
            pause_replay_midway(), *(write_and_read(writer) for writer in range(WRITERS))
        )


def _served_by(base_url: str) -> dict[str, float]:
    metrics = httpx.get(f"{base_url}/metrics").text
    return {
        target: float(count)
        for target, count in re.findall(
            r'session_state_reads_total\{target="(\w+)"\} ([0-9.e+]+)', metrics
        )
    }


async def _until_the_replica_answers(base_url: str) -> None:
    """Reads until the server's replica answers one: its lag is measured."""
    async with httpx.AsyncClient(base_url=base_url) as http:
        user = f"warm-{uuid.uuid4().hex[:6]}"
        created = await http.post(f"/apps/{APP}/users/{user}/sessions", json={"sessionId": "s"})
        assert created.status_code == 201

        async def answered() -> bool:
            before = _served_by(base_url).get("replica", 0)
            assert (await http.get(_session_path(user, "s"))).status_code == 200
            return _served_by(base_url).get("replica", 0) > before

        await _eventually(answered, "the replica answers a read")


def test_clients_read_their_own_writes_under_concurrent_writes(pair: ReplicaPair) -> None:
    """The client sends the revision its append returned: no read is older,
    though the replica (usable throughout) lagged behind some appends and
    the primary answered those reads."""
    server = ServerProcess(
        pair.primary_url,
        SESSION_STATE_READ_DATABASE_URL=pair.replica_url,
        SESSION_STATE_SWEEP_INTERVAL_SECONDS="0",
    ).start()
    try:
        run_blocking(_until_the_replica_answers(server.base_url))
        before = _served_by(server.base_url)
        run_blocking(_write_and_read_back(server.base_url, pair))
        served = _served_by(server.base_url)
    finally:
        server.stop()
    replica, primary = (
        served.get(side, 0) - before.get(side, 0) for side in ("replica", "primary")
    )
    # Both sides answered: the replica, and the primary in its place for
    # the reads of revisions it had not replayed (the fallback was taken).
    assert replica > 0 and primary > 0, served
    assert replica + primary == WRITERS * APPENDS_PER_WRITER
    print(f"reads answered: replica {replica}, primary {primary}")


def test_the_client_sends_the_newest_revision_it_saw_of_a_session() -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.method == "DELETE":
            return httpx.Response(204)
        revision = {"POST": 7, "GET": 5}[request.method]
        body = {"id": "e", "author": "a"} if request.method == "POST" else _session_body()
        return httpx.Response(200, json=body, headers={"ETag": f'"{revision}"'})

    http = httpx.Client(transport=httpx.MockTransport(answer), base_url="http://test")
    with SessionStateClient(http_client=http) as client:
        client.get_session(app_name="a", user_id="u", session_id="s")
        client.append_event(app_name="a", user_id="u", session_id="s", event={"author": "a"})
        # An older revision read meanwhile (from a replica) does not lower it.
        client.get_session(app_name="a", user_id="u", session_id="s")
        client.list_events(app_name="a", user_id="u", session_id="s")
        client.get_session(app_name="a", user_id="u", session_id="other")
        client.delete_session(app_name="a", user_id="u", session_id="s")
        client.get_session(app_name="a", user_id="u", session_id="s")
    reads = [request.url.params.get("minRevision") for request in sent if request.method == "GET"]
    assert reads == [None, "7", "7", None, None]


def _session_body() -> dict[str, Any]:
    return {"id": "s", "appName": "a", "userId": "u", "state": {}, "events": [],
            "lastUpdateTime": 1.0}  # fmt: skip


class _ReplayControl:
    def __init__(self, url: str) -> None:
        self.url = url

    async def _run(self, statement: str) -> Any:
        connection = await asyncpg.connect(self.url)
        try:
            return await connection.fetchval(statement)
        finally:
            await connection.close()

    async def pause(self) -> None:
        await self._run("SELECT pg_wal_replay_pause()")

        async def paused() -> bool:
            return await self._run("SELECT pg_get_wal_replay_pause_state()") == "paused"

        await _eventually(paused, "the replica's replay pauses")

    async def resume(self) -> None:
        await self._run("SELECT pg_wal_replay_resume()")


@asynccontextmanager
async def _replay_paused(pair: ReplicaPair) -> AsyncIterator[_ReplayControl]:
    control = _ReplayControl(pair.replica_url)
    try:
        yield control
    finally:
        await control.resume()


def test_the_client_keeps_the_newest_revision_from_many_threads_in_bounded_memory() -> None:
    seen = SeenRevisions(capacity=1000)

    def see(thread: int) -> None:
        # Answers arrive out of order: the newest must stay.
        for revision in (5, 9, 7) if thread % 2 else (8, 6, 9):
            for session in range(150):
                seen.see("note", f"/s{session}", revision)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(see, range(8)))
    assert [seen.get(f"/s{session}") for session in range(150)] == [9] * 150
    seen.see("restart", "/s1", 0)  # created again after a delete
    assert seen.get("/s1") == 0

    bounded = SeenRevisions(capacity=100)
    for session in range(150):
        bounded.see("note", f"/s{session}", 1)
    bounded.see("note", "/s50", 2)  # used: kept over /s51
    bounded.see("note", "/s150", 1)
    assert bounded.get("/s49") is None and bounded.get("/s51") is None
    assert bounded.get("/s50") == 2 and bounded.get("/s150") == 1
    assert len(bounded._revisions) == 100


def test_the_start_up_line_names_the_replicas_never_their_password() -> None:
    settings = Settings(
        database_url="postgresql://app:secret@db1:5432/sessions",
        read_database_url="postgresql://app:secret@r1:5432,r2:5433/sessions",
        max_replica_lag_seconds=2.5,
    )
    message, fields = serving(settings, 0, None)
    assert message.endswith(
        "; reads from PostgreSQL r1:5432,r2:5433/sessions while at most 2.5 s behind"
    )
    assert fields["read_database"] == "PostgreSQL r1:5432,r2:5433/sessions"
    assert "secret" not in message
