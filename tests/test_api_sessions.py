"""Sessions over HTTP (openapi/openapi.json): create, get, list and delete, on
SQLite and PostgreSQL (the `client` fixture runs every test on both)."""

import math
import time
import uuid
from urllib.parse import quote

import pytest
from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session as AdkSession
from google.genai import types

from tests.paging import every_item

APP = "app"
USER = "u"
SESSION_KEYS = {"id", "appName", "userId", "state", "events", "lastUpdateTime"}
# More in tests/test_identifiers.py.
BAD_IDENTIFIERS = {
    "empty": "",
    "129 characters": "x" * 129,
    "tab": "a\tb",
    "control character": "a\x01b",
    "DEL": "a\x7fb",
}
# Only a session id: ADK strips it (app names and user ids are taken as given).
BAD_SESSION_IDS = {**BAD_IDENTIFIERS, "leading space": " lead", "trailing space": "trail "}
GOOD_IDENTIFIERS = {
    "128 characters": "x" * 128,
    "inner space": "a b",
    "unicode": "é中😀",
    "email": "ada@example.com",
    "punctuation": "a.b-c_d:e+f=g",
    "slash": "a/b",
    "percent": "%2F",
}


def sessions_path(app=APP, user=USER):
    return f"/apps/{quote(app, safe='')}/users/{quote(user, safe='')}/sessions"


def session_path(session_id="s", app=APP, user=USER):
    return f"{sessions_path(app, user)}/{quote(session_id, safe='')}"


