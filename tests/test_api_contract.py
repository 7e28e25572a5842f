"""The HTTP contract (openapi/openapi.json), endpoint by endpoint, on SQLite and
PostgreSQL (the `client` fixture runs each test on both)."""

import base64
import json

import httpx
import pytest
from google.adk.sessions import Session as AdkSession

from session_state.core.config import Settings
from session_state.main import create_app

BASE = "/apps/app/users/u/sessions"


async def _create(client, session_id="s", state=None):
    response = await client.post(BASE, json={"sessionId": session_id, "state": state or {}})
    assert response.status_code == 201, response.text
    return response


async def _append(client, event, session_id="s", **headers):
    return await client.post(f"{BASE}/{session_id}/events", json=event, headers=headers)


async def test_a_session_body_has_exactly_adks_fields_and_validates_as_adk_session(client):
    created = await _create(client, state={"k": 1})
    assert set(created.json()) == {"id", "appName", "userId", "state", "events", "lastUpdateTime"}
    assert created.headers["ETag"] == '"0"'
    AdkSession.model_validate(created.json())


async def test_a_session_id_is_generated_when_none_is_given(client):
    first = await client.post(BASE)
    second = await client.post(BASE, json={})
    assert first.status_code == second.status_code == 201
    assert len(first.json()["id"]) == 36 and first.json()["id"] != second.json()["id"]


async def test_snake_case_input_is_accepted(client):
    response = await client.post(BASE, json={"session_id": "snake"})
    assert response.json()["id"] == "snake"


@pytest.mark.parametrize("bad", ["", "x" * 129, "tab\there", " lead", "trail ", "nul\x00"])
async def test_bad_identifiers_are_422(client, bad):
    response = await client.post(BASE, json={"sessionId": bad})
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"][-1] == "sessionId"


async def test_bad_identifiers_in_the_path_are_422(client):
    response = await client.get(f"/apps/{'a' * 129}/users/u/sessions/s")
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"


async def test_malformed_json_is_400(client):
    response = await client.post(BASE, content=b"{not json")
    assert response.status_code == 400
    assert response.json()["code"] == "bad_request"


async def test_events_come_back_in_append_order_and_windows_combine(client):
    await _create(client)
    for index in range(5):
        await _append(client, {"id": f"e{index}", "author": "a", "timestamp": 100.0 + index})
    path = f"{BASE}/s"
    every = (await client.get(path)).json()["events"]
    assert [event["id"] for event in every] == [f"e{index}" for index in range(5)]
    last_two = (await client.get(path, params={"numRecentEvents": 2})).json()["events"]
    assert [event["id"] for event in last_two] == ["e3", "e4"]
    assert (await client.get(path, params={"numRecentEvents": 0})).json()["events"] == []
    after = (await client.get(path, params={"afterTimestamp": 102.0})).json()["events"]
    assert [event["id"] for event in after] == ["e2", "e3", "e4"]  # inclusive
    both = (await client.get(path, params={"afterTimestamp": 101, "numRecentEvents": 10})).json()
    assert [event["id"] for event in both["events"]] == ["e1", "e2", "e3", "e4"]
    assert (await client.get(path, params={"numRecentEvents": -1})).status_code == 422


async def test_last_update_time_is_the_last_events_timestamp(client):
    await _create(client)
    await _append(client, {"author": "a", "timestamp": 1234.5678})
    assert (await client.get(f"{BASE}/s")).json()["lastUpdateTime"] == 1234.5678


async def test_deltas_replace_values_whole_and_keep_null(client):
    await _create(client, state={"nested": {"a": 1, "b": 2}, "gone": 1})
    await _append(
        client, {"author": "a", "actions": {"stateDelta": {"nested": {"a": 9}, "gone": None}}}
    )
    state = (await client.get(f"{BASE}/s")).json()["state"]
    assert state == {"nested": {"a": 9}, "gone": None}


async def test_events_are_stored_verbatim(client):
    await _create(client)
    image = base64.b64encode(bytes(range(256)) * 4).decode()
    event = {
        "id": "verbatim",
        "author": "agent",
        "timestamp": 0.1 + 0.2,
        "futureField": {"nested": [1, "two", {"three": None}], "unicode": "é中😀"},
        "big": 2**70,
        "tiny": 1e-300,
        "content": {"parts": [{"inlineData": {"mimeType": "image/png", "data": image}}]},
    }
    stored = (await _append(client, event)).json()
    assert stored == event
    again = (await client.get(f"{BASE}/s")).json()["events"][0]
    assert again == event
    assert again["timestamp"].hex() == (0.1 + 0.2).hex()


async def test_a_large_inline_image_fits_under_the_default_limit(client):
    await _create(client)
    payload = base64.b64encode(b"\x89PNG" * 400_000).decode()  # about 2 MiB of base64
    response = await _append(client, {"author": "a", "content": {"parts": [{"text": payload}]}})
    assert response.status_code == 201


