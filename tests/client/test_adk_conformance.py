"""ADK's documented session-service behaviours, run against HttpSessionService
(on both backends) and, side by side, against ADK's own InMemorySessionService
as the reference: both must pass every test."""

import asyncio
import math

import pytest
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events import Event, EventActions
from google.adk.sessions import InMemorySessionService, Session
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from session_state_client.adk import HttpSessionService


def _event(text: str = "hello", **actions) -> Event:
    return Event(
        author="agent",
        invocation_id="inv-1",
        content=types.Content(role="model", parts=[types.Part(text=text)]),
        actions=EventActions(**actions),
    )


async def test_get_of_an_unknown_session_is_none(service, app):
    assert await service.get_session(app_name=app, user_id="u", session_id="nope") is None


async def test_creating_an_existing_id_raises_already_exists(service, app):
    await service.create_session(app_name=app, user_id="u", session_id="s")
    with pytest.raises(AlreadyExistsError):
        await service.create_session(app_name=app, user_id="u", session_id="s")


async def test_appending_to_a_missing_session_raises_session_not_found(service, app):
    ghost = Session(id="ghost", app_name=app, user_id="u")
    with pytest.raises(SessionNotFoundError):
        await service.append_event(ghost, _event())


async def test_deleting_a_missing_session_is_a_no_op(service, app):
    await service.delete_session(app_name=app, user_id="u", session_id="nope")


async def test_delete_removes_the_session(service, app):
    session = await service.create_session(app_name=app, user_id="u")
    await service.delete_session(app_name=app, user_id="u", session_id=session.id)
    assert await service.get_session(app_name=app, user_id="u", session_id=session.id) is None


async def test_partial_events_are_skipped(service, app):
    session = await service.create_session(app_name=app, user_id="u")
    partial = _event(state_delta={"k": 1})
    partial.partial = True
    returned = await service.append_event(session, partial)
    assert returned is partial
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert stored.events == [] and "k" not in stored.state


async def test_temp_keys_reach_the_callers_session_but_never_storage(service, app):
    session = await service.create_session(app_name=app, user_id="u", state={"temp:boot": 1})
    assert "temp:boot" not in session.state
    event = _event(state_delta={"temp:scratch": 1, "kept": 2})
    await service.append_event(session, event)
    assert session.state["temp:scratch"] == 1
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert stored.state == {"kept": 2}
    assert stored.events[0].actions.state_delta == {"kept": 2}


async def test_the_same_event_object_is_appended_and_returned(service, app):
    session = await service.create_session(app_name=app, user_id="u")
    event = _event()
    returned = await service.append_event(session, event)
    assert returned is event
    assert session.events[-1] is event


async def test_scoped_state_is_shared_as_adk_defines(service, app):
    first = await service.create_session(
        app_name=app, user_id="ada", state={"user:name": "Ada", "app:theme": "dark", "own": 1}
    )
    await service.append_event(first, _event(state_delta={"user:visits": 1, "app:users": 1}))
    second = await service.create_session(app_name=app, user_id="ada")
    assert second.state == {
        "user:name": "Ada",
        "user:visits": 1,
        "app:theme": "dark",
        "app:users": 1,
    }
    other_user = await service.create_session(app_name=app, user_id="bob")
    assert other_user.state == {"app:theme": "dark", "app:users": 1}
    assert await service.get_user_state(app_name=app, user_id="ada") == {"name": "Ada", "visits": 1}
    assert await service.get_user_state(app_name=app, user_id="nobody") == {}


async def test_list_sessions_has_merged_state_and_no_events(service, app):
    one = await service.create_session(app_name=app, user_id="ada", state={"user:x": 1})
    await service.append_event(one, _event(state_delta={"s": 1}))
    await service.create_session(app_name=app, user_id="bob", state={"app:y": 2})
    mine = (await service.list_sessions(app_name=app, user_id="ada")).sessions
    assert [session.id for session in mine] == [one.id]
    assert mine[0].events == []
    assert mine[0].state == {"s": 1, "user:x": 1, "app:y": 2}
    everyone = (await service.list_sessions(app_name=app)).sessions
    assert sorted(session.user_id for session in everyone) == ["ada", "bob"]
    assert all(session.events == [] for session in everyone)


