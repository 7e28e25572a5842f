"""ADK's synchronous `Runner.run()` from many threads at once, as a threaded web
server calls it: every call runs on a new thread with an event loop of its
own, and all of them share one HttpSessionService and one HttpMemoryService.
ADK's own in-memory services run the same scenario side by side. (ADK 2.13's
DatabaseSessionService hangs in this scenario, on SQLite and PostgreSQL alike:
its asyncio locks and pooled connections are shared across event loops;
bench/adk_threads.py measures every side, with a deadline.)"""

import asyncio
import subprocess
import sys
import textwrap
import threading
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from google.adk.events import Event, EventActions
from google.adk.memory import InMemoryMemoryService
from google.adk.memory.base_memory_service import BaseMemoryService
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types

from session_state_client.adk import HttpMemoryService, HttpSessionService
from tests.adk_counting_agent import CountingAgent

THREADS = 8
TURNS = 5
# A hang fails the test instead of blocking the run.
DEADLINE_SECONDS = 120


def _services(kind: str, request: pytest.FixtureRequest) -> Any:
    if kind == "adk-in-memory":
        return InMemorySessionService(), InMemoryMemoryService()
    compacted = kind.endswith("-compacted")
    backend = kind.removeprefix("http-").removesuffix("-compacted")
    server = request.getfixturevalue(f"{backend}_server")
    return (
        HttpSessionService(base_url=server.base_url, compacted_reads=compacted),
        HttpMemoryService(base_url=server.base_url),
    )


@pytest.fixture(
    params=["http-sqlite", "http-postgresql", "http-postgresql-compacted", "adk-in-memory"]
)
def services(
    request: pytest.FixtureRequest,
) -> Iterator[tuple[BaseSessionService, BaseMemoryService]]:
    sessions, memory = _services(request.param, request)
    yield sessions, memory
    for service in (sessions, memory):
        close = getattr(service, "close", None)
        if close is not None:
            asyncio.run(close())


def _conversation(
    runner: Runner, memory: BaseMemoryService, app: str, user: str, failures: list[BaseException]
) -> None:
    try:
        session = asyncio.run(
            runner.session_service.create_session(app_name=app, user_id=user, session_id="chat")
        )
        for turn in range(TURNS):
            message = types.Content(role="user", parts=[types.Part(text=f"message {turn}")])
            for _event in runner.run(user_id=user, session_id=session.id, new_message=message):
                pass
        stored = asyncio.run(
            runner.session_service.get_session(app_name=app, user_id=user, session_id="chat")
        )
        assert stored is not None
        asyncio.run(memory.add_session_to_memory(stored))
        found = asyncio.run(memory.search_memory(app_name=app, user_id=user, query="done"))
        assert found.memories, f"{user}: nothing found in memory"
    except BaseException as error:  # reported by the main thread
        failures.append(error)


def test_sync_runner_from_many_threads_loses_nothing(services: Any) -> None:
    sessions, memory = services
    app = f"threads-{uuid.uuid4().hex[:8]}"
    runner = Runner(
        app_name=app,
        agent=CountingAgent(name="counter"),
        session_service=sessions,
        memory_service=memory,
    )
    failures: list[BaseException] = []
    users = [f"user-{index}" for index in range(THREADS)]
    threads = [
        threading.Thread(target=_conversation, args=(runner, memory, app, user, failures))
        for user in users
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(DEADLINE_SECONDS)
        assert not any(thread.is_alive() for thread in threads), "a conversation hung"
    assert not failures, failures
    for user in users:
        session = asyncio.run(sessions.get_session(app_name=app, user_id=user, session_id="chat"))
        assert session is not None
        assert session.state["turns"] == TURNS
        assert session.state["user:turns"] == TURNS
        assert "temp:scratch" not in session.state
        # Each turn stores the user's message and the agent's answer.
        assert len(session.events) == 2 * TURNS
        texts = [event.content.parts[0].text for event in session.events if event.content]
        assert texts[-1] == f"turn {TURNS} done"
    unclosed = [str(warning.message) for warning in caught if "Unclosed" in str(warning.message)]
    assert not unclosed, unclosed
    # Every Runner.run call's loop has ended: none of their pools is kept.
    for service in (sessions, memory):
        if isinstance(service, HttpSessionService | HttpMemoryService):
            assert service.client._http._by_loop == {}


def test_memory_from_threads_each_on_its_own_loop(services: Any) -> None:
    """Writers on three threads, each with its own event loop, add to one
    memory service while others search it (as ADK's thread-safety test of
    its memory service does): nothing fails, hangs or goes missing."""
    sessions, memory = services
    app = f"memory-{uuid.uuid4().hex[:8]}"
    failures: list[BaseException] = []

    def write(writer: int) -> None:
        async def run() -> None:
            for index in range(10):
                session = await sessions.create_session(app_name=app, user_id="u")
                event = Event(
                    author="user",
                    invocation_id=f"inv-{writer}-{index}",
                    content=types.Content(
                        role="user", parts=[types.Part(text=f"writer{writer} fact{index}")]
                    ),
                )
                session = (
                    await sessions.get_session(app_name=app, user_id="u", session_id=session.id)
                    or session
                )
                await sessions.append_event(session, event)
                stored = await sessions.get_session(
                    app_name=app, user_id="u", session_id=session.id
                )
                assert stored is not None
                await memory.add_session_to_memory(stored)
                await memory.search_memory(app_name=app, user_id="u", query=f"writer{writer}")

        try:
            asyncio.run(run())
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=write, args=(writer,)) for writer in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_SECONDS)
    assert not any(thread.is_alive() for thread in threads), "a writer hung"
    assert not failures, failures
    for writer in range(3):
        found = asyncio.run(
            memory.search_memory(app_name=app, user_id="u", query=f"writer{writer}")
        )
        texts = {memory_entry.content.parts[0].text for memory_entry in found.memories}
        assert texts == {f"writer{writer} fact{index}" for index in range(10)}


