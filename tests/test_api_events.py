"""Events over HTTP (openapi/openapi.json): appending, PATCH as a recorded state
change, and the paged event history, on SQLite and PostgreSQL (the `client`
fixture runs every test on both)."""

import asyncio
import base64
import json
import time
import uuid

import pytest
from google.adk.events import Event as AdkEvent
from google.adk.events import EventActions
from google.adk.sessions import Session as AdkSession
from google.genai import types

from session_state.core.config import Settings
from tests.conftest import asgi_client
from tests.paging import every_item
from tests.values import exactly

APP = "app"
USER = "u"
SESSIONS = f"/apps/{APP}/users/{USER}/sessions"
SESSION = f"{SESSIONS}/s"
EVENTS = f"{SESSION}/events"
SESSION_KEYS = {"id", "appName", "userId", "state", "events", "lastUpdateTime"}
SMALL_LIMIT = 2048


async def create(client, session_id="s", *, user=USER, state=None):
    response = await client.post(
        f"/apps/{APP}/users/{user}/sessions", json={"sessionId": session_id, "state": state or {}}
    )
    assert response.status_code == 201, response.text
    return response.json()


async def append(client, event, path=EVENTS, **headers):
    return await client.post(path, json=event, headers=headers)


async def appended(client, event, path=EVENTS):
    response = await append(client, event, path)
    assert response.status_code == 201, response.text
    return response.json()


async def session(client, path=SESSION):
    response = await client.get(path)
    assert response.status_code == 200, response.text
    return response


async def user_state(client, user=USER):
    return (await client.get(f"/apps/{APP}/users/{user}/state")).json()["state"]


async def app_state(client):
    return (await client.get(f"/apps/{APP}/state")).json()["state"]


async def snapshot(client):
    """Everything an append may change: the session, its ETag, user and app state."""
    response = await session(client)
    return (
        response.json(),
        response.headers["ETag"],
        await user_state(client),
        await app_state(client),
    )


def assert_problem(response, status, code):
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == code


# --- append ----------------------------------------------------------------------------------


async def test_an_append_answers_201_with_the_event_as_stored_and_the_bumped_etag(client):
    await create(client)
    event = {"id": "e1", "invocationId": "i1", "author": "agent", "timestamp": 1000.5}
    response = await append(client, event)
    assert response.status_code == 201
    assert response.headers["content-type"] == "application/json"
    assert response.headers["ETag"] == '"1"'
    assert response.json() == event
    second = await append(client, {"id": "e2", "author": "agent", "timestamp": 1001.5})
    assert second.headers["ETag"] == '"2"'
    stored = await session(client)
    assert stored.headers["ETag"] == '"2"'
    assert [e["id"] for e in stored.json()["events"]] == ["e1", "e2"]


async def test_a_missing_id_is_a_new_uuid4_and_a_missing_timestamp_the_server_time(client):
    await create(client)
    before = time.time()
    first = await appended(client, {"author": "agent"})
    second = await appended(client, {"author": "agent", "id": None, "timestamp": None})
    after = time.time()
    for event in (first, second):
        assert uuid.UUID(event["id"]).version == 4 and str(uuid.UUID(event["id"])) == event["id"]
        assert isinstance(event["timestamp"], float)
        assert before <= event["timestamp"] <= after
    assert first["id"] != second["id"]
    stored = (await session(client)).json()["events"]
    assert stored == [first, second]


async def test_the_session_last_update_time_becomes_the_event_timestamp(client):
    created = await create(client)
    await appended(client, {"author": "a", "timestamp": 1234.5})
    # ADK's rule: the event's timestamp, even when it is older than the session.
    assert created["lastUpdateTime"] > 1234.5
    assert (await session(client)).json()["lastUpdateTime"] == 1234.5
    timestamp = 1700000000.1234567
    await appended(client, {"author": "a", "timestamp": timestamp})
    assert (await session(client)).json()["lastUpdateTime"].hex() == timestamp.hex()
    listed = (await client.get(SESSIONS)).json()["sessions"][0]
    assert listed["lastUpdateTime"].hex() == timestamp.hex()


