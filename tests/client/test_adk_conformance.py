"""ADK's documented session-service behaviours, run against HttpSessionService
(on both backends) and, side by side, against ADK's own InMemorySessionService
as the reference: both must pass every test.

Every behaviour that ADK's own session-service unit tests check of a session
service (tests/unittests/sessions/ in google/adk-python, as of ADK 2.13) is
stated here in our words, the thread and race tests included; each test has a
deadline, so a hang fails instead of blocking the run. Where ADK's services
disagree with each other the test says which one the server follows:
- events come back in append order, as InMemorySessionService keeps them;
  DatabaseSessionService and SqliteSessionService sort by timestamp, then id;
- a stale session object cannot append (StaleSessionError), as the database
  services check; InMemorySessionService has no such check;
- a different event under an id the session already holds is refused (409
  `event_id_conflict`), as the database services refuse a duplicate primary
  key; InMemorySessionService stores both. Ids are what makes a retried
  append safe to repeat.
"""

import asyncio
import math
import threading
import time
from typing import Any

import pytest
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events import Event, EventActions
from google.adk.sessions import InMemorySessionService, Session
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from session_state_client import EventIdConflictError
from session_state_client.adk import HttpSessionService

pytestmark = pytest.mark.timeout(120)
# Threads that outlive this fail their test: a hang is a failure, not a stall.
THREAD_DEADLINE_SECONDS = 60


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
    # Trimmed from the caller's own event too, as ADK trims it.
    assert event.actions.state_delta == {"kept": 2}
    # A later agent of the same invocation reads it from the session object.
    await service.append_event(session, _event(state_delta={"temp:next": 2}))
    assert session.state["temp:scratch"] == 1 and session.state["temp:next"] == 2
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
    # Both limits: the last three events, of which those at or after 1003.
    both = await service.get_session(
        app_name=app,
        user_id="u",
        session_id=session.id,
        config=GetSessionConfig(num_recent_events=3, after_timestamp=1_003.0),
    )
    assert [event.id for event in both.events] == [event.id for event in events[3:]]
    later = await service.get_session(
        app_name=app,
        user_id="u",
        session_id=session.id,
        config=GetSessionConfig(after_timestamp=2_000.0),
    )
    assert later.events == [] and later.id == session.id


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
    await service.append_event(session, _event(state_delta={"winner": 1}))
    with pytest.raises(StaleSessionError, match="has been modified in storage") as raised:
        await service.append_event(stale_copy, _event(state_delta={"loser": 1}))
    assert isinstance(raised.value, ValueError)  # as ADK's StaleSessionError always is
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert stored.state == {"winner": 1}
    assert [event.id for event in stored.events] == [event.id for event in session.events]


async def test_redelivering_an_appended_event_applies_nothing_twice(service, app):
    session = await service.create_session(app_name=app, user_id="u")
    event = _event(state_delta={"count": 1, "user:visits": 1})
    await service.append_event(session, event)
    await service.append_event(session, event)
    # A broadcast may deliver an equal copy instead of the same object.
    await service.append_event(session, event.model_copy(deep=True))
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert len(stored.events) == 1 and len(session.events) == 1
    assert stored.state == {"count": 1, "user:visits": 1}


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


def _skip_in_memory(service: Any, why: str) -> None:
    if isinstance(service, InMemorySessionService):
        pytest.skip(why)


async def test_a_created_session_reads_back_equal_and_stamped_by_now(service, app):
    session = await service.create_session(app_name=app, user_id="u", state={"k": "v"})
    assert (session.app_name, session.user_id, session.state) == (app, "u", {"k": "v"})
    assert session.id and session.last_update_time <= time.time()
    fetched = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert fetched == session


async def test_sessions_are_listed_least_recently_active_first(service, app):
    for session_id in ("a", "b", "c"):
        await service.create_session(app_name=app, user_id="u", session_id=session_id)
    oldest = await service.get_session(app_name=app, user_id="u", session_id="a")
    await asyncio.sleep(0.01)  # its append must be later than c's creation
    await service.append_event(oldest, Event(author="user", invocation_id="i"))
    listed = (await service.list_sessions(app_name=app, user_id="u")).sessions
    assert [session.id for session in listed] == ["b", "c", "a"]


async def test_a_new_value_replaces_a_stored_one_whole(service, app):
    """A dict in a delta replaces the stored dict, in session and app scope
    alike: nothing is deep-merged."""
    first = await service.create_session(
        app_name=app,
        user_id="u1",
        state={"profile": {"name": "ada", "role": "admin"}, "app:cfg": {"a": 1, "b": 2}},
    )
    delta = {"profile": {"name": "bob"}, "app:cfg": {"a": 3}}
    await service.append_event(first, _event(state_delta=delta))
    assert first.state["profile"] == {"name": "bob"} and first.state["app:cfg"] == {"a": 3}
    stored = await service.get_session(app_name=app, user_id="u1", session_id=first.id)
    assert stored.state == {"profile": {"name": "bob"}, "app:cfg": {"a": 3}}
    other_user = await service.create_session(app_name=app, user_id="u2")
    assert other_user.state == {"app:cfg": {"a": 3}}