_PROGRAM = """
import asyncio, sys, threading
from google.adk.agents import BaseAgent
from google.adk.events import Event, EventActions
from google.adk.runners import Runner
from google.genai import types
from session_state_client.adk import HttpMemoryService, HttpSessionService
from tests.adk_counting_agent import CountingAgent

class Echo(BaseAgent):
    async def _run_async_impl(self, ctx):
        yield Event(author=self.name, invocation_id=ctx.invocation_id,
                    content=types.Content(role="model", parts=[types.Part(text="ok")]))

with HttpSessionService(base_url=sys.argv[1]) as sessions, HttpMemoryService(
    base_url=sys.argv[1]
) as memory:
    runner = Runner(app_name=sys.argv[2], agent=Echo(name="echo"),
                    session_service=sessions, memory_service=memory)
    def turn(user):
        session = asyncio.run(sessions.create_session(app_name=sys.argv[2], user_id=user))
        message = types.Content(role="user", parts=[types.Part(text="hi")])
        list(runner.run(user_id=user, session_id=session.id, new_message=message))
        asyncio.run(memory.add_session_to_memory(session))
    threads = [threading.Thread(target=turn, args=(f"u{i}",)) for i in range(4)]
    [thread.start() for thread in threads]
    [thread.join() for thread in threads]
    # A loop that outlives the calls, closed by hand without shutting down.
    loop = asyncio.new_event_loop()
    loop.run_until_complete(sessions.list_sessions(app_name=sys.argv[2], user_id="u0"))
    loop.close()
print("done")
"""


def test_nothing_unclosed_at_exit(sqlite_server: Any) -> None:
    """A program that runs ADK's sync Runner from threads and leaves the
    services' `with` block prints no unclosed-session warning, even with
    ResourceWarnings shown."""
    app = f"exit-{uuid.uuid4().hex[:8]}"
    finished = subprocess.run(
        [
            sys.executable,
            "-W",
            "always",
            "-c",
            textwrap.dedent(_PROGRAM),
            sqlite_server.base_url,
            app,
        ],
        capture_output=True,
        text=True,
        timeout=DEADLINE_SECONDS,
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.strip() == "done"
    assert "Unclosed" not in finished.stderr, finished.stderr
    assert "was never awaited" not in finished.stderr, finished.stderr


def _rewinds(
    sessions: HttpSessionService, app: str, user: str, failures: list[BaseException]
) -> None:
    """A conversation of three invocations, then a rewind to before the
    second, each call on this thread's own event loop."""
    try:
        session = asyncio.run(sessions.create_session(app_name=app, user_id=user, state={"k": 0}))
        for number in (1, 2, 3):
            event = Event(
                author="agent",
                invocation_id=f"inv-{number}",
                actions=EventActions(state_delta={"k": number}),
            )
            asyncio.run(sessions.append_event(session, event))
        asyncio.run(
            sessions.rewind_session(
                app_name=app,
                user_id=user,
                session_id=session.id,
                rewind_before_invocation_id="inv-2",
            )
        )
        after = asyncio.run(sessions.get_session(app_name=app, user_id=user, session_id=session.id))
        assert after is not None
        assert after.state["k"] == 1, after.state
        assert after.events[-1].actions.rewind_before_invocation_id == "inv-2"
    except BaseException as error:  # reported by the main thread
        failures.append(error)


def test_server_side_rewinds_from_many_threads_each_on_its_own_loop(
    postgresql_server: Any,
) -> None:
    sessions = HttpSessionService(base_url=postgresql_server.base_url)
    app = f"rewinds-{uuid.uuid4().hex[:8]}"
    failures: list[BaseException] = []
    threads = [
        threading.Thread(target=_rewinds, args=(sessions, app, f"user-{index}", failures))
        for index in range(THREADS)
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(DEADLINE_SECONDS)
        assert not any(thread.is_alive() for thread in threads), "a rewind hung"
        asyncio.run(sessions.close())
    assert not failures, failures
    unclosed = [str(warning.message) for warning in caught if "Unclosed" in str(warning.message)]
    assert not unclosed, unclosed
    assert sessions.client._http._by_loop == {}
