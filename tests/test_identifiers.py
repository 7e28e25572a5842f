"""Identifiers (app names, user ids, session ids) as ADK's session services take
them, on SQLite and PostgreSQL: any text, '/' and '%' included, sent
percent-encoded and stored exactly; refused only when storage cannot keep it
(control characters, lone surrogates, more than 128 characters, empty), and a
session id also when it has surrounding whitespace (ADK strips session ids)."""

import unicodedata
from urllib.parse import quote

import pytest

from session_state.core.config import Settings
from tests.conftest import asgi_client
from tests.hostile import assert_problem

NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")
# Any of these is an app name, a user id and a session id.
ANY_TEXT = {
    "slash": "a/b",
    "ADK's memory tests": "app/other-user",
    "percent": "100%",
    "an escape, literally": "%2F",
    "another escape, literally": "%41",
    "inner spaces": "a b  c",
    "dot": ".",
    "dot dot": "..",
    "NFC": NFC,
    "NFD": NFD,
    "emoji": "🧭 trip/2024",
    "128 emoji": "😀" * 128,
    "query and fragment characters": "a?b#c&d=e",
    "backslash and quotes": "a\\b\"c'd",
}
# App names and user ids are taken as given, as ADK takes them.
PADDED = ["  padded  ", "\u00a0nbsp", "trailing\u3000"]
# Refused as any identifier: storage cannot keep them, or they are no identifier.
REFUSED = {
    "NUL": "a\x00b",
    "newline": "order-42\n",
    "tab": "a\tb",
    "DEL": "a\x7fb",
    "C1 control": "a\x85b",
    "129 characters": "x" * 129,
    "129 emoji": "😀" * 129,
}
MALFORMED = {
    "not hex": "%zz",
    "cut short": "%4",
    "a lone percent": "%",
    "half a UTF-8 character": "%C3",
    "not UTF-8 at all": "%FF",
    "an encoded surrogate": "%ED%A0%80",
}


def segment(text: str) -> str:
    encoded = quote(text, safe="")
    # URL libraries resolve a "." or ".." segment (httpx drops it): escape it.
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


def sessions_path(app: str, user: str) -> str:
    return f"/apps/{segment(app)}/users/{segment(user)}/sessions"


def session_path(app: str, user: str, session_id: str) -> str:
    return f"{sessions_path(app, user)}/{segment(session_id)}"


async def create(client, app: str, user: str, session_id: str, state=None):
    response = await client.post(
        sessions_path(app, user), json={"sessionId": session_id, "state": state or {}}
    )
    assert response.status_code == 201, response.text
    return response.json()


@pytest.mark.parametrize("name", ANY_TEXT)
async def test_any_text_round_trips_as_app_name_user_id_and_session_id(client, name):
    text = ANY_TEXT[name]
    created = await create(client, text, text, text, state={"app:a": 1, "user:u": 2, "k": 3})
    assert (created["appName"], created["userId"], created["id"]) == (text, text, text)
    path = session_path(text, text, text)
    appended = await client.post(f"{path}/events", json={"id": "e1", "author": "a"})
    assert appended.status_code == 201, appended.text
    fetched = await client.get(path)
    assert fetched.status_code == 200, fetched.text
    body = fetched.json()
    assert (body["appName"], body["userId"], body["id"]) == (text, text, text)
    assert [event["id"] for event in body["events"]] == ["e1"]
    assert body["state"] == {"app:a": 1, "user:u": 2, "k": 3}
    listed = (await client.get(sessions_path(text, text))).json()["sessions"]
    assert [(s["appName"], s["userId"], s["id"]) for s in listed] == [(text, text, text)]
    every = (await client.get(f"/apps/{segment(text)}/sessions")).json()["sessions"]
    assert [s["id"] for s in every] == [text]
    user_state = await client.get(f"/apps/{segment(text)}/users/{segment(text)}/state")
    assert user_state.json() == {"state": {"u": 2}}
    assert (await client.get(f"/apps/{segment(text)}/state")).json() == {"state": {"a": 1}}
    events = (await client.get(f"{path}/events")).json()["events"]
    assert [event["id"] for event in events] == ["e1"]
    patched = await client.patch(path, json={"stateDelta": {"k": 4}})
    assert patched.status_code == 200, patched.text
    assert (await client.delete(path)).status_code == 204
    assert (await client.get(path)).status_code == 404