async def test_a_none_value_is_stored_as_null_and_other_values_keep_their_type(service, app):
    session = await service.create_session(
        app_name=app, user_id="u", state={"flag": True, "off": False, "user:pref": "dark"}
    )
    await service.append_event(session, _event(state_delta={"flag": None, "user:pref": None}))
    await service.append_event(session, _event(state_delta={"new_flag": True}))
    expected = {"flag": None, "off": False, "user:pref": None, "new_flag": True}
    assert session.state == expected
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert stored.state == expected
    assert stored.state["off"] is False and stored.state["new_flag"] is True
    sibling = await service.create_session(app_name=app, user_id="u")
    assert sibling.state == {"user:pref": None}


async def test_one_session_id_of_two_users_is_two_sessions(service, app):
    first = await service.create_session(app_name=app, user_id="u1", session_id="s")
    await service.append_event(first, _event())
    await service.create_session(app_name=app, user_id="u2", session_id="s")
    second = await service.get_session(app_name=app, user_id="u2", session_id="s")
    assert second.user_id == "u2" and second.events == []


async def test_a_padded_copy_of_an_existing_id_already_exists(service, app):
    await service.create_session(
        app_name=app, user_id="u", session_id="order-42", state={"keep": "original"}
    )
    with pytest.raises(AlreadyExistsError):
        await service.create_session(
            app_name=app, user_id="u", session_id="  order-42\n", state={"keep": "clobbered"}
        )
    stored = await service.get_session(app_name=app, user_id="u", session_id="order-42")
    assert stored.state == {"keep": "original"}


async def test_racing_creates_of_one_id_have_one_winner(service, app):
    await service.create_session(app_name=app, user_id="u", session_id="warm-up")
    for round_number in range(5):
        session_id = f"race-{round_number}"
        results = await asyncio.gather(
            *(
                service.create_session(
                    app_name=app, user_id="u", session_id=session_id, state={"try": attempt}
                )
                for attempt in range(2)
            ),
            return_exceptions=True,
        )
        winners = [result for result in results if isinstance(result, Session)]
        losers = [result for result in results if isinstance(result, BaseException)]
        assert len(winners) == 1 and len(losers) == 1, results
        assert isinstance(losers[0], AlreadyExistsError) and session_id in str(losers[0])
        stored = await service.get_session(app_name=app, user_id="u", session_id=session_id)
        assert stored.state == winners[0].state


async def test_creates_in_many_new_apps_at_once_all_succeed(service, app):
    apps = [f"{app}-{index}" for index in range(5)]
    await asyncio.gather(
        *(service.create_session(app_name=name, user_id="u", session_id="s") for name in apps)
    )
    for name in apps:
        assert await service.get_session(app_name=name, user_id="u", session_id="s")


async def test_a_fully_populated_event_round_trips(service, app):
    session = await service.create_session(app_name=app, user_id="u")
    event = Event(
        invocation_id="inv",
        author="user",
        timestamp=1_700_000_000.123,
        content=types.Content(
            role="user",
            parts=[
                types.Part(text="look"),
                types.Part.from_bytes(data=b"\x89PNG image", mime_type="image/png"),
            ],
        ),
        turn_complete=True,
        partial=False,
        interrupted=True,
        error_code="error_code",
        error_message="error_message",
        actions=EventActions(
            artifact_delta={"file": 0},
            transfer_to_agent="agent",
            escalate=True,
            requested_tool_confirmations={
                "call-1": ToolConfirmation(
                    hint="confirm the album", confirmed=False, payload={"album": "a1"}
                )
            },
        ),
        long_running_tool_ids={"tool1"},
        grounding_metadata=types.GroundingMetadata(
            web_search_queries=["query"],
            search_entry_point=types.SearchEntryPoint(sdk_blob=b"\x00blob\xff"),
        ),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1, candidates_token_count=1, total_token_count=2
        ),
        citation_metadata=types.CitationMetadata(),
        custom_metadata={"custom_key": "custom_value"},
        input_transcription=types.Transcription(text="heard", finished=True),
        output_transcription=types.Transcription(text="said", finished=True),
    )
    await service.append_event(session, event)
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert stored == session
    assert stored.events[0].grounding_metadata.search_entry_point.sdk_blob == b"\x00blob\xff"
    confirmation = stored.events[0].actions.requested_tool_confirmations["call-1"]
    assert (confirmation.hint, confirmation.confirmed, confirmation.payload) == (
        "confirm the album",
        False,
        {"album": "a1"},
    )


