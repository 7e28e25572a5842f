"""Hostile headers, query values and page tokens: each is checked before it
reaches the database (ASCII digits, bounded to what a bigint holds, tokens
checked in full and bound to their list), so each is a 4xx, never a 500."""

import base64
import json

import pytest

from session_state.core.pagination import _digest, encode_token
from tests.hostile import App, assert_app_still_readable, assert_problem

app = App("headers")


@pytest.fixture(autouse=True)
async def session(client):
    await app.create(client)
    for index in range(3):
        event = {"id": f"e{index}", "author": "a", "timestamp": 1700000000 + index}
        assert (await app.append(client, event)).status_code == 201


BAD_IF_MATCH = [
    '"²"',  # a superscript two: str.isdigit() says yes
    '"\u0661"',  # an Arabic-Indic digit one
    '"' + "9" * 5000 + '"',
    '"' + "1" * 30 + '"',
    '"9223372036854775808"',  # one past a bigint
    '"-1"',
    '"1.0"',
    '"1',
    'W/"1"',
    '""',
]


@pytest.mark.parametrize("if_match", BAD_IF_MATCH, ids=range(len(BAD_IF_MATCH)))
async def test_a_malformed_or_unbounded_if_match_is_a_400(client, if_match):
    header = {"If-Match": if_match.encode("utf-8")}  # raw bytes, as a client may send
    appended = await client.post(app.events, json={"author": "a"}, headers=header)
    assert_problem(appended, 400, "bad_request")
    patched = await client.patch(app.session_path, json={"stateDelta": {"k": 1}}, headers=header)
    assert_problem(patched, 400, "bad_request")
    assert (await client.get(app.session_path)).headers["etag"] == '"3"'


async def test_the_largest_revision_a_bigint_holds_is_merely_stale(client):
    response = await app.append(client, {"author": "a"}, **{"If-Match": '"9223372036854775807"'})
    assert_problem(response, 412, "stale_session")


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("session", "numRecentEvents=9223372036854775808"),
        ("session", "numRecentEvents=" + "9" * 400),
        ("session", "numRecentEvents=-1"),
        ("session", "afterTimestamp=inf"),
        ("session", "afterTimestamp=nan"),
        ("session", "afterTimestamp=1e999"),
        ("events", "afterTimestamp=-inf"),
        ("events", "pageSize=" + "1" * 30),
        ("events", "pageSize=0"),
        ("list", "pageSize=9223372036854775808"),
        ("session", "minRevision=-1"),
        ("session", "minRevision=9223372036854775808"),
        ("session", "minRevision=" + "9" * 400),
        ("session", "minRevision=1e3"),
        ("session", "minRevision=%00"),
        ("events", "minRevision=inf"),
        ("events", "minRevision=nan"),
    ],
)
async def test_query_values_beyond_what_the_database_holds_are_a_422(client, path, query):
    base = {"session": app.session_path, "events": app.events, "list": app.sessions}[path]
    assert_problem(await client.get(f"{base}?{query}"), 422, "validation_error")


async def test_the_largest_numbers_a_query_may_carry_work(client):
    whole = await client.get(f"{app.session_path}?numRecentEvents=9223372036854775807")
    assert whole.status_code == 200 and len(whole.json()["events"]) == 3
    late = await client.get(f"{app.session_path}?afterTimestamp=1e300")
    assert late.status_code == 200 and late.json()["events"] == []
    # A revision the session has not reached is answered by the primary (here,
    # the only store) with what it has: never an error, never a wait.
    ahead = await client.get(f"{app.session_path}?minRevision=9223372036854775807")
    assert ahead.status_code == 200 and len(ahead.json()["events"]) == 3


def raw_token(document) -> str:
    raw = json.dumps(document).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def events_digest(order="asc"):
    return _digest((app.app, app.user, app.session, order))


def sessions_digest():
    return _digest((app.app, app.user))


FORGED_EVENT_TOKENS = {
    "boolean position": lambda: raw_token(
        {"k": "events", "l": events_digest(), "p": ["asc", True]}
    ),
    "30 digits": lambda: raw_token({"k": "events", "l": events_digest(), "p": ["asc", 10**30]}),
    "400 digits": lambda: raw_token({"k": "events", "l": events_digest(), "p": ["asc", 10**400]}),
    "negative": lambda: raw_token({"k": "events", "l": events_digest(), "p": ["asc", -1]}),
    "float": lambda: raw_token({"k": "events", "l": events_digest(), "p": ["asc", 1.5]}),
    "other order": lambda: raw_token({"k": "events", "l": events_digest(), "p": ["desc", 1]}),
    "no list": lambda: raw_token({"k": "events", "p": ["asc", 1]}),
    "another session": lambda: encode_token("events", ("headers", "u", "other", "asc"), ["asc", 1]),
    "sessions token": lambda: encode_token("sessions", (app.app, app.user), [1.0, "u", "s"]),
    "not base64": lambda: "%%%",
    "not JSON": lambda: base64.urlsafe_b64encode(b"{nope").decode(),
    "huge": lambda: "A" * 60_000,
    "infinity": lambda: base64.urlsafe_b64encode(b'{"k":"events","p":["asc",1e999]}').decode(),
}


@pytest.mark.parametrize("name", FORGED_EVENT_TOKENS)
async def test_a_forged_or_foreign_events_page_token_is_a_400(client, name):
    token = FORGED_EVENT_TOKENS[name]()
    response = await client.get(app.events, params={"pageToken": token})
    assert_problem(response, 400, "bad_request")
    await assert_app_still_readable(client, app)


FORGED_SESSION_POSITIONS = {
    "400-digit time": [10**400, "u", "s"],
    "negative 400-digit time": [-(10**400), "u", "s"],
    "boolean time": [True, "u", "s"],
    "text time": ["1", "u", "s"],
    "empty user": [1.0, "", "s"],
    "long user": [1.0, "u" * 129, "s"],
    "NUL in id": [1.0, "u", "s\u0000"],
    "surrogate in id": [1.0, "u", "\ud800"],
    "number for id": [1.0, "u", 7],
    "two parts": [1.0, "u"],
}


@pytest.mark.parametrize("name", FORGED_SESSION_POSITIONS)
async def test_a_forged_sessions_page_token_is_a_400(client, name):
    # (A well-formed position in this list, however made up, is only a
    # place to start: it pages on from there.)
    document = {"k": "sessions", "l": sessions_digest(), "p": FORGED_SESSION_POSITIONS[name]}
    raw = json.dumps(document, ensure_ascii=True).encode()
    token = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    response = await client.get(app.sessions, params={"pageToken": token})
    assert_problem(response, 400, "bad_request")


async def test_a_sessions_token_of_another_user_is_refused(client):
    await app.create(client, "second")
    first = (await client.get(app.sessions, params={"pageSize": 1})).json()
    token = first["nextPageToken"]
    assert token
    assert (await client.get(app.sessions, params={"pageToken": token})).status_code == 200
    other = await client.get(f"/apps/{app.app}/users/other/sessions", params={"pageToken": token})
    assert_problem(other, 400, "bad_request")
    across = await client.get(f"/apps/{app.app}/sessions", params={"pageToken": token})
    assert_problem(across, 400, "bad_request")