async def test_a_server_stamped_event_sets_last_update_time_to_its_timestamp(client):
    await create(client)
    event = await appended(client, {"author": "a"})
    assert (await session(client)).json()["lastUpdateTime"] == event["timestamp"]


async def test_a_partial_event_is_answered_200_and_changes_nothing(client):
    await create(client, state={"k": "before", "user:u": "before", "app:a": "before"})
    await appended(client, {"id": "e1", "author": "a", "timestamp": 50.0})
    before = await snapshot(client)
    event = {
        "id": "p1",
        "author": "a",
        "partial": True,
        "timestamp": 99.0,
        "content": {"parts": [{"text": "stream"}]},
        "actions": {"stateDelta": {"k": "after", "user:u": "after", "app:a": "after"}},
    }
    response = await append(client, event)
    assert response.status_code == 200
    assert response.headers["Session-State-Persisted"] == "false"
    assert response.json() == event
    assert await snapshot(client) == before
    assert (await client.get(EVENTS)).json()["events"] == before[0]["events"]
    following = await append(client, {"author": "a"})
    assert following.headers["ETag"] == '"2"'


async def test_a_stored_event_does_not_claim_it_was_not_persisted(client):
    await create(client)
    response = await append(client, {"author": "a", "partial": False})
    assert response.status_code == 201
    assert response.headers.get("Session-State-Persisted") != "false"


async def test_an_append_with_the_current_revision_in_if_match_is_stored(client):
    await create(client)
    first = await append(client, {"author": "a"}, **{"If-Match": '"0"'})
    assert first.status_code == 201 and first.headers["ETag"] == '"1"'
    second = await append(client, {"author": "a"}, **{"If-Match": first.headers["ETag"]})
    assert second.status_code == 201 and second.headers["ETag"] == '"2"'
    assert len((await session(client)).json()["events"]) == 2


async def test_an_append_with_a_stale_if_match_is_412_and_writes_nothing(client):
    await create(client, state={"k": "before"})
    await appended(client, {"author": "a"})
    before = await snapshot(client)
    delta = {"k": "after", "user:u": "after", "app:a": "after"}
    for stale in ['"0"', '"2"', '"99"']:
        response = await append(
            client,
            {"id": "late", "author": "b", "actions": {"stateDelta": delta}},
            **{"If-Match": stale},
        )
        assert_problem(response, 412, "stale_session")
    assert await snapshot(client) == before
    # The refused event id was not kept: it is appended as new, not as a retry.
    assert (await append(client, {"id": "late", "author": "b"})).status_code == 201


async def test_of_writers_holding_the_same_revision_exactly_one_wins(client):
    await create(client)
    responses = await asyncio.gather(
        *(
            append(
                client,
                {"id": f"w{index}", "author": "a", "actions": {"stateDelta": {"winner": index}}},
                **{"If-Match": '"0"'},
            )
            for index in range(5)
        )
    )
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [201, 412, 412, 412, 412]
    winner = next(index for index, r in enumerate(responses) if r.status_code == 201)
    stored = await session(client)
    assert [event["id"] for event in stored.json()["events"]] == [f"w{winner}"]
    assert stored.json()["state"] == {"winner": winner}
    assert stored.headers["ETag"] == '"1"'


@pytest.mark.parametrize("if_match", ["yesterday", '"3', ""], ids=["word", "unbalanced", "empty"])
async def test_a_malformed_if_match_is_400_and_writes_nothing(client, if_match):
    await create(client)
    before = await snapshot(client)
    response = await append(
        client, {"author": "a", "actions": {"stateDelta": {"k": 1}}}, **{"If-Match": if_match}
    )
    assert_problem(response, 400, "bad_request")
    assert await snapshot(client) == before


async def test_a_retry_of_a_stored_event_returns_it_and_applies_nothing_twice(client):
    await create(client)
    first_event = {
        "id": "e1",
        "author": "a",
        "timestamp": 10.0,
        "actions": {"stateDelta": {"k": "first", "user:visits": 1, "temp:scratch": "x"}},
    }
    first = await append(client, first_event)
    assert first.status_code == 201
    await appended(
        client,
        {"id": "e2", "author": "a", "timestamp": 20.0, "actions": {"stateDelta": {"k": "second"}}},
    )
    retry = await append(client, first_event)
    assert retry.status_code == 200
    assert retry.json() == first.json()
    again = await session(client)
    assert [e["id"] for e in again.json()["events"]] == ["e1", "e2"]
    assert again.json()["state"] == {"k": "second", "user:visits": 1}
    assert again.json()["lastUpdateTime"] == 20.0
    assert again.headers["ETag"] == '"2"'