async def test_a_body_above_the_limit_is_413_and_nothing_is_stored(database_url):
    app = create_app(Settings(database_url=database_url, max_body_bytes=2048))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
    ):
        await _create(client)
        big = {"author": "a", "content": {"parts": [{"text": "x" * 4096}]}}
        response = await _append(client, big)
        assert response.status_code == 413
        assert response.json()["code"] == "payload_too_large"

        async def chunks():
            yield json.dumps(big).encode()

        chunked = await client.post(f"{BASE}/s/events", content=chunks())
        assert chunked.status_code == 413
        assert (await client.get(f"{BASE}/s")).json()["events"] == []


async def test_a_partial_event_is_answered_but_not_stored(client):
    await _create(client)
    response = await _append(
        client, {"author": "a", "partial": True, "actions": {"stateDelta": {"k": 1}}}
    )
    assert response.status_code == 200
    assert response.headers["Session-State-Persisted"] == "false"
    session = (await client.get(f"{BASE}/s")).json()
    assert session["events"] == [] and session["state"] == {}


async def test_if_match_guards_appends_and_patches(client):
    await _create(client)
    first = await _append(client, {"author": "a"}, **{"If-Match": '"0"'})
    assert first.status_code == 201 and first.headers["ETag"] == '"1"'
    stale = await _append(client, {"author": "b"}, **{"If-Match": '"0"'})
    assert stale.status_code == 412 and stale.json()["code"] == "stale_session"
    patched = await client.patch(
        f"{BASE}/s", json={"stateDelta": {"k": 1}}, headers={"If-Match": '"0"'}
    )
    assert patched.status_code == 412
    malformed = await _append(client, {"author": "a"}, **{"If-Match": "yesterday"})
    assert malformed.status_code == 400
    assert len((await client.get(f"{BASE}/s")).json()["events"]) == 1


async def test_patch_records_a_user_event(client):
    await _create(client)
    response = await client.patch(f"{BASE}/s", json={"stateDelta": {"user:tier": "gold"}})
    assert response.status_code == 200 and response.headers["ETag"] == '"1"'
    event = response.json()["events"][-1]
    assert event["author"] == "user" and event["invocationId"].startswith("p-")
    assert response.json()["state"] == {"user:tier": "gold"}
    assert (await client.patch(f"{BASE}/s", json={})).status_code == 422
    assert (await client.patch(f"{BASE}/missing", json={"stateDelta": {}})).status_code == 404


async def test_event_history_pages_in_both_orders(client):
    await _create(client)
    for index in range(5):
        await _append(client, {"id": f"e{index}", "author": "a", "timestamp": float(index)})

    async def walk(order):
        ids, token = [], None
        while True:
            params = {"order": order, "pageSize": 2, **({"pageToken": token} if token else {})}
            page = (await client.get(f"{BASE}/s/events", params=params)).json()
            ids += [event["id"] for event in page["events"]]
            token = page["nextPageToken"]
            if token is None:
                return ids

    assert await walk("asc") == ["e0", "e1", "e2", "e3", "e4"]
    assert await walk("desc") == ["e4", "e3", "e2", "e1", "e0"]
    desc_page = (
        await client.get(f"{BASE}/s/events", params={"order": "desc", "pageSize": 2})
    ).json()
    mixed = await client.get(
        f"{BASE}/s/events", params={"order": "asc", "pageToken": desc_page["nextPageToken"]}
    )
    assert mixed.status_code == 400
    assert (await client.get(f"{BASE}/missing/events")).status_code == 404


async def test_session_lists_page_in_adk_order(client):
    for index in range(5):
        await client.post(f"/apps/app/users/u{index % 2}/sessions", json={"sessionId": f"s{index}"})
    seen, token = [], None
    while True:
        params = {"pageSize": 2, **({"pageToken": token} if token else {})}
        page = (await client.get("/apps/app/sessions", params=params)).json()
        assert all(session["events"] == [] for session in page["sessions"])
        seen += [session["id"] for session in page["sessions"]]
        token = page["nextPageToken"]
        if token is None:
            break
    assert seen == [f"s{index}" for index in range(5)]
    assert (await client.get("/apps/app/sessions", params={"pageSize": 0})).status_code == 422
    assert (await client.get("/apps/app/sessions", params={"pageSize": 1001})).status_code == 422
    assert (await client.get("/apps/app/sessions", params={"pageToken": "@@"})).status_code == 400


async def test_delete_removes_events_and_keeps_shared_state(client):
    await _create(client, state={"user:kept": 1, "app:kept": 2})
    await _append(client, {"author": "a"})
    assert (await client.delete(f"{BASE}/s")).status_code == 204
    assert (await client.get(f"{BASE}/s")).status_code == 404
    assert (await client.delete(f"{BASE}/s")).status_code == 404
    recreated = await _create(client)
    assert recreated.json()["events"] == []
    assert recreated.json()["state"] == {"user:kept": 1, "app:kept": 2}


async def test_errors_are_problem_json_without_internals(client):
    response = await client.get(f"{BASE}/missing")
    body = response.json()
    assert response.headers["content-type"] == "application/problem+json"
    assert {"type", "title", "status", "detail", "code"} <= set(body)
    assert body["status"] == 404 and body["code"] == "session_not_found"
    assert "Traceback" not in response.text and "SELECT" not in response.text