async def test_ids_that_differ_never_name_the_same_session(client):
    pairs = [("a/b", "a%2Fb"), ("%41", "A"), (NFC, NFD), ("x", "x%"), ("app", "app ")]
    for first, second in pairs:
        for index, text in enumerate((first, second)):
            await create(client, text, text, "s", state={"app:which": index, "user:which": index})
            if text == text.strip():
                await create(client, "one-app", "one-user", text, state={"which": index})
        for index, text in enumerate((first, second)):
            session = (await client.get(session_path(text, text, "s"))).json()
            assert (session["appName"], session["userId"]) == (text, text)
            assert session["state"] == {"app:which": index, "user:which": index}
            if text == text.strip():
                by_id = (await client.get(session_path("one-app", "one-user", text))).json()
                assert (by_id["id"], by_id["state"]) == (text, {"which": index})


@pytest.mark.parametrize("padded", PADDED)
async def test_app_names_and_user_ids_keep_their_surrounding_whitespace(client, padded):
    await create(client, padded, padded, "s", state={"k": "padded"})
    await create(client, padded.strip(), padded.strip(), "s", state={"k": "stripped"})
    padded_session = (await client.get(session_path(padded, padded, "s"))).json()
    assert (padded_session["appName"], padded_session["userId"]) == (padded, padded)
    assert padded_session["state"] == {"k": "padded"}
    stripped = (await client.get(session_path(padded.strip(), padded.strip(), "s"))).json()
    assert stripped["state"] == {"k": "stripped"}


@pytest.mark.parametrize("padded", [*PADDED, " s", "s\u2003"])
async def test_a_session_id_with_surrounding_whitespace_is_422(client, padded):
    response = await client.post(sessions_path("app", "u"), json={"sessionId": padded})
    body = assert_problem(response, 422, "validation_error")
    assert body["errors"][0]["loc"] == ["body", "sessionId"]
    assert "whitespace" in body["errors"][0]["msg"]
    response = await client.get(session_path("app", "u", padded))
    body = assert_problem(response, 422, "validation_error")
    assert body["errors"][0]["loc"] == ["path", "session_id"]


@pytest.mark.parametrize("name", REFUSED)
async def test_identifiers_storage_cannot_keep_are_422_naming_the_parameter(client, name):
    bad = REFUSED[name]
    requests = [
        ("POST", sessions_path(bad, "u"), ["path", "app_name"]),
        ("POST", sessions_path("app", bad), ["path", "user_id"]),
        ("GET", session_path("app", "u", bad), ["path", "session_id"]),
        ("DELETE", session_path("app", "u", bad), ["path", "session_id"]),
        ("POST", session_path("app", "u", bad) + "/events", ["path", "session_id"]),
        ("GET", f"/apps/{segment(bad)}/state", ["path", "app_name"]),
        ("GET", f"/apps/app/users/{segment(bad)}/memory?query=q", ["path", "user_id"]),
    ]
    for method, path, loc in requests:
        body = {"author": "a"} if method == "POST" else None
        response = await client.request(method, path, json=body)
        problem = assert_problem(response, 422, "validation_error")
        assert problem["errors"][0]["loc"] == loc, (method, path, problem)
    response = await client.post(sessions_path("app", "u"), json={"sessionId": bad})
    assert assert_problem(response, 422, "validation_error")["errors"][0]["loc"] == [
        "body",
        "sessionId",
    ]
    assert (await client.get("/apps/app/sessions")).json()["sessions"] == []


async def test_a_lone_surrogate_in_a_session_id_is_422(client):
    response = await client.post(
        sessions_path("app", "u"),
        content=b'{"sessionId": "s\\ud800"}',
        headers={"Content-Type": "application/json"},
    )
    body = assert_problem(response, 422, "validation_error")
    assert body["errors"][0]["loc"] == ["body", "sessionId"]


