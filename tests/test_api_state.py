"""Scoped state over HTTP (the README's state rules): where each key
lives, what a reader sees, and the user and app state endpoints, on SQLite and
PostgreSQL (the `client` fixture runs every test on both).

State is written three ways (a session's initial state, an appended event's
`actions.stateDelta`, a PATCH), and the scope rules hold for each of them."""

import asyncio

import pytest

from tests.values import exactly

APP = "app"
USER = "u"


def sessions_path(app=APP, user=USER):
    return f"/apps/{app}/users/{user}/sessions"


def session_path(session_id, app=APP, user=USER):
    return f"{sessions_path(app, user)}/{session_id}"


async def create(client, session_id, *, app=APP, user=USER, state=None):
    response = await client.post(
        sessions_path(app, user), json={"sessionId": session_id, "state": state or {}}
    )
    assert response.status_code == 201, response.text
    return response.json()


async def write_by_create(client, delta, session_id, *, app=APP, user=USER):
    await create(client, session_id, app=app, user=user, state=delta)


async def write_by_append(client, delta, session_id, *, app=APP, user=USER):
    await create(client, session_id, app=app, user=user)
    await update_by_append(client, delta, session_id, app=app, user=user)


async def write_by_patch(client, delta, session_id, *, app=APP, user=USER):
    await create(client, session_id, app=app, user=user)
    await update_by_patch(client, delta, session_id, app=app, user=user)


async def update_by_append(client, delta, session_id, *, app=APP, user=USER):
    response = await client.post(
        f"{session_path(session_id, app, user)}/events",
        json={"author": "agent", "actions": {"stateDelta": delta}},
    )
    assert response.status_code == 201, response.text


async def update_by_patch(client, delta, session_id, *, app=APP, user=USER):
    response = await client.patch(session_path(session_id, app, user), json={"stateDelta": delta})
    assert response.status_code == 200, response.text


WRITERS = {"create": write_by_create, "append": write_by_append, "patch": write_by_patch}
UPDATERS = {"append": update_by_append, "patch": update_by_patch}


@pytest.fixture(params=WRITERS)
def write(request):
    """Creates a session whose state received a delta, one way or another."""
    return WRITERS[request.param]


@pytest.fixture(params=UPDATERS)
def update(request):
    """Applies a delta to an existing session, one way or another."""
    return UPDATERS[request.param]


async def state_of(client, session_id, *, app=APP, user=USER):
    response = await client.get(session_path(session_id, app, user))
    assert response.status_code == 200, response.text
    return response.json()["state"]


async def user_state(client, *, app=APP, user=USER):
    response = await client.get(f"/apps/{app}/users/{user}/state")
    assert response.status_code == 200, response.text
    return response.json()["state"]


async def app_state(client, *, app=APP):
    response = await client.get(f"/apps/{app}/state")
    assert response.status_code == 200, response.text
    return response.json()["state"]


# --- scopes ----------------------------------------------------------------------------------


async def test_session_keys_are_seen_by_their_session_only(client, write):
    await create(client, "sibling")
    await write(client, {"k": "mine"}, "s")
    assert await state_of(client, "s") == {"k": "mine"}
    assert await state_of(client, "sibling") == {}
    assert await user_state(client) == {}
    assert await app_state(client) == {}


async def test_user_keys_are_seen_by_every_session_of_that_user_in_that_app(client, write):
    await create(client, "sibling")
    await create(client, "stranger", user="other")
    await create(client, "elsewhere", app="other-app")
    await write(client, {"user:name": "Ada"}, "s")
    assert await state_of(client, "s") == {"user:name": "Ada"}
    assert await state_of(client, "sibling") == {"user:name": "Ada"}
    later = await create(client, "later")
    assert later["state"] == {"user:name": "Ada"}
    assert await state_of(client, "stranger", user="other") == {}
    assert await state_of(client, "elsewhere", app="other-app") == {}
    assert await user_state(client) == {"name": "Ada"}
    assert await user_state(client, user="other") == {}
    assert await user_state(client, app="other-app") == {}
    assert await app_state(client) == {}