async def test_a_retry_is_recognised_even_when_its_if_match_is_now_stale(client):
    await create(client)
    event = {"id": "e1", "author": "a", "actions": {"stateDelta": {"count": 1}}}
    first = await append(client, event, **{"If-Match": '"0"'})
    assert first.status_code == 201
    retry = await append(client, event, **{"If-Match": '"0"'})
    assert retry.status_code == 200, retry.text
    assert retry.json() == first.json()
    assert retry.headers["ETag"] == first.headers["ETag"] == '"1"'
    stored = await session(client)
    assert len(stored.json()["events"]) == 1 and stored.headers["ETag"] == '"1"'


async def test_a_retry_without_timestamp_keeps_the_first_timestamp(client):
    await create(client)
    event = {"id": "e1", "author": "a", "content": {"parts": [{"text": "hi"}]}}
    first = await appended(client, event)
    retry = await append(client, event)
    assert retry.status_code == 200
    assert retry.json() == first
    assert (await session(client)).json()["events"] == [first]


async def test_an_event_id_reused_with_other_content_is_409_and_writes_nothing(client):
    await create(client)
    await appended(
        client, {"id": "e1", "author": "a", "timestamp": 1.0, "actions": {"stateDelta": {"k": 1}}}
    )
    before = await snapshot(client)
    for changed in [
        {"id": "e1", "author": "a", "timestamp": 1.0, "actions": {"stateDelta": {"k": 2}}},
        {"id": "e1", "author": "b", "timestamp": 1.0, "actions": {"stateDelta": {"k": 1}}},
        {"id": "e1", "author": "a", "timestamp": 2.0, "actions": {"stateDelta": {"k": 1}}},
    ]:
        assert_problem(await append(client, changed), 409, "event_id_conflict")
    assert await snapshot(client) == before


async def test_event_ids_are_unique_per_session_only(client):
    await create(client, "one")
    await create(client, "two")
    event = {"id": "same", "author": "a", "timestamp": 1.0}
    assert (await append(client, event, f"{SESSIONS}/one/events")).status_code == 201
    assert (await append(client, event, f"{SESSIONS}/two/events")).status_code == 201


async def test_an_append_to_a_missing_session_is_404(client):
    await create(client)
    for path in [
        f"{SESSIONS}/missing/events",
        f"/apps/{APP}/users/other/sessions/s/events",
        f"/apps/other/users/{USER}/sessions/s/events",
    ]:
        assert_problem(await append(client, {"author": "a"}, path), 404, "session_not_found")
        response = await append(client, {"author": "a"}, path, **{"If-Match": '"0"'})
        assert_problem(response, 404, "session_not_found")
    assert (await session(client)).json()["events"] == []


INVALID_EVENTS = [
    ([{"author": "a"}], ["body"]),
    ("event", ["body"]),
    (42, ["body"]),
    (None, ["body"]),
    ({}, ["body", "author"]),
    ({"id": "e1", "content": {}}, ["body", "author"]),
    ({"author": 7}, ["body", "author"]),
    ({"author": None}, ["body", "author"]),
    ({"author": "a", "id": 123}, ["body", "id"]),
    ({"author": "a", "id": ["e1"]}, ["body", "id"]),
    ({"author": "a", "timestamp": "yesterday"}, ["body", "timestamp"]),
    ({"author": "a", "timestamp": True}, ["body", "timestamp"]),
    ({"author": "a", "timestamp": [1.0]}, ["body", "timestamp"]),
    ({"author": "a", "actions": {"stateDelta": [["k", 1]]}}, ["body", "actions", "stateDelta"]),
    ({"author": "a", "actions": {"stateDelta": "k=1"}}, ["body", "actions", "stateDelta"]),
    ({"author": "a", "actions": {"stateDelta": 1}}, ["body", "actions", "stateDelta"]),
    ({"author": "a", "actions": []}, ["body", "actions"]),
]