async def create(client, session_id="s", *, app=APP, user=USER, state=None):
    body = {"sessionId": session_id} if session_id is not None else {}
    if state is not None:
        body["state"] = state
    response = await client.post(sessions_path(app, user), json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def append(client, event, session_id="s", *, app=APP, user=USER):
    response = await client.post(f"{session_path(session_id, app, user)}/events", json=event)
    assert response.status_code == 201, response.text
    return response.json()


async def touch(client, session_id, timestamp, *, app=APP, user=USER):
    """Sets the session's lastUpdateTime by appending an event at `timestamp`."""
    await append(client, {"author": "a", "timestamp": timestamp}, session_id, app=app, user=user)


async def touch_with_id(client, event_id, timestamp):
    await append(client, {"id": event_id, "author": "a", "timestamp": timestamp})


async def event_ids(client, **params):
    """The ids of the events a get of session "s" returns."""
    response = await client.get(session_path(), params=params)
    assert response.status_code == 200, response.text
    return [event["id"] for event in response.json()["events"]]


def assert_problem(response, status, code):
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == code


async def list_all(client, path, **params):
    """Every session of a list, walking its pages."""
    return await every_item(client, path, "sessions", **params)


# --- create ----------------------------------------------------------------------------------


async def test_create_answers_201_with_the_session_at_revision_zero(client):
    before = time.time()
    response = await client.post(sessions_path(), json={"sessionId": "s", "state": {"k": 1}})
    after = time.time()
    assert response.status_code == 201
    assert response.headers["content-type"] == "application/json"
    assert response.headers["ETag"] == '"0"'
    body = response.json()
    assert set(body) == SESSION_KEYS
    assert body["id"] == "s" and body["appName"] == APP and body["userId"] == USER
    assert body["state"] == {"k": 1}
    assert body["events"] == []
    assert before <= body["lastUpdateTime"] <= after
    AdkSession.model_validate(body)


async def test_a_created_session_reads_back_as_it_was_created(client):
    created = await create(client, state={"k": [1, {"x": None}]})
    fetched = await client.get(session_path())
    assert fetched.status_code == 200
    assert fetched.json() == created
    assert fetched.json()["lastUpdateTime"].hex() == created["lastUpdateTime"].hex()


async def test_create_without_a_session_id_generates_a_uuid4(client):
    first = await create(client, None)
    second = await create(client, None)
    for body in (first, second):
        assert str(uuid.UUID(body["id"])) == body["id"]
        assert uuid.UUID(body["id"]).version == 4
    assert first["id"] != second["id"]
    assert (await client.get(session_path(first["id"]))).status_code == 200


async def test_create_accepts_an_empty_or_missing_body(client):
    for content in [None, b"", b"  \n", b"{}", b'{"state": {}}']:
        response = await client.post(sessions_path(), content=content)
        assert response.status_code == 201, (content, response.text)
        body = response.json()
        assert uuid.UUID(body["id"]).version == 4
        assert body["state"] == {} and body["events"] == []
    assert len((await client.get(sessions_path())).json()["sessions"]) == 5


async def test_create_accepts_snake_case_names(client):
    response = await client.post(sessions_path(), json={"session_id": "snake", "state": {"k": "v"}})
    assert response.status_code == 201, response.text
    assert response.json()["id"] == "snake"
    assert (await client.get(session_path("snake"))).json()["state"] == {"k": "v"}


async def test_create_with_an_existing_id_is_409_and_changes_nothing(client):
    await create(client, state={"k": "first", "user:u": "first", "app:a": "first"})
    again = await client.post(
        sessions_path(),
        json={"sessionId": "s", "state": {"k": "second", "user:u": "second", "app:a": "second"}},
    )
    assert_problem(again, 409, "session_already_exists")
    state = (await client.get(session_path())).json()["state"]
    assert state == {"k": "first", "user:u": "first", "app:a": "first"}


async def test_the_same_session_id_may_exist_for_other_users_and_apps(client):
    await create(client, "shared", state={"owner": "u"})
    await create(client, "shared", user="other", state={"owner": "other"})
    await create(client, "shared", app="other-app", state={"owner": "other-app"})
    owners = [
        (await client.get(session_path("shared", app, user))).json()["state"]["owner"]
        for app, user in [(APP, USER), (APP, "other"), ("other-app", USER)]
    ]
    assert owners == ["u", "other", "other-app"]


async def test_identifiers_within_the_rules_are_accepted_in_body_and_path(client):
    for identifier in GOOD_IDENTIFIERS.values():
        created = await create(client, identifier, app=identifier, user=identifier)
        assert created["id"] == identifier
        fetched = await client.get(session_path(identifier, identifier, identifier))
        assert fetched.status_code == 200, fetched.text
        body = fetched.json()
        assert (body["id"], body["appName"], body["userId"]) == (identifier,) * 3


@pytest.mark.parametrize("name", BAD_SESSION_IDS)
async def test_a_bad_session_id_in_the_body_is_422(client, name):
    response = await client.post(sessions_path(), json={"sessionId": BAD_SESSION_IDS[name]})
    assert_problem(response, 422, "validation_error")
    assert response.json()["errors"][0]["loc"] == ["body", "sessionId"]
    assert (await client.get(sessions_path())).json()["sessions"] == []


async def test_a_session_id_that_is_not_a_string_is_422(client):
    for session_id in [123, True, ["s"], {"id": "s"}]:
        response = await client.post(sessions_path(), json={"sessionId": session_id})
        assert_problem(response, 422, "validation_error")


async def test_an_initial_state_that_is_not_an_object_is_422(client):
    for state in [[1], "state", 1]:
        response = await client.post(sessions_path(), json={"sessionId": "s", "state": state})
        assert_problem(response, 422, "validation_error")
        assert response.json()["errors"][0]["loc"] == ["body", "state"]


PATH_TEMPLATES = [
    ("POST", "/apps/{bad}/users/u/sessions"),
    ("POST", "/apps/app/users/{bad}/sessions"),
    ("GET", "/apps/app/users/u/sessions/{bad}"),
    ("DELETE", "/apps/app/users/u/sessions/{bad}"),
    ("PATCH", "/apps/app/users/u/sessions/{bad}"),
    ("POST", "/apps/app/users/u/sessions/{bad}/events"),
    ("GET", "/apps/app/users/u/sessions/{bad}/events"),
    ("GET", "/apps/{bad}/sessions"),
    ("GET", "/apps/app/users/{bad}/state"),
    ("GET", "/apps/{bad}/state"),
]


@pytest.mark.parametrize("name", BAD_SESSION_IDS)
async def test_a_bad_identifier_in_the_path_is_422(client, name):
    bad = BAD_SESSION_IDS[name]
    answers = {}
    for method, template in PATH_TEMPLATES:
        if bad == "" and template.endswith("{bad}"):
            continue  # an empty last segment is the collection's URL with a trailing slash
        if name not in BAD_IDENTIFIERS and "sessions/{bad}" not in template:
            continue  # a good app name or user id
        path = template.format(bad=quote(bad, safe=""))
        body = {"author": "a", "stateDelta": {}} if method in ("POST", "PATCH") else None
        response = await client.request(method, path, json=body)
        body = response.json()
        answers[f"{method} {path}"] = (
            response.status_code,
            response.headers["content-type"],
            body.get("code"),
            body.get("errors", [{}])[0].get("loc", [None])[0],
        )
    expected = (422, "application/problem+json", "validation_error", "path")
    wrong = [f"{request} -> {got}" for request, got in answers.items() if got != expected]
    assert not wrong, "not a 422 naming the path:\n" + "\n".join(wrong)


# --- get -------------------------------------------------------------------------------------


async def test_get_returns_the_session_with_exactly_adks_fields(client):
    await create(client, state={"k": 1})
    event = AdkEvent(
        invocation_id="inv",
        author="agent",
        content=types.Content(role="model", parts=[types.Part(text="hello")]),
    )
    await append(client, event.model_dump(mode="json", by_alias=True, exclude_none=True))
    response = await client.get(session_path())
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == SESSION_KEYS
    session = AdkSession.model_validate(body)
    assert (session.id, session.app_name, session.user_id) == ("s", APP, USER)
    assert session.state == {"k": 1}
    assert session.events == [event]


async def test_get_returns_the_merged_state_of_every_scope(client):
    await create(client, "other", state={"app:theme": "dark", "user:name": "Ada"})
    await create(client, state={"k": 1})
    state = (await client.get(session_path())).json()["state"]
    assert state == {"k": 1, "app:theme": "dark", "user:name": "Ada"}


async def test_the_etag_of_get_is_the_revision_counting_stored_events(client):
    await create(client)
    assert (await client.get(session_path())).headers["ETag"] == '"0"'
    for revision in range(1, 4):
        await append(client, {"author": "a"})
        assert (await client.get(session_path())).headers["ETag"] == f'"{revision}"'


async def test_events_come_back_in_append_order_not_timestamp_order(client):
    await create(client)
    for event_id, timestamp in [("e0", 300.0), ("e1", 100.0), ("e2", 200.0)]:
        await touch_with_id(client, event_id, timestamp)
    session = (await client.get(session_path())).json()
    assert [event["id"] for event in session["events"]] == ["e0", "e1", "e2"]
    assert session["lastUpdateTime"] == 200.0


@pytest.fixture
async def five_events(client):
    """Session "s" with e0..e4 appended at timestamps 100..104, e2 and e3 swapped."""
    await create(client)
    for event_id, timestamp in [
        ("e0", 100.0),
        ("e1", 101.0),
        ("e2", 103.0),
        ("e3", 102.0),
        ("e4", 104.0),
    ]:
        await touch_with_id(client, event_id, timestamp)
    return client


async def test_num_recent_events_gives_the_last_n_appended(five_events):
    assert await event_ids(five_events, numRecentEvents=2) == ["e3", "e4"]
    assert await event_ids(five_events, numRecentEvents=1) == ["e4"]
    assert await event_ids(five_events, numRecentEvents=5) == ["e0", "e1", "e2", "e3", "e4"]
    assert await event_ids(five_events, numRecentEvents=50) == ["e0", "e1", "e2", "e3", "e4"]


async def test_num_recent_events_zero_gives_no_events_but_the_state(five_events):
    response = await five_events.get(session_path(), params={"numRecentEvents": 0})
    assert response.status_code == 200
    assert response.json()["events"] == []
    assert response.json()["lastUpdateTime"] == 104.0
    assert response.headers["ETag"] == '"5"'


async def test_a_negative_num_recent_events_is_422(five_events):
    response = await five_events.get(session_path(), params={"numRecentEvents": -1})
    assert_problem(response, 422, "validation_error")
    assert response.json()["errors"][0]["loc"] == ["query", "numRecentEvents"]


async def test_after_timestamp_keeps_events_at_or_after_it_in_append_order(five_events):
    assert await event_ids(five_events, afterTimestamp=102.0) == ["e2", "e3", "e4"]
    assert await event_ids(five_events, afterTimestamp=102.5) == ["e2", "e4"]
    assert await event_ids(five_events, afterTimestamp=0) == ["e0", "e1", "e2", "e3", "e4"]
    assert await event_ids(five_events, afterTimestamp=104.000001) == []


async def test_after_timestamp_is_inclusive_to_the_last_bit(client):
    await create(client)
    timestamp = 1700000000.1234567  # finer than a microsecond
    await touch_with_id(client, "exact", timestamp)
    assert await event_ids(client, afterTimestamp=repr(timestamp)) == ["exact"]
    just_after = math.nextafter(timestamp, math.inf)
    assert await event_ids(client, afterTimestamp=repr(just_after)) == []


async def test_num_recent_events_and_after_timestamp_combine(five_events):
    # The timestamp filter binds: only three events are recent enough.
    assert await event_ids(five_events, afterTimestamp=102.0, numRecentEvents=4) == [
        "e2",
        "e3",
        "e4",
    ]
    # The count binds: the last two of those.
    assert await event_ids(five_events, afterTimestamp=101.0, numRecentEvents=2) == ["e3", "e4"]
    assert await event_ids(five_events, afterTimestamp=101.0, numRecentEvents=0) == []


async def test_get_of_a_missing_session_is_404(client):
    await create(client)
    for path in [
        session_path("missing"),
        session_path("s", user="other"),
        session_path("s", app="other"),
    ]:
        assert_problem(await client.get(path), 404, "session_not_found")


# --- list ------------------------------------------------------------------------------------


async def test_a_user_list_holds_that_users_sessions_without_events_and_with_merged_state(client):
    await create(client, "a", state={"k": "a", "user:name": "Ada", "app:theme": "dark"})
    await create(client, "b", state={"k": "b"})
    await create(client, "theirs", user="other", state={"k": "theirs"})
    await create(client, "elsewhere", app="other-app")
    await append(client, {"author": "a", "timestamp": 1.0}, "a")
    await append(client, {"author": "a", "timestamp": 2.0}, "b")
    response = await client.get(sessions_path())
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"sessions", "nextPageToken"}
    assert body["nextPageToken"] is None
    shared = {"user:name": "Ada", "app:theme": "dark"}
    assert body["sessions"] == [
        {
            "id": "a",
            "appName": APP,
            "userId": USER,
            "state": {"k": "a", **shared},
            "events": [],
            "lastUpdateTime": 1.0,
        },
        {
            "id": "b",
            "appName": APP,
            "userId": USER,
            "state": {"k": "b", **shared},
            "events": [],
            "lastUpdateTime": 2.0,
        },
    ]
    for session in body["sessions"]:
        AdkSession.model_validate(session)