async def test_app_keys_are_seen_by_every_session_of_every_user_of_that_app(client, write):
    await create(client, "sibling")
    await create(client, "stranger", user="other")
    await create(client, "elsewhere", app="other-app")
    await write(client, {"app:theme": "dark"}, "s")
    for session_id, user in [("s", USER), ("sibling", USER), ("stranger", "other")]:
        assert await state_of(client, session_id, user=user) == {"app:theme": "dark"}
    later = await create(client, "later", user="newcomer")
    assert later["state"] == {"app:theme": "dark"}
    assert await state_of(client, "elsewhere", app="other-app") == {}
    assert await app_state(client) == {"theme": "dark"}
    assert await app_state(client, app="other-app") == {}
    assert await user_state(client) == {}


async def test_temp_keys_are_never_persisted(client, write):
    await write(client, {"temp:scratch": 1, "user:temp:kept": 2, "k": 3}, "s")
    response = await client.get(session_path("s"))
    assert response.json()["state"] == {"user:temp:kept": 2, "k": 3}
    for event in response.json()["events"]:
        assert event["actions"]["stateDelta"] == {"user:temp:kept": 2, "k": 3}
    history = (await client.get(f"{session_path('s')}/events")).json()["events"]
    assert history == response.json()["events"]
    assert await user_state(client) == {"temp:kept": 2}
    assert await app_state(client) == {}
    assert (await create(client, "next"))["state"] == {"user:temp:kept": 2}


async def test_a_delta_of_only_temp_keys_leaves_the_state_alone(client, update):
    await create(client, "s", state={"k": 1})
    await update(client, {"temp:a": 1, "temp:b": {"x": 1}}, "s")
    assert await state_of(client, "s") == {"k": 1}


async def test_only_a_leading_prefix_names_a_scope(client, write):
    delta = {"my:app:k": 1, "APP:k": 2, "User:k": 3, "Temp:k": 4, "xtemp:k": 5}
    await write(client, delta, "s")
    assert await state_of(client, "s") == delta
    assert await user_state(client) == {}
    assert await app_state(client) == {}


async def test_a_session_reads_the_merged_view_of_all_three_scopes(client, write):
    await write(client, {"k": 1, "user:u": 2, "app:a": 3, "temp:t": 4}, "s")
    assert await state_of(client, "s") == {"k": 1, "user:u": 2, "app:a": 3}


async def test_create_answers_the_merged_view_with_existing_shared_state(client):
    await create(client, "first", state={"user:name": "Ada", "app:theme": "dark"})
    second = await create(client, "second", state={"k": 1, "user:tier": "gold"})
    assert second["state"] == {
        "k": 1,
        "user:name": "Ada",
        "user:tier": "gold",
        "app:theme": "dark",
    }
    other_user = await create(client, "third", user="other")
    assert other_user["state"] == {"app:theme": "dark"}


# --- deltas ----------------------------------------------------------------------------------


PREFIXES = ["", "user:", "app:"]


async def test_a_delta_replaces_a_value_whole_without_deep_merging(client, update):
    initial = {"nested": {"a": 1, "b": {"c": 2}}, "list": [1, 2, 3], "untouched": "same"}
    await create(client, "s", state={p + k: v for p in PREFIXES for k, v in initial.items()})
    delta = {"nested": {"b": {"d": 4}}, "list": [9]}
    await update(client, {p + k: v for p in PREFIXES for k, v in delta.items()}, "s")
    expected = {"nested": {"b": {"d": 4}}, "list": [9], "untouched": "same"}
    assert await state_of(client, "s") == {p + k: v for p in PREFIXES for k, v in expected.items()}
    assert await user_state(client) == expected
    assert await app_state(client) == expected


async def test_null_is_stored_as_null_and_the_key_stays(client, update):
    initial = {"gone": {"a": 1}, "kept": 1}
    await create(client, "s", state={p + k: v for p in PREFIXES for k, v in initial.items()})
    await update(client, {f"{p}gone": None for p in PREFIXES}, "s")
    expected = {"gone": None, "kept": 1}
    assert await state_of(client, "s") == {p + k: v for p in PREFIXES for k, v in expected.items()}
    assert await user_state(client) == expected
    assert await app_state(client) == expected
    await update(client, {f"{p}gone": 0 for p in PREFIXES}, "s")
    assert await user_state(client) == {"gone": 0, "kept": 1}
    assert (await state_of(client, "s"))["gone"] == 0


async def test_an_empty_delta_changes_no_state(client, update):
    await create(client, "s", state={"k": 1, "user:u": 2, "app:a": 3})
    await update(client, {}, "s")
    assert await state_of(client, "s") == {"k": 1, "user:u": 2, "app:a": 3}


