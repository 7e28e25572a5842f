"""Appends to several sessions in one request (POST /apps/{app}/appends):
each answered as the single append would have been, its problem its own,
a session's appends in their order; a request refused whole writes
nothing. On both backends."""

import asyncio
from typing import Any

import httpx
import pytest

from session_state.core.config import Settings
from session_state.sessions.event_contract import MAX_APPENDS_PER_REQUEST
from tests.conftest import asgi_client

MAX_EVENT_BYTES = 4096


def append(user: str, session: str, event: Any, if_match: int | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"userId": user, "sessionId": session, "event": event}
    if if_match is not None:
        item["ifMatch"] = if_match
    return item


def event(event_id: str | None, **delta: object) -> dict[str, Any]:
    document: dict[str, Any] = {"author": "user", "timestamp": 1.0}
    if event_id is not None:
        document["id"] = event_id
    if delta:
        document["actions"] = {"stateDelta": dict(delta)}
    return document


# Each append of the parity test, and what makes it answer as it does: its
# single-append twin is sent alone, in the same order, to another app.
APPENDS = [
    append("ann", "a", event("a1", step=1, **{"user:seen": 1, "app:hits": 1, "temp:t": 0})),
    append("ann", "a", event("a2", step=2), if_match=1),  # right after a1, in order
    append("ann", "a", event("a1", step=1, **{"user:seen": 1, "app:hits": 1, "temp:t": 0})),
    append("ann", "a", {"id": "a1", "author": "someone else"}),  # 409
    append("ann", "b", event("b1"), if_match=7),  # 412
    append("ann", "missing", event("m1")),  # 404
    append("bob", "a", {"author": "user", "partial": True, "content": {"parts": []}}),
    append("bob", "a", {"id": "x", "author": 5}),  # 422
    append("bob", "a", event("big", blob="x" * MAX_EVENT_BYTES)),  # 413
    append("bob", "a", event("state", large="y" * 2000)),  # 422 state_too_large
    append("bob", "a", event("b-ok", **{"app:hits": 2})),
    append("ann", "b", event("b2"), if_match=0),
]
SESSIONS = [("ann", "a"), ("ann", "b"), ("bob", "a")]


def _limited(settings: Settings) -> Settings:
    return settings.model_copy(update={"max_event_bytes": MAX_EVENT_BYTES, "max_state_bytes": 1024})


def _answer_of(response: httpx.Response) -> dict[str, Any]:
    """A single append's answer as a result of several would give it."""
    result: dict[str, Any] = {"status": response.status_code}
    if response.status_code >= 400:
        result["problem"] = response.json()
        return result
    if "etag" in response.headers:
        result["revision"] = int(response.headers["etag"].strip('"'))
    result["event"] = response.json()
    return result


def _without_request_id(result: dict[str, Any]) -> dict[str, Any]:
    problem = result.get("problem")
    if problem is not None:
        result = {**result, "problem": {k: v for k, v in problem.items() if k != "requestId"}}
    return result


async def _create(client: httpx.AsyncClient, app: str) -> None:
    for user, session in SESSIONS:
        created = await client.post(
            f"/apps/{app}/users/{user}/sessions", json={"sessionId": session}
        )
        assert created.status_code == 201, created.text


async def _stored(client: httpx.AsyncClient, app: str) -> list[Any]:
    held = []
    for user, session in SESSIONS:
        read = await client.get(f"/apps/{app}/users/{user}/sessions/{session}")
        held.append((read.headers["etag"], read.json()["events"], read.json()["state"]))
    return held


async def test_each_append_is_answered_as_it_would_be_alone(settings: Settings):
    async with asgi_client(_limited(settings)) as client:
        await _create(client, "together")
        await _create(client, "alone")
        together = await client.post("/apps/together/appends", json={"appends": APPENDS})
        assert together.status_code == 200, together.text
        results = together.json()["results"]
        assert len(results) == len(APPENDS)
        for item, result in zip(APPENDS, results, strict=True):
            headers = {} if "ifMatch" not in item else {"If-Match": f'"{item["ifMatch"]}"'}
            path = f"/apps/alone/users/{item['userId']}/sessions/{item['sessionId']}/events"
            alone = await client.post(path, json=item["event"], headers=headers)
            assert _without_request_id(result) == _without_request_id(_answer_of(alone)), item
        statuses = [result["status"] for result in results]
        assert statuses == [201, 201, 200, 409, 412, 404, 200, 422, 413, 422, 201, 201]
        codes = [result["problem"]["code"] for result in results if "problem" in result]
        assert codes == [
            "event_id_conflict",
            "stale_session",
            "session_not_found",
            "validation_error",
            "event_too_large",
            "state_too_large",
        ]
        # The same events and state stored either way (ids the server gave aside).
        assert await _stored(client, "together") == await _stored(client, "alone")


