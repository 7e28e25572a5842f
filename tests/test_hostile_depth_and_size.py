"""Hostile depth and size: nesting, key length, each scope's state, one
event and every response are bounded by documented, configurable limits; a
request past one is a clear 4xx with nothing written, and a session too large
to read whole says how to read it. Both backends, with small limits so that
the tests stay small."""

import json

import pytest

from session_state.core.config import RESPONSE_OVERHEAD_BYTES, Settings
from tests.hostile import App, assert_app_still_readable, assert_problem, strict_json

STATE_LIMIT = 2048
EVENT_LIMIT = 4096
RESPONSE_LIMIT = EVENT_LIMIT + 3 * STATE_LIMIT + RESPONSE_OVERHEAD_BYTES + 4096
SESSION_EVENTS_BUDGET = RESPONSE_LIMIT - 3 * STATE_LIMIT - RESPONSE_OVERHEAD_BYTES
PAGE_BUDGET = RESPONSE_LIMIT - RESPONSE_OVERHEAD_BYTES

app = App("sizes")


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        max_state_bytes=STATE_LIMIT,
        max_event_bytes=EVENT_LIMIT,
        max_response_bytes=RESPONSE_LIMIT,
    )


@pytest.fixture(autouse=True)
async def session(client):
    await app.create(client)


def nested(levels):
    value = []
    for _ in range(levels - 1):
        value = [value]
    return value


# -- depth -------------------------------------------------------------------


async def test_nesting_up_to_the_limit_is_stored_on_both_backends(client):
    # The body is an object (1), actions (2), stateDelta (3), the value (4..64).
    delta = {"app:deep": nested(61)}
    response = await app.append(client, {"author": "a", "actions": {"stateDelta": delta}})
    assert response.status_code == 201, response.text
    state = strict_json((await client.get(app.session_path)).text)["state"]
    assert state["app:deep"] == nested(61)


@pytest.mark.parametrize("levels", [62, 300, 1_000, 1_025, 100_000])
async def test_nesting_past_the_limit_is_one_422_whatever_the_depth(client, levels):
    body = (
        b'{"author": "a", "actions": {"stateDelta": {"app:deep": '
        + b"[" * levels
        + b"]" * levels
        + b"}}}"
    )
    problem = assert_problem(await app.append_raw(client, body), 422, "validation_error")
    assert "nest" in problem["errors"][0]["msg"]
    created = await client.post(
        app.sessions,
        content=b'{"state": {"k": ' + b"[" * (levels + 1) + b"]" * (levels + 1) + b"}}",
    )
    assert_problem(created, 422, "validation_error")
    await assert_app_still_readable(client, app)


# -- keys --------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["app:", "user:", ""])
async def test_state_keys_longer_than_the_limit_are_refused(client, prefix):
    long_key = prefix + "k" * (256 - len(prefix) + 1)
    response = await app.append(client, {"author": "a", "actions": {"stateDelta": {long_key: 1}}})
    problem = assert_problem(response, 422, "validation_error")
    assert "256 characters" in problem["errors"][0]["msg"]
    created = await client.post(app.sessions, json={"state": {prefix + "k" * 3000: 1}})
    assert_problem(created, 422, "validation_error")
    patched = await client.patch(app.session_path, json={"stateDelta": {long_key: 1}})
    problem = assert_problem(patched, 422, "validation_error")
    assert problem["errors"][0]["loc"][:2] == ["body", "stateDelta"]
    fits = prefix + "k" * (256 - len(prefix))
    response = await app.append(client, {"author": "a", "actions": {"stateDelta": {fits: 1}}})
    assert response.status_code == 201, response.text
    await assert_app_still_readable(client, app)


# -- state -------------------------------------------------------------------


def filler(size):
    return "x" * size


@pytest.mark.parametrize("scope", ["app:", "user:", ""])
async def test_a_delta_that_would_pass_a_scope_limit_is_refused_with_nothing_written(client, scope):
    first = {"author": "a", "actions": {"stateDelta": {f"{scope}a": filler(1200)}}}
    assert (await app.append(client, first)).status_code == 201
    second = {"id": "big", "author": "a", "actions": {"stateDelta": {f"{scope}b": filler(1200)}}}
    problem = assert_problem(await app.append(client, second), 422, "state_too_large")
    expected_scope = {"app:": "app", "user:": "user", "": "session"}[scope]
    assert f"{expected_scope} state" in problem["detail"]
    stored = (await client.get(app.session_path)).json()
    assert [event["id"] for event in stored["events"]] != ["big"]
    assert len(stored["events"]) == 1 and f"{scope}b" not in stored["state"]
    # Replacing a value by one of the same size still fits.
    again = {"author": "a", "actions": {"stateDelta": {f"{scope}a": filler(1200)}}}
    assert (await app.append(client, again)).status_code == 201
    await assert_app_still_readable(client, app)


