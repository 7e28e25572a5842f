"""Hostile numbers: values JSON cannot carry back (infinity) and timestamps
nothing can show are refused with a 422 naming the field, nothing is
written, and the app stays readable for everyone. Both backends."""

import pytest

from session_state.core.limits import MAX_TIMESTAMP
from tests.hostile import App, assert_app_still_readable, assert_problem, strict_json

app = App("numbers")


@pytest.fixture(autouse=True)
async def session(client):
    await app.create(client)


async def test_infinity_beside_a_big_integer_is_refused_and_the_app_stays_readable(client):
    # Stored as text "Infinity" before, then every read of the app was a 500.
    body = b'{"author": "a", "actions": {"stateDelta": {"app:k": [1e999, 100000000000000000000]}}}'
    problem = assert_problem(await app.append_raw(client, body), 422, "validation_error")
    assert problem["errors"][0]["loc"] == ["body", "actions", "stateDelta", "app:k", 0]
    assert "finite" in problem["errors"][0]["msg"]
    await assert_app_still_readable(client, app)
    assert (await client.get(f"/apps/{app.app}/state")).json() == {"state": {}}


@pytest.mark.parametrize(
    "number",
    [b"1e999", b"-1e999", b"1" + b"0" * 400 + b".0", b"123456789012345678901234e400"],
)
async def test_a_number_that_reads_as_infinity_is_refused_not_stored_as_null(client, number):
    body = b'{"author": "a", "actions": {"stateDelta": {"k": ' + number + b"}}}"
    problem = assert_problem(await app.append_raw(client, body), 422, "validation_error")
    assert problem["errors"][0]["loc"] == ["body", "actions", "stateDelta", "k"]
    stored = (await client.get(app.session_path)).json()
    assert stored["events"] == [] and stored["state"] == {}


async def test_infinity_anywhere_in_an_event_is_refused(client):
    body = b'{"author": "a", "content": {"parts": [{"functionCall": {"args": {"x": 1e999}}}]}}'
    problem = assert_problem(await app.append_raw(client, body), 422, "validation_error")
    assert problem["errors"][0]["loc"] == [
        "body",
        "content",
        "parts",
        0,
        "functionCall",
        "args",
        "x",
    ]


async def test_infinity_in_a_created_or_patched_state_is_refused(client):
    created = await client.post(app.sessions, content=b'{"sessionId": "x", "state": {"k": 1e999}}')
    assert_problem(created, 422, "validation_error")
    assert (await client.get(f"{app.sessions}/x")).status_code == 404
    patched = await client.patch(app.session_path, content=b'{"stateDelta": {"user:k": -1e999}}')
    assert_problem(patched, 422, "validation_error")
    assert (await client.get(app.session_path)).headers["etag"] == '"0"'


@pytest.mark.parametrize(
    "timestamp",
    [b"1" + b"0" * 400, b"1e308", b"-1e12", b"-0.5", b"253402300800", b"1e999", b"true", b'"1"'],
)
async def test_timestamps_outside_1970_to_9999_are_refused(client, timestamp):
    body = b'{"author": "a", "timestamp": ' + timestamp + b"}"
    problem = assert_problem(await app.append_raw(client, body), 422, "validation_error")
    assert problem["errors"][0]["loc"] == ["body", "timestamp"]
    await assert_app_still_readable(client, app)


async def test_timestamps_at_both_ends_of_the_range_are_stored_and_memory_shows_them(client):
    for event_id, timestamp in (("first", 0), ("last", MAX_TIMESTAMP)):
        event = {
            "id": event_id,
            "author": "a",
            "timestamp": timestamp,
            "content": {"parts": [{"text": f"boundary {event_id}"}]},
        }
        assert (await app.append(client, event)).status_code == 201
    memory = f"/apps/{app.app}/users/{app.user}/memory"
    assert (await client.post(memory, json={"sessionId": app.session})).status_code == 200
    found = await client.get(memory, params={"query": "boundary"})
    assert found.status_code == 200, found.text
    times = sorted(entry["timestamp"] for entry in strict_json(found.text)["memories"])
    assert times == ["1970-01-01T00:00:00+00:00", "9999-12-31T23:59:59+00:00"]


async def test_big_integers_and_extreme_floats_still_come_back_exactly(client):
    delta = {"app:big": 2**200, "user:huge": 1.7976931348623157e308, "tiny": 5e-324}
    response = await app.append(client, {"author": "a", "actions": {"stateDelta": delta}})
    assert response.status_code == 201, response.text
    state = strict_json((await client.get(app.session_path)).text)["state"]
    assert state == delta
    assert isinstance(state["app:big"], int) and isinstance(state["user:huge"], float)