async def test_a_sessions_appends_run_in_their_order(client: httpx.AsyncClient):
    await client.post("/apps/chat/users/ann/sessions", json={"sessionId": "s"})
    await client.post("/apps/chat/users/ann/sessions", json={"sessionId": "t"})
    appends = []
    for index in range(30):
        session = "s" if index % 3 else "t"
        appends.append(append("ann", session, event(f"e{index}", last=index)))
    answer = await client.post("/apps/chat/appends", json={"appends": appends})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert [result["status"] for result in results] == [201] * 30
    for session in ("s", "t"):
        mine = [i for i in range(30) if ("s" if i % 3 else "t") == session]
        # Consecutive revisions, in the order sent.
        assert [results[i]["revision"] for i in mine] == list(range(1, len(mine) + 1))
        read = (await client.get(f"/apps/chat/users/ann/sessions/{session}")).json()
        assert [stored["id"] for stored in read["events"]] == [f"e{i}" for i in mine]
        assert read["state"] == {"last": mine[-1]}


# Requests refused whole: the wrapper, or an append's identifiers or ifMatch.
REFUSED = [
    ("not an object", [], 422),
    ("no appends", {}, 422),
    ("empty", {"appends": []}, 422),
    (
        "too many",
        {"appends": [append("ann", "s", event(None))] * (MAX_APPENDS_PER_REQUEST + 1)},
        422,
    ),
    ("unknown field", {"appends": [append("ann", "s", event("z"))], "atomic": True}, 422),
    ("appends not a list", {"appends": {"userId": "ann"}}, 422),
    ("an append not an object", {"appends": [append("ann", "s", event("z")), 5]}, 422),
    ("unknown append field", {"appends": [{**append("ann", "s", event("z")), "ifmatch": 0}]}, 422),
    ("no event", {"appends": [{"userId": "ann", "sessionId": "s"}]}, 422),
    ("no user", {"appends": [{"sessionId": "s", "event": event("z")}]}, 422),
    (
        "bad user",
        {"appends": [append("ann", "s", event("z")), append("a\nb", "s", event("y"))]},
        422,
    ),
    ("empty session", {"appends": [append("ann", "", event("z"))]}, 422),
    ("padded session", {"appends": [append("ann", " s", event("z"))]}, 422),
    ("long session", {"appends": [append("ann", "s" * 129, event("z"))]}, 422),
    ("user a number", {"appends": [append(5, "s", event("z"))]}, 422),  # type: ignore[arg-type]
    ("ifMatch text", {"appends": [{**append("ann", "s", event("z")), "ifMatch": "0"}]}, 422),
    ("ifMatch true", {"appends": [{**append("ann", "s", event("z")), "ifMatch": True}]}, 422),
    ("ifMatch negative", {"appends": [append("ann", "s", event("z"), if_match=-1)]}, 422),
    ("ifMatch huge", {"appends": [append("ann", "s", event("z"), if_match=2**63)]}, 422),
    ("ifMatch fraction", {"appends": [{**append("ann", "s", event("z")), "ifMatch": 0.5}]}, 422),
    ("a NUL in an event", {"appends": [append("ann", "s", event("z", k="\u0000"))]}, 422),
    ("ifMatch 1e3", {"appends": [{**append("ann", "s", event("z")), "ifMatch": 1e3}]}, 422),
]
# Sent as raw JSON: values json.dumps would not write (a lone surrogate,
# numbers past float's range), in an event and in the wrapper.
_RAW_EVENT = '{"appends": [{"userId": "ann", "sessionId": "s", "event": %s}]}'
REFUSED_RAW = [
    ("a lone surrogate in an event", _RAW_EVENT % '{"author": "a", "content": "\\ud800"}'),
    ("a lone surrogate in a user id", _RAW_EVENT.replace('"ann"', '"a\\udfff"') % "{}"),
    ("an infinite number in an event", _RAW_EVENT % '{"author": "a", "n": 1e999}'),
    ("an infinite ifMatch", _RAW_EVENT.replace('"s",', '"s", "ifMatch": 1e999,') % "{}"),
    ("a huge ifMatch", _RAW_EVENT.replace('"s",', '"s", "ifMatch": 1%s,' % ("0" * 400)) % "{}"),
    ("too deep an event", _RAW_EVENT % ('{"author": "a", "x": ' + "[" * 300 + "]" * 300 + "}")),
]


