"""The async client's appends sent together (session_state_client._coalescing)
against a started server, over real sockets: each caller gets the answer and
the exception it would have had alone, a session's appends keep their order,
an append cancelled while it waits is never sent, and a server without the
route gets single appends."""

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
import uvicorn
from google.adk.events import Event, EventActions

from session_state.core.config import Settings
from session_state.main import create_app
from session_state_client import (
    AsyncSessionStateClient,
    EventIdConflictError,
    NotFoundError,
    StaleSessionError,
    ValidationError,
)
from session_state_client.adk import HttpSessionService
from tests.client.own_loops import runs_cleanly
from tests.conftest import ServerProcess, free_port
from tests.test_observability import answered_on

APPENDS_ROUTE = "/apps/{app_name}/appends"


async def _appends_requests(base_url: str) -> float:
    """Requests the server answered on the route of appends to several sessions."""
    return await answered_on(base_url, APPENDS_ROUTE)


async def _create(client: AsyncSessionStateClient, app: str, sessions: list[str]) -> None:
    for session in sessions:
        await client.create_session(app_name=app, user_id="u", session_id=session)


async def test_appends_at_once_go_together_and_each_gets_its_own_answer(server: ServerProcess):
    app = "together"
    sessions = [f"s{index}" for index in range(24)]
    async with AsyncSessionStateClient(base_url=server.base_url) as client:
        await _create(client, app, [*sessions, "stale", "conflicted"])
        stored_first = {"id": "c0", "author": "agent"}
        await client.append_event(
            app_name=app, user_id="u", session_id="conflicted", event=stored_first
        )
        requests_before = await _appends_requests(server.base_url)

        async def conversation(session: str) -> list[int | None]:
            revisions = []
            for step in range(6):
                event = {
                    "id": f"{session}-{step}",
                    "author": "agent",
                    "actions": {"stateDelta": {"step": step, "app:last": session}},
                }
                appended = await client.append_event(
                    app_name=app, user_id="u", session_id=session, event=event
                )
                revisions.append(appended.revision)
            return revisions

        async def failing(kind: str) -> BaseException | None:
            try:
                if kind == "missing":
                    event: dict[str, Any] = {"id": "m", "author": "agent"}
                    await client.append_event(
                        app_name=app, user_id="u", session_id="missing", event=event
                    )
                elif kind == "stale":
                    await client.append_event(
                        app_name=app,
                        user_id="u",
                        session_id="stale",
                        event={"id": "late", "author": "agent"},
                        if_match=9,
                    )
                elif kind == "conflict":
                    await client.append_event(
                        app_name=app,
                        user_id="u",
                        session_id="conflicted",
                        event={"id": "c0", "author": "someone else"},
                    )
                else:
                    await client.append_event(
                        app_name=app, user_id="u", session_id="s1", event={"id": "bad"}
                    )
            except Exception as error:
                return error
            return None

        kinds = ["missing", "stale", "conflict", "invalid"] * 3
        outcomes = await asyncio.gather(
            *(conversation(session) for session in sessions), *(failing(kind) for kind in kinds)
        )
        requests = await _appends_requests(server.base_url) - requests_before
        for revisions in outcomes[: len(sessions)]:
            assert revisions == [1, 2, 3, 4, 5, 6]
        expected = {
            "missing": NotFoundError,
            "stale": StaleSessionError,
            "conflict": EventIdConflictError,
            "invalid": ValidationError,
        }
        for kind, error in zip(kinds, outcomes[len(sessions) :], strict=True):
            assert type(error) is expected[kind], (kind, error)
        for session in sessions:
            stored = await client.get_session(app_name=app, user_id="u", session_id=session)
            assert stored is not None
            assert [event["id"] for event in stored.events] == [f"{session}-{s}" for s in range(6)]
            assert stored.state["step"] == 5
        # Sent together: fewer requests than appends.
        assert requests >= 1