async def test_an_app_list_holds_every_users_sessions_of_that_app_only(client):
    await create(client, "mine", state={"app:theme": "dark", "user:name": "Ada"})
    await create(client, "theirs", user="other", state={"user:name": "Bob"})
    await create(client, "elsewhere", app="other-app", state={"app:theme": "light"})
    await touch(client, "mine", 1.0)
    await touch(client, "theirs", 2.0, user="other")
    body = (await client.get(f"/apps/{APP}/sessions")).json()
    assert [(s["userId"], s["id"]) for s in body["sessions"]] == [
        (USER, "mine"),
        ("other", "theirs"),
    ]
    assert [s["state"] for s in body["sessions"]] == [
        {"app:theme": "dark", "user:name": "Ada"},
        {"app:theme": "dark", "user:name": "Bob"},
    ]
    assert all(s["events"] == [] and s["appName"] == APP for s in body["sessions"])
    assert body["nextPageToken"] is None


async def test_lists_of_unknown_users_and_apps_are_empty(client):
    await create(client)
    for path in [
        sessions_path(user="nobody"),
        sessions_path(app="nothing"),
        "/apps/nothing/sessions",
    ]:
        response = await client.get(path)
        assert response.status_code == 200
        assert response.json() == {"sessions": [], "nextPageToken": None}