@pytest.mark.parametrize(
    ("body", "status"), [case[1:] for case in REFUSED], ids=[c[0] for c in REFUSED]
)
async def test_a_request_refused_whole_writes_nothing(
    client: httpx.AsyncClient, body: Any, status: int
):
    await client.post("/apps/chat/users/ann/sessions", json={"sessionId": "s"})
    refused = await client.post("/apps/chat/appends", json=body)
    assert refused.status_code == status, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "validation_error"
    read = await client.get("/apps/chat/users/ann/sessions/s")
    assert read.json()["events"] == [] and read.headers["etag"] == '"0"'


@pytest.mark.parametrize("body", [case[1] for case in REFUSED_RAW], ids=[c[0] for c in REFUSED_RAW])
async def test_a_hostile_value_anywhere_refuses_the_request_whole(
    client: httpx.AsyncClient, body: str
):
    await client.post("/apps/chat/users/ann/sessions", json={"sessionId": "s"})
    refused = await client.post("/apps/chat/appends", content=body.encode())
    assert refused.status_code in (400, 422), refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    read = await client.get("/apps/chat/users/ann/sessions/s")
    assert read.json()["events"] == [] and read.headers["etag"] == '"0"'


async def test_a_body_that_is_not_json_is_a_400(client: httpx.AsyncClient):
    refused = await client.post("/apps/chat/appends", content=b'{"appends": [')
    assert refused.status_code == 400 and refused.json()["code"] == "bad_request"


async def test_an_answer_that_could_pass_the_response_limit_is_refused_whole(settings: Settings):
    """With a body limit above the response limit, the answer (each stored
    event) could pass it: refused before anything is written."""
    limits = {"max_event_bytes": 4096, "max_state_bytes": 1024, "max_body_bytes": 400_000}
    limits["max_response_bytes"] = 4096 + 3 * 1024 + 64 * 1024
    async with asgi_client(settings.model_copy(update=limits)) as client:
        await client.post("/apps/chat/users/ann/sessions", json={"sessionId": "s"})
        appends = [append("ann", "s", {**event(f"e{i}"), "content": "x" * 3000}) for i in range(30)]
        refused = await client.post("/apps/chat/appends", json={"appends": appends})
        assert refused.status_code == 413, refused.text
        assert refused.json()["code"] == "payload_too_large"
        assert "send fewer at once" in refused.json()["detail"]
        read = await client.get("/apps/chat/users/ann/sessions/s")
        assert read.json()["events"] == []
        # Fewer at once are stored.
        stored = await client.post("/apps/chat/appends", json={"appends": appends[:10]})
        assert [result["status"] for result in stored.json()["results"]] == [201] * 10


async def test_appends_from_many_requests_at_once_lose_nothing(client: httpx.AsyncClient):
    """Concurrent requests, each to every session, every append a change of
    a shared app: key and of its session's: every event stored once, with
    consecutive revisions, the state the last one's."""
    sessions = [(f"u{i % 3}", f"s{i}") for i in range(12)]
    for user, session in sessions:
        await client.post(f"/apps/busy/users/{user}/sessions", json={"sessionId": session})

    async def request(number: int) -> list[dict[str, Any]]:
        appends = [
            append(user, session, event(f"r{number}", **{"n": number, "app:last": number}))
            for user, session in sessions
        ]
        answer = await client.post("/apps/busy/appends", json={"appends": appends})
        assert answer.status_code == 200, answer.text
        results: list[dict[str, Any]] = answer.json()["results"]
        return results

    answers = await asyncio.gather(*(request(number) for number in range(20)))
    assert {result["status"] for results in answers for result in results} == {201}
    for index, (user, session) in enumerate(sessions):
        read = (await client.get(f"/apps/busy/users/{user}/sessions/{session}")).json()
        by_revision = sorted(
            (results[index]["revision"], results[index]["event"]["id"]) for results in answers
        )
        assert [stored["id"] for stored in read["events"]] == [i for _, i in by_revision]
        assert [revision for revision, _ in by_revision] == list(range(1, 21))
        assert read["state"]["n"] == int(by_revision[-1][1].removeprefix("r"))


async def test_a_key_for_another_app_reaches_no_session_of_this_one(settings: Settings):
    keys = {"k-travel-3c1f0e8a9b7d": ["travel"]}
    async with asgi_client(settings.model_copy(update={"api_keys": keys})) as client:
        body = {"appends": [append("ann", "s", event("e1"))]}
        anonymous = await client.post("/apps/billing/appends", json=body)
        assert anonymous.status_code == 401
        other = await client.post(
            "/apps/billing/appends",
            json=body,
            headers={"Authorization": "Bearer k-travel-3c1f0e8a9b7d"},
        )
        assert other.status_code == 403 and other.json()["code"] == "forbidden"