@pytest.mark.parametrize("template", ["/apps/{s}/users/u/sessions", "/apps/app/users//sessions"])
async def test_an_empty_segment_is_422(client, template):
    response = await client.post(template.format(s=""), json={})
    body = assert_problem(response, 422, "validation_error")
    assert body["errors"][0]["loc"] == ["path"]


@pytest.mark.parametrize("name", MALFORMED)
async def test_a_malformed_percent_encoding_is_400_never_a_500(client, name):
    bad = MALFORMED[name]
    for method, path in [
        ("POST", f"/apps/{bad}/users/u/sessions"),
        ("GET", f"/apps/app/users/{bad}/sessions/s"),
        ("POST", f"/apps/app/users/u/sessions/{bad}/events"),
        ("DELETE", f"/apps/app/users/u/sessions/{bad}"),
        ("GET", f"/apps/app/users/{bad}/memory?query=q"),
    ]:
        response = await client.request(method, path, json={"author": "a"})
        body = assert_problem(response, 400, "bad_request")
        assert "percent-encoded UTF-8" in body["detail"], (method, path)


async def test_the_append_path_decodes_each_segment_exactly_once(client):
    await create(client, "app", "u", "%41")
    await create(client, "app", "u", "A")
    appended = await client.post("/apps/app/users/u/sessions/%2541/events", json={"author": "a"})
    assert appended.status_code == 201, appended.text
    literal = (await client.get("/apps/app/users/u/sessions/%2541")).json()
    assert (literal["id"], len(literal["events"])) == ("%41", 1)
    decoded = (await client.get("/apps/app/users/u/sessions/A")).json()
    assert decoded["events"] == []


async def test_a_path_may_spell_a_character_either_way(client):
    """'A', '%41' and '%61' (lower case hex) are the same bytes on the wire;
    a UTF-8 character is the same whether its bytes are escaped or not."""
    await create(client, "app", "u", "A/é")
    for spelled in ["A%2Fé", "%41%2f%C3%A9", "A%2F%c3%a9"]:
        response = await client.get(f"/apps/app/users/u/sessions/{spelled}")
        assert response.status_code == 200, (spelled, response.text)
        assert response.json()["id"] == "A/é"


async def test_the_access_log_shows_the_path_as_sent(client, caplog):
    caplog.set_level("INFO", logger="session_state.access")
    await client.get("/apps/a%2Fb/users/u%0A/sessions/s")
    paths = [record.path for record in caplog.records if hasattr(record, "path")]
    assert paths == ["/apps/a%2Fb/users/u%0A/sessions/s"]


@pytest.fixture
async def secured(database_url):
    settings = Settings(
        database_url=database_url,
        api_keys={
            "team-travel-key-0123456789": ["team/travel"],
            "team-key-0123456789": ["team"],
            "a-key-0123456789": ["A"],
        },
    )
    async with asgi_client(settings) as http:
        yield http


@pytest.mark.parametrize(
    ("key", "app", "allowed"),
    [
        ("team-travel-key-0123456789", "team/travel", True),
        ("team-travel-key-0123456789", "team", False),
        ("team-key-0123456789", "team/travel", False),
        ("team-key-0123456789", "team", True),
        ("a-key-0123456789", "A", True),
        ("a-key-0123456789", "%41", False),
    ],
)
async def test_api_keys_are_scoped_to_the_decoded_app_name(secured, key, app, allowed):
    headers = {"Authorization": f"Bearer {key}"}
    path = sessions_path(app, "u")
    created = await secured.post(path, json={"sessionId": "s"}, headers=headers)
    appended = await secured.post(f"{path}/s/events", json={"author": "a"}, headers=headers)
    if allowed:
        assert (created.status_code, appended.status_code) == (201, 201), appended.text
        assert created.json()["appName"] == app
    else:
        assert_problem(created, 403, "forbidden")
        assert_problem(appended, 403, "forbidden")
