"""ADK's batch append (google-adk 2.15's `BaseSessionService.append_events`)
through HttpSessionService on both backends: one request, all or none, and
the same session and store as appending the events one by one, with ADK's
InMemorySessionService (whose append_events is ADK's default, one at a time)
as the reference; and ADK's BufferedSessionService over it, which sends a
session's queued events through append_events."""

import copy
import datetime
import uuid
from typing import Any

import pytest
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.events import Event, EventActions
from google.adk.runners import Runner
from google.adk.sessions import (
    BaseSessionService,
    BufferedSessionService,
    BufferedSessionServiceConfig,
    InMemorySessionService,
    Session,
)
from google.genai import types

from session_state_client import EventIdConflictError
from session_state_client.adk import HttpSessionService
from tests.client.test_adk_newer import CountingAgent, _message
from tests.test_observability import answered_on

BATCH_ROUTE = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events/batch"
SINGLE_ROUTE = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events"


def _events() -> list[Event]:
    """A turn's events: every scope written, a temp: key, a partial event
    (never stored), a key removed."""
    text = types.Content(role="model", parts=[types.Part(text="hello")])
    return [
        Event(
            author="user",
            invocation_id="inv-1",
            content=types.Content(role="user", parts=[types.Part(text="hi")]),
            actions=EventActions(state_delta={"topic": "tea", "temp:draft": 1}),
        ),
        Event(author="agent", invocation_id="inv-1", content=text, partial=True),
        Event(
            author="agent",
            invocation_id="inv-1",
            content=text,
            actions=EventActions(
                state_delta={"app:turns": 1, "user:name": "Ada", "topic": None, "size": "L"}
            ),
        ),
    ]


def _comparable(session: Session) -> list[dict[str, Any]]:
    """The events without what differs from run to run."""
    return [
        event.model_dump(mode="json", exclude={"id", "timestamp", "invocation_id"})
        for event in session.events
    ]


async def _appended(
    service: BaseSessionService, app: str, *, batch: bool
) -> tuple[Session, list[Event], Session]:
    """A session with _events() appended, in one append_events call or one
    append_event each: the caller's session object, what the calls
    returned, and the session read back."""
    session = await service.create_session(app_name=app, user_id="u", state={"kept": 1})
    events = _events()
    if batch:
        returned = await service.append_events(session, events)
    else:
        returned = [await service.append_event(session, event) for event in events]
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert stored is not None
    return session, returned, stored


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_append_events_is_one_request_leaving_what_appends_one_by_one_leave(backend, request):
    server = request.getfixturevalue(f"{backend}_server")
    app = f"batch-{uuid.uuid4().hex[:8]}"
    reference = await _appended(InMemorySessionService(), app, batch=True)
    async with HttpSessionService(base_url=server.base_url) as service:
        one_by_one = await _appended(service, app, batch=False)
        batches_before = await answered_on(server.base_url, BATCH_ROUTE, 201)
        singles_before = await answered_on(server.base_url, SINGLE_ROUTE, 201)
        batched = await _appended(service, app, batch=True)
        assert await answered_on(server.base_url, BATCH_ROUTE, 201) == batches_before + 1
        assert await answered_on(server.base_url, SINGLE_ROUTE, 201) == singles_before
    for session, returned, stored in (reference, one_by_one, batched):
        # The caller's session holds the temp: key; the store never does.
        assert session.state == {
            "kept": 1,
            "temp:draft": 1,
            "topic": None,
            "size": "L",
            "app:turns": 1,
            "user:name": "Ada",
        }
        assert stored.state == {key: v for key, v in session.state.items() if key != "temp:draft"}
        # Returned in order, the partial event among them, unstored.
        assert [event.partial for event in returned] == [None, True, None]
        assert _comparable(stored) == _comparable(session)
        assert [event.id for event in stored.events] == [returned[0].id, returned[2].id]
        assert session.last_update_time == returned[2].timestamp
    assert _comparable(batched[2]) == _comparable(one_by_one[2]) == _comparable(reference[2])
    # The session object can go on appending: it holds the batch's revision.
    async with HttpSessionService(base_url=server.base_url) as service:
        more = Event(author="agent", invocation_id="inv-2")
        await service.append_event(batched[0], more)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_a_refused_batch_stores_none_of_its_events(backend, request):
    server = request.getfixturevalue(f"{backend}_server")
    app = f"batch-{uuid.uuid4().hex[:8]}"
    async with HttpSessionService(base_url=server.base_url) as service:
        session = await service.create_session(app_name=app, user_id="u")
        held = Event(author="agent", invocation_id="inv-1", id="held")
        await service.append_event(session, held)
        # Its last event reuses a stored id with other content: the batch is
        # refused whole, after two events that alone would have been stored.
        clash = Event(
            author="agent", invocation_id="inv-2", id="held", actions=EventActions(escalate=True)
        )
        fresh = [
            Event(author="user", invocation_id="inv-2", actions=EventActions(state_delta={"a": 1})),
            Event(author="agent", invocation_id="inv-2"),
        ]
        marker = session._storage_update_marker
        with pytest.raises(EventIdConflictError):
            await service.append_events(session, [*fresh, clash])
        stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
        assert stored is not None
        assert [event.id for event in stored.events] == ["held"]
        assert stored.state == {}
        # The caller's session took none of them either.
        assert [event.id for event in session.events] == ["held"]
        assert session._storage_update_marker == marker

        # A stale session object cannot append a batch.
        other = await service.get_session(app_name=app, user_id="u", session_id=session.id)
        assert other is not None
        await service.append_event(other, Event(author="agent", invocation_id="inv-3"))
        with pytest.raises(StaleSessionError):
            await service.append_events(session, copy.deepcopy(fresh))
        stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
        assert stored is not None
        assert len(stored.events) == 2


async def _buffered_conversation(service: BaseSessionService, app: str) -> Session:
    buffered = BufferedSessionService(
        service,
        config=BufferedSessionServiceConfig(max_write_delay=datetime.timedelta(milliseconds=50)),
    )
    async with buffered:
        runner = Runner(agent=CountingAgent(name="counter"), app_name=app, session_service=buffered)
        session = await buffered.create_session(app_name=app, user_id="u")
        for text in ["one", "two", "three"]:
            async for _ in runner.run_async(
                user_id="u", session_id=session.id, new_message=_message(text)
            ):
                pass
        await buffered.flush_session(app_name=app, user_id="u", session_id=session.id)
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert stored is not None
    return stored


@pytest.mark.filterwarnings("ignore:.*BUFFERED_SESSION_SERVICE:UserWarning")
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_buffered_session_service_sends_queued_events_as_batches(backend, request):
    server = request.getfixturevalue(f"{backend}_server")
    app = f"buffered-{uuid.uuid4().hex[:8]}"
    reference = await _buffered_conversation(InMemorySessionService(), app)
    async with HttpSessionService(base_url=server.base_url) as service:
        batches_before = await answered_on(server.base_url, BATCH_ROUTE, 201)
        stored = await _buffered_conversation(service, app)
        batches = await answered_on(server.base_url, BATCH_ROUTE, 201) - batches_before
    assert (
        stored.state
        == reference.state
        == {
            "turns": 3,
            "said_1": "one",
            "said_2": "two",
            "said_3": "three",
        }
    )
    assert _comparable(stored) == _comparable(reference)
    assert len(stored.events) == 6
    # The buffer sent the events through append_events: each turn's user
    # message and answer, queued within the delay, went together.
    assert 1 <= batches < len(stored.events), batches