async def test_deltas_apply_in_append_order(client):
    await create(client, "s")
    for value in range(5):
        await update_by_append(client, {"k": value, "user:last": value}, "s")
    await update_by_patch(client, {"k": "patched"}, "s")
    assert await state_of(client, "s") == {"k": "patched", "user:last": 4}


STATE_VALUES = {
    "float": 0.1 + 0.2,
    "tiny": 1e-300,
    "huge": 1.7976931348623157e308,
    "integer": 2**53 + 1,
    "unicode é中😀": 'é中😀 \u2028 "quoted" \\',
    "nested": {"list": [1, "two", None, True, {"deep": [[]], "x": 0.5}], "empty": {}},
    "false": False,
    "numeric text": "123",
    "a.b/c": "keys with punctuation",
}


def in_every_scope(values):
    return {prefix + key: value for prefix in PREFIXES for key, value in values.items()}


async def assert_state_comes_back_exactly(client, values):
    await write_by_create(client, in_every_scope(values), "created")
    await write_by_append(client, in_every_scope(values), "appended")
    for session_id in ("created", "appended"):
        assert exactly(await state_of(client, session_id)) == exactly(in_every_scope(values))
    assert exactly(await user_state(client)) == exactly(values)
    assert exactly(await app_state(client)) == exactly(values)


async def test_state_values_come_back_exactly_in_every_scope(client):
    await assert_state_comes_back_exactly(client, STATE_VALUES)


async def test_integral_floats_in_state_stay_floats_in_every_scope(client):
    await assert_state_comes_back_exactly(client, {"one": 1.0, "ten": 10.0, "list": [2.0]})


async def test_state_integers_beyond_64_bits_come_back_exactly(client):
    await assert_state_comes_back_exactly(
        client,
        {"big": 2**70, "negative": -(2**70), "just above u64": 2**64, "big float beside": 1e20},
    )


async def test_concurrent_writers_of_different_user_keys_lose_nothing(client):
    await create(client, "a")
    await create(client, "b")
    await asyncio.gather(
        *(
            update_by_append(client, {f"user:{session_id}{index}": index}, session_id)
            for index in range(10)
            for session_id in ("a", "b")
        )
    )
    expected = {f"{session_id}{index}": index for index in range(10) for session_id in "ab"}
    assert await user_state(client) == expected


# --- the state endpoints ---------------------------------------------------------------------


async def test_the_user_state_endpoint_answers_keys_without_prefix(client):
    await create(client, "s", state={"user:name": "Ada", "user:prefs": {"units": "metric"}})
    response = await client.get(f"/apps/{APP}/users/{USER}/state")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"state": {"name": "Ada", "prefs": {"units": "metric"}}}


async def test_the_app_state_endpoint_answers_keys_without_prefix(client):
    await create(client, "s", state={"app:theme": "dark", "app:limits": [1, 2]})
    response = await client.get(f"/apps/{APP}/state")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"state": {"theme": "dark", "limits": [1, 2]}}


async def test_the_state_of_an_unknown_user_or_app_is_empty(client):
    await create(client, "s", state={"user:name": "Ada", "app:theme": "dark"})
    for path in [f"/apps/{APP}/users/nobody/state", "/apps/nothing/users/u/state"]:
        response = await client.get(path)
        assert response.status_code == 200
        assert response.json() == {"state": {}}
    response = await client.get("/apps/nothing/state")
    assert response.status_code == 200
    assert response.json() == {"state": {}}


async def test_the_state_endpoints_never_cross_users_or_apps(client):
    owners = [("app1", "u1"), ("app1", "u2"), ("app2", "u1")]
    for app, user in owners:
        await create(
            client,
            "s",
            app=app,
            user=user,
            state={"user:owner": f"{app}/{user}", f"app:owner-{app}": app},
        )
    for app, user in owners:
        assert await user_state(client, app=app, user=user) == {"owner": f"{app}/{user}"}
    assert await app_state(client, app="app1") == {"owner-app1": "app1"}
    assert await app_state(client, app="app2") == {"owner-app2": "app2"}


async def test_the_state_endpoints_hold_no_session_keys(client):
    await create(client, "s", state={"k": 1, "temp:t": 2})
    assert await user_state(client) == {}
    assert await app_state(client) == {}