async def test_patch_and_create_are_held_to_the_same_limit(client):
    patched = await client.patch(app.session_path, json={"stateDelta": {"k": filler(3000)}})
    assert_problem(patched, 422, "state_too_large")
    created = await client.post(
        app.sessions, json={"sessionId": "x", "state": {"app:k": filler(3000)}}
    )
    assert_problem(created, 422, "state_too_large")
    assert (await client.get(f"{app.sessions}/x")).status_code == 404
    assert (await client.get(f"/apps/{app.app}/state")).json() == {"state": {}}


async def test_a_retry_is_recognised_even_when_its_delta_would_no_longer_fit(client):
    event = {"id": "e1", "author": "a", "actions": {"stateDelta": {"app:a": filler(1200)}}}
    assert (await app.append(client, event)).status_code == 201
    other = {"author": "a", "actions": {"stateDelta": {"app:b": filler(700)}}}
    assert (await app.append(client, other)).status_code == 201
    assert (await app.append(client, event)).status_code == 200


# -- events and responses ----------------------------------------------------


async def test_an_event_larger_than_the_limit_is_a_413_with_nothing_written(client):
    event = {"author": "a", "content": {"parts": [{"text": filler(EVENT_LIMIT)}]}}
    assert_problem(await app.append(client, event), 413, "event_too_large")
    assert (await client.get(app.session_path)).json()["events"] == []


async def fill(client, count, text_size=2000):
    for index in range(count):
        event = {
            "id": f"e{index:03d}",
            "author": "a",
            "content": {"parts": [{"text": filler(text_size)}]},
        }
        assert (await app.append(client, event)).status_code == 201


async def test_a_session_too_large_to_read_whole_says_how_to_read_it(client):
    await fill(client, 8)  # about 16 KB of events against a budget of about 8 KB
    problem = assert_problem(await client.get(app.session_path), 413, "response_too_large")
    assert "numRecentEvents" in problem["detail"] and "/events" in problem["detail"]
    recent = await client.get(app.session_path, params={"numRecentEvents": 2})
    assert recent.status_code == 200
    assert [e["id"] for e in recent.json()["events"]] == ["e006", "e007"]
    await assert_app_still_readable(client, App("sizes", session="canary"))


async def test_event_pages_are_bounded_in_bytes_and_walk_the_whole_history(client):
    await fill(client, 12)
    seen, token, pages = [], None, 0
    while True:
        params = {"pageSize": 1000, **({"pageToken": token} if token else {})}
        response = await client.get(app.events, params=params)
        assert response.status_code == 200, response.text
        assert len(response.content) <= RESPONSE_LIMIT
        body = response.json()
        events_bytes = sum(len(json.dumps(e, separators=(",", ":"))) for e in body["events"])
        assert events_bytes <= PAGE_BUDGET
        seen += [event["id"] for event in body["events"]]
        pages += 1
        token = body["nextPageToken"]
        if token is None:
            break
    assert seen == [f"e{index:03d}" for index in range(12)]
    assert pages >= 2


async def test_session_pages_are_bounded_in_bytes_and_list_every_session(client):
    await client.patch(app.session_path, json={"stateDelta": {"app:shared": filler(1500)}})
    for index in range(12):
        await app.create(client, f"s{index:02d}", state={"k": filler(1500)})
    listed, token = [], None
    while True:
        params = {"pageSize": 1000, **({"pageToken": token} if token else {})}
        response = await client.get(app.sessions, params=params)
        assert response.status_code == 200, response.text
        assert len(response.content) <= RESPONSE_LIMIT
        listed += [session["id"] for session in response.json()["sessions"]]
        token = response.json()["nextPageToken"]
        if token is None:
            break
    assert sorted(listed) == sorted([app.session] + [f"s{index:02d}" for index in range(12)])


async def test_memory_results_are_bounded_in_bytes_best_first(client):
    for index in range(10):
        text = f"zebra {index} " + filler(2500)
        event = {"id": f"m{index}", "author": "a", "content": {"parts": [{"text": text}]}}
        assert (await app.append(client, event)).status_code == 201
    memory = f"/apps/{app.app}/users/{app.user}/memory"
    assert (await client.post(memory, json={"sessionId": app.session})).status_code == 200
    found = await client.get(memory, params={"query": "zebra", "limit": 100})
    assert found.status_code == 200, found.text
    texts = [entry["content"]["parts"][0]["text"] for entry in found.json()["memories"]]
    assert 1 <= len(texts) < 10
    assert sum(len(text) for text in texts) <= PAGE_BUDGET


def test_a_response_bound_too_small_for_one_event_and_state_stops_the_start():
    with pytest.raises(ValueError, match=r"SESSION_STATE_MAX_RESPONSE_BYTES .* must be at least"):
        Settings(max_event_bytes=8 * 1024 * 1024, max_response_bytes=8 * 1024 * 1024)