@pytest.fixture
async def tied_sessions(client):
    """Seven sessions whose ADK order needs all of lastUpdateTime, userId and id."""
    tied = 1700000000.1234567
    layout = [
        ("u2", "a", tied),
        ("u1", "b", tied),
        ("u1", "a", tied),
        ("u0", "m", 20.0),
        ("u1", "z", 5.0),
        ("u2", "c", 5.0),
        ("u0", "n", tied),
    ]
    for user, session_id, timestamp in layout:
        await create(client, session_id, user=user)
        await touch(client, session_id, timestamp, user=user)
    return client


ADK_ORDER = [
    ("u1", "z"),
    ("u2", "c"),
    ("u0", "m"),
    ("u0", "n"),
    ("u1", "a"),
    ("u1", "b"),
    ("u2", "a"),
]


async def test_an_app_list_is_in_adk_order(tied_sessions):
    body = (await tied_sessions.get(f"/apps/{APP}/sessions")).json()
    assert [(s["userId"], s["id"]) for s in body["sessions"]] == ADK_ORDER
    times = [s["lastUpdateTime"] for s in body["sessions"]]
    assert times == sorted(times)


async def test_a_user_list_is_in_adk_order(tied_sessions):
    body = (await tied_sessions.get(sessions_path(user="u1"))).json()
    assert [s["id"] for s in body["sessions"]] == ["z", "a", "b"]


