"""Hostile text: strings no backend can store (NUL, lone surrogates) are a
422 in every field of every body, on both backends, never a 500 and never
something that breaks a later read or memory ingestion."""

import pytest

from tests.hostile import App, assert_app_still_readable, assert_problem

app = App("text")
MEMORY = f"/apps/{app.app}/users/{app.user}/memory"


@pytest.fixture(autouse=True)
async def session(client):
    await app.create(client)


EVENT_FIELDS = [
    ("author", b'{"author": "a\\u0000b"}', ["body", "author"]),
    ("id", b'{"id": "e\\u0000", "author": "a"}', ["body", "id"]),
    ("invocationId", b'{"invocationId": "\\u0000", "author": "a"}', ["body", "invocationId"]),
    (
        "content text",
        b'{"author": "a", "content": {"parts": [{"text": "hi \\u0000 there"}]}}',
        ["body", "content", "parts", 0, "text"],
    ),
    (
        "state value",
        b'{"author": "a", "actions": {"stateDelta": {"user:k": "\\u0000"}}}',
        ["body", "actions", "stateDelta", "user:k"],
    ),
    ("author surrogate", b'{"author": "\\ud800"}', ["body", "author"]),
    (
        "state surrogate",
        b'{"author": "a", "actions": {"stateDelta": {"app:k": ["ok", "\\udfff"]}}}',
        ["body", "actions", "stateDelta", "app:k", 1],
    ),
    (
        "content surrogate",
        b'{"author": "a", "content": {"parts": [{"text": "\\ud83d alone"}]}}',
        ["body", "content", "parts", 0, "text"],
    ),
    (
        "raw surrogate bytes",
        b'{"author": "a", "content": {"parts": [{"text": "\xed\xa0\x80"}]}}',
        ["body", "content", "parts", 0, "text"],
    ),
]


@pytest.mark.parametrize(("field", "body", "loc"), EVENT_FIELDS, ids=[f[0] for f in EVENT_FIELDS])
async def test_unstorable_text_in_any_event_field_is_refused(client, field, body, loc):
    problem = assert_problem(await app.append_raw(client, body), 422, "validation_error")
    assert problem["errors"][0]["loc"] == loc
    assert (await client.get(app.session_path)).json()["events"] == []
    await assert_app_still_readable(client, app)
    # Memory ingestion of the session is unaffected.
    assert (await client.post(MEMORY, json={"sessionId": app.session})).status_code == 200


async def test_unstorable_keys_are_refused_and_named_printably(client):
    body = b'{"author": "a", "actions": {"stateDelta": {"bad\\ud800key": 1}}}'
    problem = assert_problem(await app.append_raw(client, body), 422, "validation_error")
    assert problem["errors"][0]["loc"] == ["body", "actions", "stateDelta", "bad\\ud800key"]
    nul_key = b'{"sessionId": "x", "state": {"a\\u0000": 1}}'
    assert_problem(await client.post(app.sessions, content=nul_key), 422, "validation_error")


async def test_unstorable_text_in_created_and_patched_state_is_refused(client):
    created = await client.post(
        app.sessions, content=b'{"sessionId": "x", "state": {"k": "\\ud800"}}'
    )
    assert_problem(created, 422, "validation_error")
    patched = await client.patch(app.session_path, content=b'{"stateDelta": {"k": "\\u0000"}}')
    assert_problem(patched, 422, "validation_error")
    await assert_app_still_readable(client, app)


async def test_a_memory_query_holding_nul_is_refused(client):
    problem = assert_problem(
        await client.get(MEMORY, params={"query": "a\x00b"}), 422, "validation_error"
    )
    assert problem["errors"][0]["loc"] == ["query", "query"]


@pytest.mark.parametrize(
    "query",
    [
        "query=%ED%A0%80",  # a lone surrogate's bytes
        "query=%FF",  # not UTF-8 at all
        "query=caf%C3",  # half a character
        "query=ok&other=%C3%28",
        "query=%C3%A9%FF",
        "query=ok&q%FF=1",  # in a name
        "query=%C0%80",  # an overlong NUL
        "query=%F4%90%80%80",  # past U+10FFFF
        "query=" + "%FF" * 20_000,  # long
    ],
)
async def test_percent_encoded_invalid_utf8_in_a_query_is_a_400_not_replacement_text(client, query):
    """Read as U+FFFD, such a query would search (or filter by) text no one
    sent."""
    problem = assert_problem(await client.get(f"{MEMORY}?{query}"), 400, "bad_request")
    assert "query string is not percent-encoded UTF-8" in problem["detail"]


@pytest.mark.parametrize("query", ["query=caf%C3%A9", "query=%zz", "query=100%", "query=a+b"])
async def test_a_query_that_is_utf8_is_read_as_before(client, query):
    """Valid UTF-8, and escapes that are not escapes (kept as written), still
    reach the route."""
    response = await client.get(f"{MEMORY}?{query}")
    assert response.status_code == 200, response.text


async def test_text_that_is_merely_unusual_is_stored_exactly(client):
    text = "tab\there \u0001\u001f\u007f\u2028 é中😀 \\u0000 (escaped, not NUL)"
    event = {
        "author": text,
        "content": {"parts": [{"text": text}]},
        "actions": {"stateDelta": {"app:" + text[:20]: text}},
    }
    response = await app.append(client, event)
    assert response.status_code == 201, response.text
    stored = (await client.get(app.session_path)).json()
    assert stored["events"][0]["author"] == text
    assert stored["state"]["app:" + text[:20]] == text
