"""Errors over HTTP (the errors table of docs/api.md): every error is an RFC 9457
problem document with a stable `code`, 422s say which input is wrong, and no
body leaks internals. One case per row of the errors table (401, 403 and 503
excepted), on SQLite and PostgreSQL."""

import json

import httpx
import pytest

from session_state.core.config import Settings
from session_state.main import create_app

APP = "app"
USER = "u"
SESSIONS = f"/apps/{APP}/users/{USER}/sessions"
SESSION = f"{SESSIONS}/s"
EVENTS = f"{SESSION}/events"
PROBLEM_MEDIA_TYPE = "application/problem+json"
INTERNALS = ("Traceback", 'File "', "sqlalchemy", "asyncpg", "aiosqlite", "SELECT ", "INSERT ")


async def create(client, session_id="s"):
    response = await client.post(SESSIONS, json={"sessionId": session_id})
    assert response.status_code == 201, response.text


async def append(client, event, **headers):
    return await client.post(EVENTS, json=event, headers=headers)


def assert_problem_document(response, status, code):
    """The RFC 9457 envelope of docs/api.md's errors section, with nothing internal in it."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM_MEDIA_TYPE
    body = response.json()
    assert {"type", "title", "status", "detail", "code"} <= set(body)
    assert body["status"] == status
    assert body["code"] == code
    for field in ("type", "title", "detail"):
        assert isinstance(body[field], str) and body[field], field
    for internal in INTERNALS:
        assert internal not in response.text, internal
    return body


async def malformed_create(client):
    return await client.post(SESSIONS, content=b'{"sessionId": "s",}')


async def malformed_append(client):
    await create(client)
    return await client.post(EVENTS, content=b'{"author": ')


async def malformed_patch(client):
    await create(client)
    return await client.patch(SESSION, content=b"stateDelta=1")


async def malformed_if_match(client):
    await create(client)
    return await append(client, {"author": "a"}, **{"If-Match": "revision one"})


async def bad_session_page_token(client):
    return await client.get(SESSIONS, params={"pageToken": "garbage!"})


async def bad_event_page_token(client):
    await create(client)
    return await client.get(EVENTS, params={"pageToken": "garbage!"})


async def get_missing(client):
    return await client.get(f"{SESSIONS}/missing")


async def delete_missing(client):
    return await client.delete(f"{SESSIONS}/missing")


async def append_to_missing(client):
    return await client.post(f"{SESSIONS}/missing/events", json={"author": "a"})


async def patch_missing(client):
    return await client.patch(f"{SESSIONS}/missing", json={"stateDelta": {"k": 1}})


async def history_of_missing(client):
    return await client.get(f"{SESSIONS}/missing/events")


async def create_twice(client):
    await create(client)
    return await client.post(SESSIONS, json={"sessionId": "s"})


async def reuse_event_id(client):
    await create(client)
    assert (await append(client, {"id": "e1", "author": "a", "timestamp": 1.0})).status_code == 201
    return await append(client, {"id": "e1", "author": "b", "timestamp": 1.0})


async def append_stale(client):
    await create(client)
    assert (await append(client, {"author": "a"})).status_code == 201
    return await append(client, {"author": "a"}, **{"If-Match": '"0"'})


async def patch_stale(client):
    await create(client)
    assert (await append(client, {"author": "a"})).status_code == 201
    return await client.patch(SESSION, json={"stateDelta": {}}, headers={"If-Match": '"0"'})


CASES = {
    "malformed JSON on create": (malformed_create, 400, "bad_request"),
    "malformed JSON on append": (malformed_append, 400, "bad_request"),
    "malformed JSON on PATCH": (malformed_patch, 400, "bad_request"),
    "malformed If-Match": (malformed_if_match, 400, "bad_request"),
    "bad session page token": (bad_session_page_token, 400, "bad_request"),
    "bad event page token": (bad_event_page_token, 400, "bad_request"),
    "get of a missing session": (get_missing, 404, "session_not_found"),
    "delete of a missing session": (delete_missing, 404, "session_not_found"),
    "append to a missing session": (append_to_missing, 404, "session_not_found"),
    "PATCH of a missing session": (patch_missing, 404, "session_not_found"),
    "history of a missing session": (history_of_missing, 404, "session_not_found"),
    "create of an existing session": (create_twice, 409, "session_already_exists"),
    "event id reused with other content": (reuse_event_id, 409, "event_id_conflict"),
    "append with a stale If-Match": (append_stale, 412, "stale_session"),
    "PATCH with a stale If-Match": (patch_stale, 412, "stale_session"),
}


@pytest.mark.parametrize("case", CASES)
async def test_each_error_is_a_problem_document_with_its_stable_code(client, case):
    provoke, status, code = CASES[case]
    assert_problem_document(await provoke(client), status, code)


async def test_the_same_error_always_has_the_same_type_and_title(client):
    first = assert_problem_document(await get_missing(client), 404, "session_not_found")
    second = assert_problem_document(await delete_missing(client), 404, "session_not_found")
    third = assert_problem_document(await patch_missing(client), 404, "session_not_found")
    assert first["type"] == second["type"] == third["type"]
    assert first["title"] == second["title"] == third["title"]
    other = assert_problem_document(await bad_session_page_token(client), 400, "bad_request")
    assert other["type"] != first["type"]


VALIDATION_CASES = {
    "identifier in the path": ("GET", f"/apps/{APP}/users/{'x' * 129}/sessions", None, "path"),
    "negative numRecentEvents": ("GET", f"{SESSION}?numRecentEvents=-1", None, "query"),
    "page size above the maximum": ("GET", f"{SESSIONS}?pageSize=1001", None, "query"),
    "bad sessionId in a create": ("POST", SESSIONS, {"sessionId": " s"}, "body"),
    "event without author": ("POST", EVENTS, {"id": "e1"}, "body"),
    "event that is not an object": ("POST", EVENTS, ["author"], "body"),
    "PATCH without stateDelta": ("PATCH", SESSION, {"state": {}}, "body"),
}


@pytest.mark.parametrize("case", VALIDATION_CASES)
async def test_a_validation_error_lists_each_wrong_input_with_loc_and_msg(client, case):
    method, path, body, source = VALIDATION_CASES[case]
    await create(client)
    content = None if body is None else json.dumps(body)
    response = await client.request(method, path, content=content)
    problem = assert_problem_document(response, 422, "validation_error")
    errors = problem["errors"]
    assert isinstance(errors, list) and errors
    for error in errors:
        assert set(error) >= {"loc", "msg"}
        assert isinstance(error["loc"], list) and error["loc"][0] == source
        assert all(isinstance(part, str | int) for part in error["loc"])
        assert isinstance(error["msg"], str) and error["msg"]


async def test_a_validation_error_lists_every_wrong_field_of_an_event(client):
    await create(client)
    response = await append(client, {"id": 1, "timestamp": "now", "actions": {"stateDelta": []}})
    problem = assert_problem_document(response, 422, "validation_error")
    locs = [error["loc"] for error in problem["errors"]]
    for loc in (["body", "id"], ["body", "author"], ["body", "timestamp"]):
        assert loc in locs
    assert ["body", "actions", "stateDelta"] in locs


async def test_a_body_above_the_limit_is_a_payload_too_large_problem(database_url):
    app = create_app(Settings(database_url=database_url, max_body_bytes=1024))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as client,
    ):
        await create(client)
        response = await append(client, {"author": "a", "content": {"text": "x" * 2048}})
        assert_problem_document(response, 413, "payload_too_large")


async def test_an_unexpected_failure_is_an_internal_error_without_internals(database_url):
    app = create_app(Settings(database_url=database_url))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as client,
    ):

        async def fail(app_name):
            raise RuntimeError(f"SELECT secret FROM app_states WHERE app_name = {app_name!r}")

        app.state.service.get_app_state = fail
        response = await client.get(f"/apps/{APP}/state")
        body = assert_problem_document(response, 500, "internal_error")
        assert "secret" not in response.text and "RuntimeError" not in response.text
        assert set(body) <= {"type", "title", "status", "detail", "code", "requestId"}


async def test_requests_outside_the_api_still_get_problem_documents(client):
    unknown = await client.get("/no/such/path")
    assert unknown.status_code == 404
    assert unknown.headers["content-type"] == PROBLEM_MEDIA_TYPE
    assert {"type", "title", "status", "detail", "code"} <= set(unknown.json())
    wrong_method = await client.put(SESSION, json={})
    assert wrong_method.status_code == 405
    assert wrong_method.headers["content-type"] == PROBLEM_MEDIA_TYPE
    assert {"type", "title", "status", "detail", "code"} <= set(wrong_method.json())


async def test_a_success_is_plain_json_not_a_problem(client):
    response = await client.post(SESSIONS, json={"sessionId": "s"})
    assert response.headers["content-type"] == "application/json"
    assert "code" not in response.json()