async def test_get_session_config_limits_the_events(service, app):
    session = await service.create_session(app_name=app, user_id="u")
    events = []
    for index in range(5):
        event = _event(text=f"m{index}")
        event.timestamp = 1_000.0 + index
        events.append(await service.append_event(session, event))
    recent = await service.get_session(
        app_name=app,
        user_id="u",
        session_id=session.id,
        config=GetSessionConfig(num_recent_events=2),
    )
    assert [event.id for event in recent.events] == [event.id for event in events[-2:]]
    after = await service.get_session(
        app_name=app,
        user_id="u",
        session_id=session.id,
        config=GetSessionConfig(after_timestamp=1_003.0),
    )
    assert [event.id for event in after.events] == [event.id for event in events[3:]]
    none = await service.get_session(
        app_name=app,
        user_id="u",
        session_id=session.id,
        config=GetSessionConfig(num_recent_events=0),
    )
    assert none.events == []


async def test_create_and_append_return_what_a_later_get_returns(service, app):
    session = await service.create_session(app_name=app, user_id="u", state={"k": 1})
    assert await service.get_session(app_name=app, user_id="u", session_id=session.id) == session
    await service.append_event(session, _event(state_delta={"k": 2, "user:u": 3}))
    await service.append_event(session, _event(text="second"))
    fetched = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert fetched == session
    assert fetched._storage_update_marker == session._storage_update_marker


async def test_events_round_trip_losslessly(service, app):
    session = await service.create_session(app_name=app, user_id="u")
    event = Event(
        author="agent",
        invocation_id="inv",
        timestamp=1_700_000_000.123456789,
        branch="root.child",
        content=types.Content(
            role="model",
            parts=[
                types.Part(text="unicode: \u00e9\u4e2d\U0001f600"),
                types.Part(inline_data=types.Blob(mime_type="image/png", data=bytes(range(256)))),
                types.Part(function_call=types.FunctionCall(name="f", args={"x": [1, 0.1]})),
            ],
        ),
        actions=EventActions(
            state_delta={"nested": {"a": [1, {"b": None}]}, "tiny": 5e-324},
            artifact_delta={"file.txt": 2},
            transfer_to_agent="other",
        ),
        long_running_tool_ids={"t1", "t2"},
        custom_metadata={"trace": "abc"},
    )
    await service.append_event(session, event)
    stored = (await service.get_session(app_name=app, user_id="u", session_id=session.id)).events[0]
    assert stored == event
    assert stored.timestamp.hex() == event.timestamp.hex()
    assert stored.content.parts[1].inline_data.data == bytes(range(256))
    assert stored.long_running_tool_ids == {"t1", "t2"}
    assert math.copysign(1, stored.actions.state_delta["tiny"]) == 1


async def test_a_stale_session_object_cannot_append(service, app):
    if isinstance(service, InMemorySessionService):
        pytest.skip("the in-memory reference shares one object and has no stale check")
    session = await service.create_session(app_name=app, user_id="u")
    stale_copy = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    await service.append_event(session, _event())
    with pytest.raises(StaleSessionError, match="has been modified in storage"):
        await service.append_event(stale_copy, _event())


async def test_redelivering_an_appended_event_applies_nothing_twice(service, app):
    session = await service.create_session(app_name=app, user_id="u")
    event = _event(state_delta={"count": 1})
    await service.append_event(session, event)
    await service.append_event(session, event)
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert len(stored.events) == 1 and len(session.events) == 1


async def test_concurrent_creations_with_initial_user_and_app_state_lose_no_key(service, app):
    await asyncio.gather(
        *(
            service.create_session(
                app_name=app, user_id="u", state={f"user:k{index}": index, f"app:k{index}": index}
            )
            for index in range(20)
        )
    )
    user_state = await service.get_user_state(app_name=app, user_id="u")
    assert user_state == {f"k{index}": index for index in range(20)}
    session = await service.create_session(app_name=app, user_id="v")
    assert {key for key in session.state if key.startswith("app:")} == {
        f"app:k{index}" for index in range(20)
    }


async def test_http_and_in_memory_agree_on_a_scripted_session(sqlite_server, app):
    """The same calls on both services give equal sessions (ids and times aside)."""
    reference, http = InMemorySessionService(), HttpSessionService(base_url=sqlite_server.base_url)
    results = []
    for service in (reference, http):
        session = await service.create_session(
            app_name=app, user_id="u", session_id="same", state={"user:a": 1, "s": 0}
        )
        for index in range(3):
            event = _event(text=f"turn {index}", state_delta={"s": index, f"app:t{index}": index})
            event.id, event.timestamp = f"event-{index}", 2_000.0 + index
            await service.append_event(session, event)
        fetched = await service.get_session(app_name=app, user_id="u", session_id="same")
        listed = (await service.list_sessions(app_name=app, user_id="u")).sessions
        results.append((fetched.state, fetched.events, fetched.last_update_time, listed[0].state))
    await http.close()
    assert results[0] == results[1]
