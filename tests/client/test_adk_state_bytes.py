"""`bytes` in ADK state, read back as ADK's persistent services give them.

ADK's DatabaseSessionService stores state with UTF-8 bytes as text and other
bytes as standard base64; VertexAiSessionService sends the event's state
delta in that form. HttpSessionService on both backends must read back the
state ADK's DatabaseSessionService reads back, side by side in one test, for
state given at creation and in an event's delta, at every scope."""

import pytest
from google.adk.events import Event, EventActions
from google.adk.sessions import DatabaseSessionService

from session_state_client.adk import HttpSessionService
from tests.client.own_loops import runs_cleanly

DELTA = {
    "text": b"hi",
    "raw": b"\xff\x00",
    "user:nested": {"inner": [b"\x01\x80", b"ok"]},
    "app:empty": b"",
}
# What ADK's DatabaseSessionService reads back for DELTA (checked below
# against the service itself, so a change in ADK shows).
DELTA_READ = {
    "text": "hi",
    "raw": "/wA=",
    "user:nested": {"inner": ["AYA=", "ok"]},
    "app:empty": "",
}


@pytest.fixture
async def adk_database(tmp_path):
    service = DatabaseSessionService(f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}")
    yield service
    await service.close()


@pytest.fixture(params=["sqlite", "postgresql"])
async def ours(request):
    server = request.getfixturevalue(f"{request.param}_server")
    service = HttpSessionService(base_url=server.base_url)
    yield service
    await service.close()


async def _read_back(service, app: str) -> tuple[dict, dict]:
    session = await service.create_session(
        app_name=app, user_id="u", state={"created": b"\xfe", "plain": b"abc"}
    )
    acting = Event(author="agent", invocation_id="i1", actions=EventActions(state_delta=DELTA))
    await service.append_event(session, acting)
    # The session object in hand keeps the values as given, as ADK's does.
    assert session.state["raw"] == b"\xff\x00"
    read = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    return read.state, read.events[-1].actions.state_delta


async def test_bytes_in_state_read_back_as_adks_database_service_gives_them(
    ours, adk_database, app
):
    theirs_state, _ = await _read_back(adk_database, app)
    state, event_delta = await _read_back(ours, app)
    assert state == theirs_state
    assert state == {"created": "/g==", "plain": "abc", **DELTA_READ}
    # The event carries the delta in the form state keeps, as
    # VertexAiSessionService sends it.
    assert event_delta == DELTA_READ


async def test_bytes_in_a_batch_append_read_back_in_the_same_form(ours, app):
    session = await ours.create_session(app_name=app, user_id="u")
    events = [
        Event(author="agent", invocation_id="i1", actions=EventActions(state_delta={"a": b"\xff"})),
        Event(author="agent", invocation_id="i1", actions=EventActions(state_delta={"b": b"x"})),
    ]
    await ours.append_events(session, events)
    read = await ours.get_session(app_name=app, user_id="u", session_id=session.id)
    assert read.state == {"a": "/w==", "b": "x"}


async def test_an_event_without_bytes_goes_as_pydantic_dumps_it(ours, app):
    session = await ours.create_session(app_name=app, user_id="u")
    delta = {"n": 1, "s": "text", "l": [1, "two", None], "d": {"k": 2.5}}
    await ours.append_event(
        session, Event(author="agent", invocation_id="i1", actions=EventActions(state_delta=delta))
    )
    read = await ours.get_session(app_name=app, user_id="u", session_id=session.id)
    assert read.state == delta


async def test_a_value_json_cannot_hold_is_stored_as_adks_database_service_stores_it(
    ours, adk_database, app
):
    read = {}
    for name, service in (("theirs", adk_database), ("ours", ours)):
        session = await service.create_session(app_name=app, user_id="u", state={"f": len})
        got = await service.get_session(app_name=app, user_id="u", session_id=session.id)
        read[name] = got.state
    assert read["ours"] == read["theirs"] == {"f": repr(len)}


def _deep(levels: int) -> list:
    outer: list = []
    inner = outer
    for _ in range(levels):
        inner.append([])
        inner = inner[0]
    return outer


async def test_a_deep_or_circular_delta_is_refused_before_anything_is_sent(ours, app):
    """The adapter's look for bytes ends on any shape (no recursion, each
    container once); what JSON cannot carry is then pydantic's ValueError,
    as before, and nothing is stored."""
    circular: list = []
    circular.append(circular)
    session = await ours.create_session(app_name=app, user_id="u")
    for delta in ({"deep": _deep(100_000)}, {"circular": circular}):
        acting = Event(author="agent", invocation_id="i1", actions=EventActions(state_delta=delta))
        with pytest.raises(ValueError):
            await ours.append_event(session, acting)
    read = await ours.get_session(app_name=app, user_id="u", session_id=session.id)
    assert read.events == [] and read.state == {}


async def test_bytes_deep_in_tuples_and_keys_are_found(ours, app):
    session = await ours.create_session(app_name=app, user_id="u")
    delta = {"t": ((((b"\xff",),),),), "m": {"k": [1, (2, b"ok")]}}
    await ours.append_event(
        session, Event(author="agent", invocation_id="i1", actions=EventActions(state_delta=delta))
    )
    read = await ours.get_session(app_name=app, user_id="u", session_id=session.id)
    assert read.state == {"t": [[[["/w=="]]]], "m": {"k": [1, [2, "ok"]]}}


_LOOPS_PROGRAM = """
import asyncio, sys
from tests.client.own_loops import on_threads_and_loops
from google.adk.events import Event, EventActions
from session_state_client.adk import HttpSessionService

base_url, app_name = sys.argv[1], sys.argv[2]
service = HttpSessionService(base_url=base_url)
failures = []

async def session_with_bytes(user_id):
    session = await service.create_session(
        app_name=app_name, user_id=user_id, state={"c": b"\\xfe"}
    )
    delta = {"text": b"hi", "raw": b"\\xff\\x00"}
    event = Event(author="agent", invocation_id="i1", actions=EventActions(state_delta=delta))
    await service.append_event(session, event)
    await service.append_events(session, [
        Event(author="agent", invocation_id="i1", actions=EventActions(state_delta={"n": b"x"}))
    ])
    read = await service.get_session(app_name=app_name, user_id=user_id, session_id=session.id)
    if read.state != {"c": "/g==", "text": "hi", "raw": "/wA=", "n": "x"}:
        failures.append(read.state)

on_threads_and_loops(lambda thread, loop: session_with_bytes(f"u{thread}-{loop}"))
asyncio.run(service.close())
print("failures:", failures)
print("done")
"""


def test_threads_each_on_its_own_loop_store_bytes_alike_and_close_cleanly(server, app):
    """As ADK's sync Runner.run does: four OS threads, each running two
    event loops in turn, create and append state with bytes through one
    HttpSessionService, which then closes with nothing left unclosed."""
    runs_cleanly(_LOOPS_PROGRAM, server.base_url, app)