async def test_many_appends_to_a_few_sessions_in_one_turn_keep_each_sessions_order(
    server: ServerProcess,
):
    """Appends to three sessions made in one turn, with four requests free:
    what gathered is split among requests, each session's appends in one of
    them (no more requests than sessions), and every session's events are
    stored in the order its appends were made. A session's first appends
    are the big ones: a request holding only its later ones would be stored
    first."""
    app = "one-turn"
    counts = {"a": 12, "b": 6, "c": 6}
    async with AsyncSessionStateClient(base_url=server.base_url) as client:
        client._appends.gathering.max_in_flight = 4
        client._appends.min_part = 1  # split among every free request
        await _create(client, app, list(counts))
        requests_before = await _appends_requests(server.base_url)
        made = [(session, step) for session, count in counts.items() for step in range(count)]

        def event(session: str, step: int) -> dict[str, Any]:
            padding = "x" * (200_000 if step < counts[session] // 2 else 10)
            return {
                "id": f"{session}-{step}",
                "author": "agent",
                "customMetadata": {"padding": padding},
                "actions": {"stateDelta": {"step": step}},
            }

        results = await asyncio.gather(
            *(
                client.append_event(
                    app_name=app, user_id="u", session_id=session, event=event(session, step)
                )
                for session, step in made
            )
        )
        requests = await _appends_requests(server.base_url) - requests_before
        for session, count in counts.items():
            stored = await client.get_session(app_name=app, user_id="u", session_id=session)
            assert stored is not None
            assert [e["id"] for e in stored.events] == [f"{session}-{s}" for s in range(count)]
            assert stored.state["step"] == count - 1
    # Each append's answer is its own revision, in the order made.
    assert [result.revision for result in results] == [step + 1 for _, step in made]
    # Together, and split: more than one request, no more than the sessions.
    assert 2 <= requests <= len(counts), requests


@contextlib.asynccontextmanager
async def _held_at_the_database(postgres_url: str, app: str) -> AsyncIterator[asyncpg.Connection]:
    """The app key `app:gate` locked by another transaction: appends that
    change it wait at the database until this ends."""
    dsn = postgres_url.replace("postgresql+asyncpg://", "postgresql://")
    holder = await asyncpg.connect(dsn)
    try:
        async with holder.transaction():
            await holder.execute(
                "SELECT 1 FROM app_states WHERE app_name = $1 AND key = 'gate' FOR UPDATE", app
            )
            yield holder
    finally:
        await holder.close()


async def _waiting_for_a_lock(postgres_url: str, count: int) -> None:
    dsn = postgres_url.replace("postgresql+asyncpg://", "postgresql://")
    observer = await asyncpg.connect(dsn)
    try:
        for _ in range(500):
            waiting = await observer.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'session-state' "
                "AND wait_event_type = 'Lock' AND datname = current_database()"
            )
            if waiting >= count:
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"{count} appends held: not within 10 s")
    finally:
        await observer.close()


async def _until_waiting(client: AsyncSessionStateClient, app: str, count: int) -> None:
    """Until `count` appends of `app` wait in the client's coalescer."""
    apps = client._appends.gathering._by_loop[asyncio.get_running_loop()]
    for _ in range(500):
        if app in apps and len(apps[app].waiting) == count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{count} appends waiting: not within 5 s")


async def test_an_append_cancelled_while_it_waits_is_never_sent(
    postgresql_server: ServerProcess, postgres_url: str
):
    app = "cancelled"
    gate = {"author": "agent", "actions": {"stateDelta": {"app:gate": 1}}}
    async with AsyncSessionStateClient(base_url=postgresql_server.base_url) as client:
        await _create(client, app, ["gate0", "gate1", "gone", "kept"])
        await client.append_event(app_name=app, user_id="u", session_id="gate0", event=gate)

        def append(session: str, event: dict[str, Any]) -> "asyncio.Task[Any]":
            return asyncio.create_task(
                client.append_event(app_name=app, user_id="u", session_id=session, event=event)
            )

        async with _held_at_the_database(postgres_url, app):
            # The app's two requests in flight, both held at the database
            # (each made in a turn of its own, so each goes alone).
            leads = [append("gate0", dict(gate))]
            await _waiting_for_a_lock(postgres_url, 1)
            leads.append(append("gate1", dict(gate)))
            await _waiting_for_a_lock(postgres_url, 2)
            gone = append("gone", {"id": "gone", "author": "agent"})
            kept = append("kept", {"id": "kept", "author": "agent"})
            await _until_waiting(client, app, 2)  # both behind the two in flight
            gone.cancel()
        assert [(await lead).revision for lead in leads] == [2, 1]
        assert (await kept).revision == 1
        with pytest.raises(asyncio.CancelledError):
            await gone
        stored = await client.get_session(app_name=app, user_id="u", session_id="gone")
        assert stored is not None and stored.events == []