async def test_an_event_that_breaks_the_contract_is_422_naming_the_field(client):
    await create(client)
    for document, loc in INVALID_EVENTS:
        response = await client.post(EVENTS, content=json.dumps(document))
        body = response.json()
        assert response.status_code == 422, (document, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert body["code"] == "validation_error"
        assert loc in [error["loc"] for error in body["errors"]], (document, body["errors"])
    missing = await client.post(EVENTS)
    assert_problem(missing, 422, "validation_error")
    stored = await session(client)
    assert stored.json()["events"] == [] and stored.headers["ETag"] == '"0"'


@pytest.mark.parametrize(
    "content",
    [
        b'{"author": "a"',
        b'{"author": "a"} trailing',
        b"{'author': 'a'}",
        b'{"author": "a", "timestamp": NaN}',
        b'{"author": "\xff"}',
    ],
    ids=["truncated", "trailing garbage", "single quotes", "NaN", "invalid utf-8"],
)
async def test_a_body_that_is_not_json_is_400_and_writes_nothing(client, content):
    await create(client)
    response = await client.post(
        EVENTS, content=content, headers={"Content-Type": "application/json"}
    )
    assert_problem(response, 400, "bad_request")
    stored = await session(client)
    assert stored.json()["events"] == [] and stored.headers["ETag"] == '"0"'


@pytest.fixture
async def small_limit_client(database_url):
    """A client of an app whose request bodies are limited to SMALL_LIMIT bytes."""
    async with asgi_client(Settings(database_url=database_url, max_body_bytes=SMALL_LIMIT)) as http:
        yield http


def event_of_size(size):
    """An event whose JSON encoding (as httpx sends it) is exactly `size` bytes."""
    event = {"author": "a", "content": {"parts": [{"text": ""}]}}
    overhead = len(json.dumps(event, separators=(",", ":")).encode())
    event["content"]["parts"][0]["text"] = "x" * (size - overhead)
    return json.dumps(event, separators=(",", ":")).encode()


async def test_a_body_above_the_limit_is_413_and_writes_nothing(small_limit_client):
    client = small_limit_client
    await create(client)
    response = await client.post(EVENTS, content=event_of_size(SMALL_LIMIT + 1))
    assert_problem(response, 413, "payload_too_large")

    async def chunked():
        body = event_of_size(4 * SMALL_LIMIT)
        for start in range(0, len(body), 512):
            yield body[start : start + 512]

    chunked_response = await client.post(EVENTS, content=chunked())
    assert_problem(chunked_response, 413, "payload_too_large")
    stored = await session(client)
    assert stored.json()["events"] == [] and stored.headers["ETag"] == '"0"'


async def test_a_body_at_the_limit_is_accepted(small_limit_client):
    await create(small_limit_client)
    response = await small_limit_client.post(EVENTS, content=event_of_size(SMALL_LIMIT))
    assert response.status_code == 201, response.text


async def test_a_session_create_above_the_limit_is_413_and_creates_nothing(small_limit_client):
    body = {"sessionId": "big", "state": {"k": "x" * SMALL_LIMIT}}
    response = await small_limit_client.post(SESSIONS, json=body)
    assert_problem(response, 413, "payload_too_large")
    assert (await small_limit_client.get(SESSIONS)).json()["sessions"] == []


async def test_an_event_with_a_one_mebibyte_payload_is_stored_under_the_default_limit(client):
    await create(client)
    data = base64.b64encode(bytes(range(256)) * 3072).decode()  # 1 MiB of base64
    assert len(data) == 1024 * 1024
    event = {
        "id": "image",
        "author": "user",
        "timestamp": 1.0,
        "content": {
            "role": "user",
            "parts": [{"inlineData": {"mimeType": "image/png", "data": data}}],
        },
    }
    response = await append(client, event)
    assert response.status_code == 201
    assert response.json() == event
    assert (await session(client)).json()["events"] == [event]


VERBATIM_EVENT = {
    "id": "verbatim",
    "invocationId": "inv-1",
    "author": "agent",
    "timestamp": 1700000000.1234567,
    "futureField": {"nested": [1, "two", {"three": None, "four": []}], "empty": {}},
    "unicode": 'é中😀 \u2028 "quoted" \\ back',
    "control": "\u0001\u001f\n\u007f",  # NUL is refused: test_hostile_text.py
    "big": 2**70,
    "negativeBig": -(2**70),
    "u64": 2**64 - 1,
    "floats": [0.1 + 0.2, 1e-300, 5e-324, 1.7976931348623157e308, -0.0, 1.0, 1 / 3],
    "integers": [0, -1, 2**53 + 1],
    "flags": [True, False, None],
    "actions": {"stateDelta": {"k": 0.1 + 0.2}, "futureAction": {"x": 1e-300}},
    "content": {
        "role": "model",
        "parts": [{"inlineData": {"mimeType": "application/octet-stream", "data": "AAEC/w=="}}],
    },
}


async def test_events_are_stored_verbatim_to_the_last_bit(client):
    await create(client)
    response = await append(client, VERBATIM_EVENT)
    assert response.status_code == 201, response.text
    assert exactly(response.json()) == exactly(VERBATIM_EVENT)
    from_session = (await session(client)).json()
    assert exactly(from_session["events"]) == exactly([VERBATIM_EVENT])
    from_history = (await client.get(EVENTS)).json()["events"]
    assert exactly(from_history) == exactly([VERBATIM_EVENT])
    assert exactly(from_session["state"]) == exactly({"k": 0.1 + 0.2})
    assert from_session["lastUpdateTime"].hex() == VERBATIM_EVENT["timestamp"].hex()
    retry = await append(client, VERBATIM_EVENT)
    assert retry.status_code == 200
    assert exactly(retry.json()) == exactly(VERBATIM_EVENT)


async def test_an_integer_timestamp_comes_back_as_the_integer_sent(client):
    await create(client)
    event = {"id": "e1", "author": "a", "timestamp": 1700000000}
    assert exactly(await appended(client, event)) == exactly(event)
    stored = (await session(client)).json()
    assert exactly(stored["events"]) == exactly([event])
    assert stored["lastUpdateTime"] == 1700000000


def adk_event():
    return AdkEvent(
        invocation_id="inv-1",
        author="weather_agent",
        branch="root.weather_agent",
        content=types.Content(
            role="model",
            parts=[
                types.Part(text="Looking it up."),
                types.Part(function_call=types.FunctionCall(id="c1", name="get", args={"q": 1})),
                types.Part(
                    function_response=types.FunctionResponse(
                        id="c1", name="get", response={"temperature": 21.5, "unit": "C"}
                    )
                ),
                types.Part(inline_data=types.Blob(mime_type="image/png", data=bytes(range(256)))),
            ],
        ),
        actions=EventActions(
            state_delta={"city": "Paris", "user:units": "metric", "app:calls": 3},
            artifact_delta={"report.txt": 2},
        ),
        custom_metadata={"trace": {"span": "abc"}},
    )


async def test_an_adk_event_round_trips_to_an_equal_event(client):
    await create(client)
    event = adk_event()
    dumped = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    response = await append(client, dumped)
    assert response.status_code == 201, response.text
    assert response.json() == dumped
    assert AdkEvent.model_validate(response.json()) == event
    stored = AdkSession.model_validate((await session(client)).json())
    assert stored.events == [event]
    assert stored.state == {"city": "Paris", "user:units": "metric", "app:calls": 3}
    assert stored.last_update_time == event.timestamp


async def test_snake_case_event_fields_are_read_and_kept_as_sent(client):
    await create(client)
    event = {
        "id": "e1",
        "invocation_id": "inv",
        "author": "a",
        "timestamp": 5.0,
        "actions": {"state_delta": {"k": 1, "user:u": 2, "temp:t": 3}},
    }
    stored = await appended(client, event)
    assert stored == {**event, "actions": {"state_delta": {"k": 1, "user:u": 2}}}
    assert (await session(client)).json()["state"] == {"k": 1, "user:u": 2}


# --- PATCH -----------------------------------------------------------------------------------


async def test_patch_changes_the_state_and_answers_the_session(client):
    await create(client, state={"k": "old", "kept": True})
    response = await client.patch(
        SESSION,
        json={"stateDelta": {"k": "new", "user:tier": "gold", "app:flag": 1, "temp:t": 0}},
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["ETag"] == '"1"'
    body = response.json()
    assert set(body) == SESSION_KEYS
    AdkSession.model_validate(body)
    expected = {"k": "new", "kept": True, "user:tier": "gold", "app:flag": 1}
    assert body["state"] == expected
    fetched = await session(client)
    assert fetched.json() == body and fetched.headers["ETag"] == '"1"'
    assert await user_state(client) == {"tier": "gold"}
    assert await app_state(client) == {"flag": 1}


async def test_patch_is_recorded_as_an_event_of_the_user(client):
    await create(client)
    await appended(client, {"id": "e0", "author": "agent", "timestamp": 1.0})
    before = time.time()
    body = (await client.patch(SESSION, json={"stateDelta": {"k": 1, "temp:t": 2}})).json()
    after = time.time()
    assert len(body["events"]) == 2 and body["events"][0]["id"] == "e0"
    recorded = body["events"][-1]
    assert recorded["author"] == "user"
    assert recorded["invocationId"].startswith("p-")
    assert recorded["actions"]["stateDelta"] == {"k": 1}
    assert recorded["id"] and recorded["id"] != "e0"
    assert before <= recorded["timestamp"] <= after
    assert body["lastUpdateTime"] == recorded["timestamp"]
    history = (await client.get(EVENTS)).json()["events"]
    assert history == body["events"]


async def test_patch_accepts_snake_case_state_delta(client):
    await create(client)
    response = await client.patch(SESSION, json={"state_delta": {"k": 1}})
    assert response.status_code == 200, response.text
    assert response.json()["state"] == {"k": 1}


async def test_patch_with_the_current_revision_in_if_match_is_applied(client):
    await create(client)
    await appended(client, {"author": "a"})
    response = await client.patch(
        SESSION, json={"stateDelta": {"k": 1}}, headers={"If-Match": '"1"'}
    )
    assert response.status_code == 200, response.text
    assert response.headers["ETag"] == '"2"'
    assert response.json()["state"] == {"k": 1}


async def test_patch_with_a_stale_if_match_is_412_and_writes_nothing(client):
    await create(client, state={"k": "before"})
    await appended(client, {"author": "a"})
    before = await snapshot(client)
    response = await client.patch(
        SESSION,
        json={"stateDelta": {"k": "after", "user:u": 1, "app:a": 1}},
        headers={"If-Match": '"0"'},
    )
    assert_problem(response, 412, "stale_session")
    assert await snapshot(client) == before


async def test_patch_with_a_malformed_if_match_is_400_and_writes_nothing(client):
    await create(client)
    before = await snapshot(client)
    response = await client.patch(
        SESSION, json={"stateDelta": {"k": 1}}, headers={"If-Match": "yesterday"}
    )
    assert_problem(response, 400, "bad_request")
    assert await snapshot(client) == before


async def test_patch_of_a_missing_session_is_404(client):
    response = await client.patch(f"{SESSIONS}/missing", json={"stateDelta": {"k": 1}})
    assert_problem(response, 404, "session_not_found")
    assert await user_state(client) == {}


async def test_patch_without_a_state_delta_object_is_422(client):
    await create(client)
    for body in [{}, {"state": {"k": 1}}, {"stateDelta": [1]}, {"stateDelta": "k"}, [1]]:
        response = await client.patch(SESSION, json=body)
        assert_problem(response, 422, "validation_error")
        assert response.json()["errors"], body
    assert_problem(await client.patch(SESSION), 422, "validation_error")
    assert_problem(await client.patch(SESSION, content=b"{"), 400, "bad_request")
    stored = await session(client)
    assert stored.json()["events"] == [] and stored.headers["ETag"] == '"0"'


# --- the event history -----------------------------------------------------------------------


@pytest.fixture
async def history(client):
    """Session "s" with e0..e5 appended, timestamps 10..15 except e2 and e3 swapped."""
    await create(client)
    for index, timestamp in enumerate([10.0, 11.0, 13.0, 12.0, 14.0, 15.0]):
        await appended(client, {"id": f"e{index}", "author": "a", "timestamp": timestamp})
    return client


APPEND_ORDER = ["e0", "e1", "e2", "e3", "e4", "e5"]


async def walk(client, path=EVENTS, **params):
    """The ids of every event of the history, page after page."""
    return [event["id"] for event in await every_item(client, path, "events", **params)]


async def test_the_history_is_in_append_order_by_default(history):
    response = await history.get(EVENTS)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"events", "nextPageToken"}
    assert body["nextPageToken"] is None
    assert [event["id"] for event in body["events"]] == APPEND_ORDER
    assert body["events"] == (await session(history)).json()["events"]
    assert await walk(history, order="asc") == APPEND_ORDER


async def test_the_history_in_desc_order_is_newest_appended_first(history):
    assert await walk(history, order="desc") == APPEND_ORDER[::-1]


async def test_pages_of_the_history_walk_every_event_once(history):
    for order, expected in [("asc", APPEND_ORDER), ("desc", APPEND_ORDER[::-1])]:
        for page_size in [1, 2, 4, 6, 7]:
            assert await walk(history, order=order, pageSize=page_size) == expected


async def test_the_history_after_a_timestamp_is_inclusive_in_both_orders(history):
    assert await walk(history, afterTimestamp=12.0) == ["e2", "e3", "e4", "e5"]
    assert await walk(history, afterTimestamp=12.5) == ["e2", "e4", "e5"]
    assert await walk(history, afterTimestamp=12.0, order="desc") == ["e5", "e4", "e3", "e2"]
    assert await walk(history, afterTimestamp=12.0, pageSize=1) == ["e2", "e3", "e4", "e5"]
    assert await walk(history, afterTimestamp=12.0, order="desc", pageSize=3) == [
        "e5",
        "e4",
        "e3",
        "e2",
    ]
    assert await walk(history, afterTimestamp=15.5) == []


async def test_the_history_of_a_missing_session_is_404(client):
    assert_problem(await client.get(f"{SESSIONS}/missing/events"), 404, "session_not_found")


async def test_an_empty_history_is_an_empty_page(client):
    await create(client)
    assert (await client.get(EVENTS)).json() == {"events": [], "nextPageToken": None}


async def test_a_history_page_token_from_another_list_is_400(history):
    desc = (await history.get(EVENTS, params={"order": "desc", "pageSize": 2})).json()
    asc = (await history.get(EVENTS, params={"order": "asc", "pageSize": 2})).json()
    assert desc["nextPageToken"] and asc["nextPageToken"]
    mixed = await history.get(EVENTS, params={"order": "asc", "pageToken": desc["nextPageToken"]})
    assert_problem(mixed, 400, "bad_request")
    mixed = await history.get(EVENTS, params={"order": "desc", "pageToken": asc["nextPageToken"]})
    assert_problem(mixed, 400, "bad_request")
    for index in range(2):
        await create(history, f"more{index}")
    sessions_page = (await history.get(SESSIONS, params={"pageSize": 1})).json()
    assert sessions_page["nextPageToken"]
    foreign = await history.get(EVENTS, params={"pageToken": sessions_page["nextPageToken"]})
    assert_problem(foreign, 400, "bad_request")


async def test_a_history_page_token_that_is_not_one_of_ours_is_400(history):
    for token in ["@@", "not a token", "e30", "W10", "eyJrIjoiZXZlbnRzIiwicCI6WyJhc2MiXX0"]:
        response = await history.get(EVENTS, params={"pageToken": token})
        assert response.status_code == 400, (token, response.text)
        assert_problem(response, 400, "bad_request")


async def test_history_query_parameters_out_of_bounds_are_422(history):
    for params, loc in [
        ({"pageSize": 0}, ["query", "pageSize"]),
        ({"pageSize": 1001}, ["query", "pageSize"]),
        ({"order": "sideways"}, ["query", "order"]),
        ({"afterTimestamp": "yesterday"}, ["query", "afterTimestamp"]),
    ]:
        response = await history.get(EVENTS, params=params)
        assert_problem(response, 422, "validation_error")
        assert response.json()["errors"][0]["loc"] == loc
    assert (await history.get(EVENTS, params={"pageSize": 1000})).status_code == 200