async def test_pages_of_an_app_list_walk_every_session_once_in_order(tied_sessions):
    for page_size in [1, 2, 3, 6, 7, 8]:
        walked = await list_all(tied_sessions, f"/apps/{APP}/sessions", pageSize=page_size)
        assert [(s["userId"], s["id"]) for s in walked] == ADK_ORDER, page_size


async def test_pages_of_a_user_list_walk_every_session_once_in_order(tied_sessions):
    for page_size in [1, 2]:
        walked = await list_all(tied_sessions, sessions_path(user="u1"), pageSize=page_size)
        assert [s["id"] for s in walked] == ["z", "a", "b"], page_size


async def test_a_page_holds_at_most_page_size_sessions(tied_sessions):
    first = (await tied_sessions.get(f"/apps/{APP}/sessions", params={"pageSize": 3})).json()
    assert len(first["sessions"]) == 3
    assert isinstance(first["nextPageToken"], str) and first["nextPageToken"]


async def test_a_list_page_holds_100_sessions_by_default_and_up_to_1000(client):
    for index in range(101):
        await create(client, f"s{index:03}")
    default = (await client.get(sessions_path())).json()
    assert len(default["sessions"]) == 100
    assert default["nextPageToken"] is not None
    largest = (await client.get(sessions_path(), params={"pageSize": 1000})).json()
    assert len(largest["sessions"]) == 101
    assert largest["nextPageToken"] is None


LIST_PATHS = [sessions_path(), f"/apps/{APP}/sessions"]