def _as_an_older_server(settings: Settings) -> Any:
    """The app as a server from before the route of appends to several
    sessions answers it: its 404 for a path it does not know."""
    app = create_app(settings)

    async def older(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].endswith("/appends"):
            scope = {**scope, "path": "/no-such-route", "raw_path": b"/no-such-route"}
        await app(scope, receive, send)

    return older


@contextlib.asynccontextmanager
async def _served(app: Any) -> AsyncIterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not serving.done(), "the server stopped"
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await serving


async def test_a_server_without_the_route_gets_single_appends(settings: Settings):
    app = "older"
    sessions = [f"s{index}" for index in range(10)]
    served = _as_an_older_server(settings)
    async with _served(served) as base_url, AsyncSessionStateClient(base_url=base_url) as client:
        await _create(client, app, sessions)

        async def conversation(session: str) -> None:
            for step in range(4):
                event = {"id": f"{session}-{step}", "author": "agent"}
                await client.append_event(
                    app_name=app, user_id="u", session_id=session, event=event
                )

        await asyncio.gather(*(conversation(session) for session in sessions))
        # It asked once (404), and sent every append alone from then on.
        assert client._appends.server_takes_many is False
        for session in sessions:
            stored = await client.get_session(app_name=app, user_id="u", session_id=session)
            assert stored is not None
            assert [event["id"] for event in stored.events] == [f"{session}-{s}" for s in range(4)]