async def test_a_state_value_json_cannot_hold_is_stored_as_its_text(service, app):
    _skip_in_memory(service, "ADK's in-memory service keeps objects; its database ones, text")
    session = await service.create_session(app_name=app, user_id="u")
    await service.append_event(session, _event(state_delta={"callback": lambda: 1, "ok": 2}))
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert len(stored.events) == 1 and stored.state["ok"] == 2
    assert isinstance(stored.state["callback"], str)


async def test_an_append_moves_last_update_time_to_the_events_timestamp(service, app):
    session = await service.create_session(app_name=app, user_id="u")
    created_at = session.last_update_time
    event = _event()
    event.timestamp = created_at + 10
    await service.append_event(session, event)
    assert session.last_update_time == pytest.approx(created_at + 10, abs=1e-6)
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert stored.last_update_time == pytest.approx(created_at + 10, abs=1e-6)


async def test_appending_to_a_deleted_session_raises_session_not_found(service, app):
    session = await service.create_session(app_name=app, user_id="u")
    await service.delete_session(app_name=app, user_id="u", session_id=session.id)
    with pytest.raises(SessionNotFoundError):
        await service.append_event(session, _event())


async def test_racing_appends_from_one_revision_have_one_winner(service, app):
    _skip_in_memory(service, "the in-memory reference has no stale check")
    session = await service.create_session(app_name=app, user_id="u")
    for round_number in range(8):
        latest = await service.get_session(app_name=app, user_id="u", session_id=session.id)
        copies = [latest.model_copy(deep=True) for _ in range(2)]
        results = await asyncio.gather(
            *(
                service.append_event(copy, _event(state_delta={f"r{round_number}": writer}))
                for writer, copy in enumerate(copies)
            ),
            return_exceptions=True,
        )
        losers = [result for result in results if isinstance(result, BaseException)]
        assert len(losers) == 1 and isinstance(losers[0], StaleSessionError), results
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert len(stored.events) == 8
    assert sorted(stored.state) == [f"r{round_number}" for round_number in range(8)]


async def test_a_current_session_appends_despite_time_drift_or_no_marker(service, app):
    """The revision, not the float time, says whether a session is current."""
    session = await service.create_session(app_name=app, user_id="u")
    await service.append_event(session, _event(text="one"))
    session.last_update_time -= 0.0001  # as a float round trip may leave it
    await service.append_event(session, _event(text="two"))
    session._storage_update_marker = None  # a session object that never had one
    session.last_update_time -= 0.0001
    await service.append_event(session, _event(text="three"))
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert [event.content.parts[0].text for event in stored.events] == ["one", "two", "three"]


async def test_user_state_is_per_app_and_user_latest_first_and_a_copy(service, app):
    assert await service.get_user_state(app_name=app, user_id="u1") == {}
    session = await service.create_session(
        app_name=app, user_id="u1", state={"user:profile": {"name": "Alice"}}
    )
    for count in (1, 2):
        await service.append_event(
            session, _event(state_delta={"user:counter": count, "session_key": count})
        )
    state = await service.get_user_state(app_name=app, user_id="u1")
    assert state == {"profile": {"name": "Alice"}, "counter": 2}
    assert await service.get_user_state(app_name=app, user_id="u2") == {}
    assert await service.get_user_state(app_name=f"{app}-other", user_id="u1") == {}
    state["profile"]["name"] = "Mallory"
    state["added"] = 1
    later = await service.create_session(app_name=app, user_id="u1")
    assert later.state == {"user:profile": {"name": "Alice"}, "user:counter": 2}


async def test_events_come_back_in_append_order_whatever_their_timestamps(service, app):
    """As InMemorySessionService keeps them (ADK's database services sort by
    timestamp, then id; the server's rule is the append order)."""
    session = await service.create_session(app_name=app, user_id="u")
    appended = []
    for event_id, timestamp in [("z", 100.0), ("a", 100.0), ("m", 100.0), ("early", 50.0)]:
        event = Event(author="user", id=event_id, timestamp=timestamp)
        appended.append(await service.append_event(session, event))
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert [event.id for event in stored.events] == ["z", "a", "m", "early"]
    recent = await service.get_session(
        app_name=app,
        user_id="u",
        session_id=session.id,
        config=GetSessionConfig(num_recent_events=2),
    )
    assert [event.id for event in recent.events] == ["m", "early"]