async def test_a_page_size_out_of_bounds_is_422(client):
    for path in LIST_PATHS:
        for page_size in [0, -1, 1001, "many"]:
            response = await client.get(path, params={"pageSize": page_size})
            assert_problem(response, 422, "validation_error")
            assert response.json()["errors"][0]["loc"] == ["query", "pageSize"]


FOREIGN_TOKENS = {
    "symbols": "@@",
    "spaces": "not a token",
    "no position": "eyJrIjoic2Vzc2lvbnMifQ",  # {"k":"sessions"}
    "a list": "W10",  # []
    "an empty object": "e30",  # {}
    "null": "bnVsbA",  # null
}


async def test_a_page_token_that_is_not_one_of_ours_is_400(client):
    await create(client)
    for path in LIST_PATHS:
        for name, token in FOREIGN_TOKENS.items():
            response = await client.get(path, params={"pageToken": token})
            assert response.status_code == 400, (path, name, response.text)
            assert_problem(response, 400, "bad_request")


async def test_a_page_token_of_an_event_list_is_400_on_a_session_list(client):
    await create(client)
    for _ in range(3):
        await append(client, {"author": "a"})
    events = await client.get(f"{session_path()}/events", params={"pageSize": 1})
    token = events.json()["nextPageToken"]
    assert token is not None
    for path in LIST_PATHS:
        assert_problem(await client.get(path, params={"pageToken": token}), 400, "bad_request")


# --- delete ----------------------------------------------------------------------------------


async def test_delete_answers_204_and_the_session_is_gone(client):
    await create(client)
    response = await client.delete(session_path())
    assert response.status_code == 204
    assert response.content == b""
    assert_problem(await client.get(session_path()), 404, "session_not_found")
    assert (await client.get(sessions_path())).json()["sessions"] == []
    assert_problem(await client.get(f"{session_path()}/events"), 404, "session_not_found")


async def test_delete_removes_the_events_so_a_recreated_session_starts_empty(client):
    await create(client, state={"k": "old"})
    for index in range(3):
        await append(
            client, {"id": f"e{index}", "author": "a", "actions": {"stateDelta": {"n": 1}}}
        )
    assert (await client.delete(session_path())).status_code == 204
    recreated = await client.post(sessions_path(), json={"sessionId": "s"})
    assert recreated.status_code == 201
    assert recreated.headers["ETag"] == '"0"'
    assert recreated.json()["events"] == [] and recreated.json()["state"] == {}
    assert (await client.get(session_path())).json()["events"] == []
    listed = (await client.get(f"{session_path()}/events")).json()
    assert listed == {"events": [], "nextPageToken": None}
    # The old event ids are free again: this is a new event, not a retry.
    again = await client.post(f"{session_path()}/events", json={"id": "e0", "author": "b"})
    assert again.status_code == 201


async def test_delete_keeps_user_and_app_state(client):
    await create(client, state={"user:kept": 1, "app:kept": 2, "own": 3})
    assert (await client.delete(session_path())).status_code == 204
    assert (await client.get(f"/apps/{APP}/users/{USER}/state")).json() == {"state": {"kept": 1}}
    assert (await client.get(f"/apps/{APP}/state")).json() == {"state": {"kept": 2}}
    other = await create(client, "other")
    assert other["state"] == {"user:kept": 1, "app:kept": 2}


async def test_delete_leaves_other_sessions_alone(client):
    for session_id in ("doomed", "kept"):
        await create(client, session_id, state={"k": session_id})
        await append(client, {"id": "same-id", "author": "a"}, session_id)
    assert (await client.delete(session_path("doomed"))).status_code == 204
    kept = (await client.get(session_path("kept"))).json()
    assert kept["state"] == {"k": "kept"}
    assert [event["id"] for event in kept["events"]] == ["same-id"]


async def test_delete_of_a_missing_session_is_404(client):
    assert_problem(await client.delete(session_path("missing")), 404, "session_not_found")
    await create(client)
    assert (await client.delete(session_path())).status_code == 204
    assert_problem(await client.delete(session_path()), 404, "session_not_found")