def _behind_a_gateway_refusing_appends(
    settings: Settings, status: int, code: Any
) -> tuple[Any, list[str]]:
    """The app behind a gateway that refuses every request of appends to
    several sessions with a problem of its own (not an unknown route), and
    passes the rest on. Returns the app and the paths it was asked for."""
    app = create_app(settings)
    asked: list[str] = []

    async def gateway(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            asked.append(scope["path"])
        if scope["type"] == "http" and scope["path"].endswith("/appends"):
            body = json.dumps({"title": "Tenant unknown", "status": status, "code": code}).encode()
            headers = [(b"content-type", b"application/problem+json")]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return gateway, asked


@pytest.mark.parametrize("status", [404, 405])
@pytest.mark.parametrize("code", ["tenant_not_found", {"not": "a string"}, ["nor", "this"]])
async def test_a_refusal_with_a_problem_of_its_own_is_not_taken_for_an_older_server(
    settings: Settings, status: int, code: Any
):
    """A whole-request 404 or 405 whose problem names a cause of its own is
    the batch's answer: each append raises it, none is sent again alone, and
    the appends of later turns still go together. A code that is not even a
    string (a gateway's own JSON) is told apart the same way."""
    app = "gated"
    sessions = [f"s{index}" for index in range(4)]
    served, asked = _behind_a_gateway_refusing_appends(settings, status, code)
    async with _served(served) as base_url, AsyncSessionStateClient(base_url=base_url) as client:
        await _create(client, app, sessions)
        for _ in range(2):
            asked.clear()
            outcomes = await asyncio.gather(
                *(
                    client.append_event(
                        app_name=app, user_id="u", session_id=session, event={"author": "agent"}
                    )
                    for session in sessions
                ),
                return_exceptions=True,
            )
            assert all(getattr(error, "code", None) == code for error in outcomes), outcomes
            assert status != 404 or all(isinstance(error, NotFoundError) for error in outcomes)
            # One request for the turn's four, refused; nothing sent alone.
            assert [path.rsplit("/", 1)[-1] for path in asked] == ["appends"]
        assert client._appends.server_takes_many is True
        for session in sessions:
            stored = await client.get_session(app_name=app, user_id="u", session_id=session)
            assert stored is not None and stored.events == []


async def test_adk_conversations_at_once_lose_nothing(server: ServerProcess):
    """ADK's own objects through the adapter, many sessions appending at
    once (an agent server's conversations): every event and key kept."""
    service = HttpSessionService(base_url=server.base_url)
    requests_before = await _appends_requests(server.base_url)
    try:
        adk_sessions = [
            await service.create_session(app_name="adk-at-once", user_id=f"u{i % 3}")
            for i in range(16)
        ]

        async def conversation(index: int) -> None:
            session = adk_sessions[index]
            for step in range(8):
                delta = {"step": step, f"user:last{index}": step, "temp:scratch": step}
                event = Event(
                    author="agent",
                    invocation_id=f"i{step}",
                    actions=EventActions(state_delta=delta),
                )
                await service.append_event(session, event)

        await asyncio.gather(*(conversation(index) for index in range(16)))
        assert await _appends_requests(server.base_url) > requests_before
        for index, session in enumerate(adk_sessions):
            stored = await service.get_session(
                app_name="adk-at-once", user_id=session.user_id, session_id=session.id
            )
            assert stored is not None
            assert [event.invocation_id for event in stored.events] == [f"i{s}" for s in range(8)]
            assert stored.state["step"] == 7 and stored.state[f"user:last{index}"] == 7
            assert "temp:scratch" not in stored.state
            assert [event.id for event in stored.events] == [e.id for e in session.events]
    finally:
        await service.close()


# Threads, each on an event loop of its own (as ADK's sync Runner.run makes
# one per call), append at once through one client: each loop's appends go
# together, and nothing is left behind when a loop ends (its connections
# are closed then; no task of the coalescer is pending) or when the client
# is closed from yet another loop: Python's dev mode prints no warning.
_THREADS_PROGRAM = """
import asyncio, sys, threading
from session_state_client import AsyncSessionStateClient

base_url, app = sys.argv[1], sys.argv[2]
client = AsyncSessionStateClient(base_url=base_url)
failures = []

def thread(number):
    async def conversation(session):
        await client.create_session(app_name=app, user_id="u", session_id=session)
        for step in range(5):
            event = {"id": f"{session}-{step}", "author": "agent"}
            await client.append_event(app_name=app, user_id="u", session_id=session, event=event)

    async def run():
        await asyncio.gather(*(conversation(f"t{number}-s{n}") for n in range(8)))

    try:
        asyncio.run(run())
        asyncio.run(round_two(number))  # a second loop on the thread, as a second Runner.run
    except BaseException as error:
        failures.append(repr(error))

async def round_two(number):
    await asyncio.gather(*(
        client.append_event(app_name=app, user_id="u", session_id=f"t{number}-s{n}",
                            event={"id": f"t{number}-s{n}-again", "author": "agent"})
        for n in range(8)
    ))

threads = [threading.Thread(target=thread, args=(n,)) for n in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
asyncio.run(client.close())
print("failures:", failures)
print("done")
"""


def test_threads_each_on_its_own_loop_append_together_and_close_cleanly(server: ServerProcess):
    app = "threads-together"
    requests_before = asyncio.run(_appends_requests(server.base_url))
    runs_cleanly(_THREADS_PROGRAM, server.base_url, app)
    assert asyncio.run(_appends_requests(server.base_url)) > requests_before

    async def check() -> None:
        async with AsyncSessionStateClient(base_url=server.base_url) as client:
            for number in range(4):
                for n in range(8):
                    session = f"t{number}-s{n}"
                    stored = await client.get_session(app_name=app, user_id="u", session_id=session)
                    assert stored is not None
                    expected = [f"{session}-{step}" for step in range(5)] + [f"{session}-again"]
                    assert [event["id"] for event in stored.events] == expected

    asyncio.run(check())