async def test_delete_removes_one_session_of_one_user_of_one_app(service, app):
    await service.create_session(app_name=app, user_id="u1", session_id="s")
    await service.create_session(app_name=app, user_id="u2", session_id="s")
    await service.delete_session(app_name=app, user_id="u1", session_id="s")
    assert await service.get_session(app_name=app, user_id="u1", session_id="s") is None
    assert (await service.get_session(app_name=app, user_id="u2", session_id="s")).id == "s"
    # Triples that name nothing stored leave the store as it was.
    await service.delete_session(app_name=app, user_id="u2", session_id="unknown")
    await service.delete_session(app_name=app, user_id="unknown", session_id="s")
    await service.delete_session(app_name=f"{app}-unknown", user_id="u2", session_id="s")
    assert await service.get_session(app_name=app, user_id="u2", session_id="s")


async def test_listing_shows_merged_state_without_temp_and_nothing_for_strangers(service, app):
    session = await service.create_session(
        app_name=app,
        user_id="u1",
        session_id="s1",
        state={"app:a": "av", "user:u": "uv", "sk": "sv", "temp:t": "tv"},
    )
    await service.append_event(session, _event(state_delta={"sk2": "sv2"}))
    (listed,) = (await service.list_sessions(app_name=app, user_id="u1")).sessions
    assert listed.events == []
    assert listed.state == {"app:a": "av", "user:u": "uv", "sk": "sv", "sk2": "sv2"}
    assert (await service.list_sessions(app_name=f"{app}-unknown")).sessions == []
    assert (await service.list_sessions(app_name=app, user_id="unknown")).sessions == []


async def test_a_different_event_under_a_stored_id_is_refused(service, app):
    _skip_in_memory(
        service,
        "ADK's in-memory service stores both; its database services refuse the duplicate key",
    )
    session = await service.create_session(app_name=app, user_id="u")
    first = Event(id="shared-id", invocation_id="inv-a", author="user")
    await service.append_event(session, first)
    with pytest.raises(EventIdConflictError):
        await service.append_event(
            session, Event(id="shared-id", invocation_id="inv-b", author="agent")
        )
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert [(event.id, event.author) for event in stored.events] == [("shared-id", "user")]
    assert session.events == stored.events


def _in_threads(work: Any, count: int) -> list[Any]:
    """Runs `work(index)` on `count` threads at once, each calling asyncio.run
    (its own event loop), as ADK's sync Runner.run does; what each returned,
    or raised, in order. A thread still running at the deadline fails the test."""
    results: list[Any] = [None] * count
    barrier = threading.Barrier(count)

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = work(index)
        except BaseException as error:  # reported by the main thread
            results[index] = error

    threads = [threading.Thread(target=run, args=(index,), daemon=True) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(THREAD_DEADLINE_SECONDS)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    return results


def test_threads_each_on_their_own_loop_share_one_service(service, app):
    threads, turns = 8, 5

    def converse(index: int) -> Session:
        async def run() -> Session:
            session = await service.create_session(
                app_name=app, user_id=f"u{index}", session_id="chat"
            )
            for turn in range(turns):
                delta = {"turn": turn, f"user:t{turn}": index, f"app:u{index}t{turn}": turn}
                await service.append_event(session, _event(text=f"{index}/{turn}"))
                await service.append_event(session, _event(state_delta=delta))
            stored = await service.get_session(app_name=app, user_id=f"u{index}", session_id="chat")
            assert stored is not None
            return stored

        return asyncio.run(run())

    results = _in_threads(converse, threads)
    failures = [result for result in results if isinstance(result, BaseException)]
    assert not failures, failures
    app_keys = {f"app:u{index}t{turn}" for index in range(threads) for turn in range(turns)}
    for index, stored in enumerate(results):
        assert len(stored.events) == 2 * turns
        assert stored.state["turn"] == turns - 1
        assert {key for key in stored.state if key.startswith("user:")} == {
            f"user:t{turn}" for turn in range(turns)
        }
        assert all(stored.state[f"user:t{turn}"] == index for turn in range(turns))
    final = asyncio.run(service.create_session(app_name=app, user_id="late"))
    assert {key for key in final.state if key.startswith("app:")} == app_keys


def test_racing_appends_from_threads_have_one_winner(service, app):
    _skip_in_memory(service, "the in-memory reference has no stale check")
    writers = 4
    session = asyncio.run(service.create_session(app_name=app, user_id="u"))
    copies = [session.model_copy(deep=True) for _ in range(writers)]

    def append(index: int) -> Event:
        return asyncio.run(service.append_event(copies[index], _event(state_delta={"by": index})))

    results = _in_threads(append, writers)
    winners = [index for index, result in enumerate(results) if isinstance(result, Event)]
    losers = [result for result in results if isinstance(result, BaseException)]
    assert len(winners) == 1, results
    assert all(isinstance(loser, StaleSessionError) for loser in losers), losers
    stored = asyncio.run(service.get_session(app_name=app, user_id="u", session_id=session.id))
    assert len(stored.events) == 1 and stored.state == {"by": winners[0]}
