"""Batch appends: several events in one request, one revision check, stored
whole or not at all, retried without being stored twice. On both backends."""

import asyncio

import httpx
import pytest

from session_state.core.config import Settings
from tests.conftest import asgi_client

S = "/apps/chat/users/ann/sessions"


def event(event_id: str, author: str = "user", **delta: object) -> dict[str, object]:
    document: dict[str, object] = {"id": event_id, "author": author, "timestamp": 1.0}
    if delta:
        document["actions"] = {"stateDelta": dict(delta)}
    return document


async def create(client: httpx.AsyncClient, session_id: str = "s", **state: object) -> None:
    created = await client.post(S, json={"sessionId": session_id, "state": state})
    assert created.status_code == 201, created.text


async def event_ids(client: httpx.AsyncClient, session_id: str = "s") -> list[str]:
    page = await client.get(f"{S}/{session_id}/events", params={"pageSize": 1000})
    assert page.status_code == 200, page.text
    return [stored["id"] for stored in page.json()["events"]]


async def test_a_batch_is_stored_in_order_with_its_deltas_merged(client: httpx.AsyncClient):
    await create(client, step=0)
    batch = [
        event("a", step=1, **{"user:seen": 1, "app:hits": 1, "temp:x": 1}),
        event("b", "assistant"),
        event("c", step=3, **{"user:seen": 2}),
    ]
    stored = await client.post(f"{S}/s/events/batch", json={"events": batch})
    assert stored.status_code == 201, stored.text
    assert stored.headers["etag"] == '"3"'
    assert [e["id"] for e in stored.json()["events"]] == ["a", "b", "c"]
    assert stored.json()["events"][0]["actions"]["stateDelta"] == {
        "step": 1,
        "user:seen": 1,
        "app:hits": 1,
    }
    session = (await client.get(f"{S}/s")).json()
    assert session["state"] == {"step": 3, "user:seen": 2, "app:hits": 1}
    assert [e["id"] for e in session["events"]] == ["a", "b", "c"]
    # One append after the batch continues its revisions.
    after = await client.post(f"{S}/s/events", json=event("d"), headers={"If-Match": '"3"'})
    assert after.status_code == 201 and after.headers["etag"] == '"4"'


async def test_a_retried_batch_is_answered_with_the_stored_events(client: httpx.AsyncClient):
    await create(client)
    batch = {"events": [{"id": "a", "author": "user"}, {"id": "b", "author": "model"}]}
    first = await client.post(f"{S}/s/events/batch", json=batch, headers={"If-Match": '"0"'})
    assert first.status_code == 201
    # The same batch again (its answer was lost, say): applied once, and the
    # precondition it was sent with does not turn the retry into a 412.
    again = await client.post(f"{S}/s/events/batch", json=batch, headers={"If-Match": '"0"'})
    assert again.status_code == 200, again.text
    assert again.headers["etag"] == '"2"'
    assert again.json() == first.json()  # the timestamps the server gave, too
    assert await event_ids(client) == ["a", "b"]


async def test_a_batch_is_stored_whole_or_not_at_all(client: httpx.AsyncClient):
    await create(client)
    await client.post(f"{S}/s/events", json=event("taken"))
    mixed = {"events": [event("new-1"), event("taken", "someone else"), event("new-2")]}
    refused = await client.post(f"{S}/s/events/batch", json=mixed)
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "event_id_conflict"
    # Part of a stored batch again, with a new event: not a retry of it.
    partly = {"events": [event("taken"), event("new-3")]}
    refused = await client.post(f"{S}/s/events/batch", json=partly)
    assert refused.status_code == 409
    assert await event_ids(client) == ["taken"]

    stale = await client.post(
        f"{S}/s/events/batch", json={"events": [event("x")]}, headers={"If-Match": '"0"'}
    )
    assert stale.status_code == 412
    assert stale.json()["code"] == "stale_session"
    assert await event_ids(client) == ["taken"]


async def test_a_batch_passing_the_state_limit_writes_nothing(database_url: str):
    limited = Settings(database_url=database_url, max_state_bytes=4096)
    async with asgi_client(limited) as client:
        await create(client)
        # Each event alone fits; together the user scope would not.
        batch = [event(f"e{n}", **{f"user:k{n}": "x" * 1500}) for n in range(3)]
        refused = await client.post(f"{S}/s/events/batch", json={"events": batch})
        assert refused.status_code == 422, refused.text
        assert refused.json()["code"] == "state_too_large"
        assert await event_ids(client) == []
        assert (await client.get("/apps/chat/users/ann/state")).json()["state"] == {}
        # A key written twice in the batch counts once, at its last value.
        rewritten = [event(f"r{n}", **{"user:k": "x" * 1500}) for n in range(3)]
        stored = await client.post(f"{S}/s/events/batch", json={"events": rewritten})
        assert stored.status_code == 201, stored.text


@pytest.mark.parametrize(
    ("body", "location"),
    [
        ([], ["body", "events"]),
        ({"events": {}}, ["body", "events"]),
        ({"events": []}, ["body", "events"]),
        ({"events": [{"id": "a"}]}, ["body", "events", 0, "author"]),
        ({"events": [event("a"), 5]}, ["body", "events", 1]),
        ({"events": [event("a"), event("a")]}, ["body", "events", 1, "id"]),
        ({"events": [{**event("a"), "partial": True}]}, ["body", "events", 0, "partial"]),
        ({"events": [event("a")] + [{"author": "u"}] * 1000}, ["body", "events"]),
    ],
)
async def test_a_bad_batch_is_refused_whole(
    client: httpx.AsyncClient, body: object, location: list[object]
):
    await create(client)
    refused = await client.post(f"{S}/s/events/batch", json=body)
    assert refused.status_code == 422, refused.text
    assert location in [error["loc"] for error in refused.json()["errors"]]
    assert await event_ids(client) == []


async def test_a_batch_for_a_missing_session_is_404(client: httpx.AsyncClient):
    missing = await client.post(f"{S}/nobody/events/batch", json={"events": [event("a")]})
    assert missing.status_code == 404
    assert missing.json()["code"] == "session_not_found"


async def test_a_batch_whose_answer_would_pass_the_response_limit_is_refused(database_url: str):
    small = Settings(
        database_url=database_url,
        max_event_bytes=64 * 1024,
        max_state_bytes=16 * 1024,
        max_response_bytes=256 * 1024,
    )
    async with asgi_client(small) as client:
        await create(client)
        batch = [{"id": f"e{n}", "author": "u", "text": "x" * 40_000} for n in range(7)]
        refused = await client.post(f"{S}/s/events/batch", json={"events": batch})
        assert refused.status_code == 413, refused.text
        assert refused.json()["code"] == "payload_too_large"
        assert await event_ids(client) == []


async def test_concurrent_batches_and_appends_lose_nothing_and_interleave_whole(
    client: httpx.AsyncClient,
):
    await create(client)
    writers = 8

    async def write(writer: int) -> None:
        batch = [event(f"w{writer}-{n}", **{f"k{writer}": n}) for n in range(5)]
        answer = await client.post(f"{S}/s/events/batch", json={"events": batch})
        assert answer.status_code == 201, answer.text
        single = await client.post(f"{S}/s/events", json=event(f"w{writer}-single"))
        assert single.status_code == 201, single.text

    await asyncio.gather(*(write(writer) for writer in range(writers)))
    ids = await event_ids(client)
    assert len(ids) == writers * 6
    # Each batch's events sit together, in their order.
    for writer in range(writers):
        start = ids.index(f"w{writer}-0")
        assert ids[start : start + 5] == [f"w{writer}-{n}" for n in range(5)]
    session = (await client.get(f"{S}/s")).json()
    assert session["state"] == {f"k{writer}": 4 for writer in range(writers)}
    assert (await client.get(f"{S}/s")).headers["etag"] == f'"{writers * 6}"'


@pytest.mark.parametrize(
    ("raw", "status", "detail"),
    [
        ('{"events": [{"author": "u", "n": NaN}]}', 400, "not valid JSON"),
        ('{"events": [{"author": "u", "n": 1e999}]}', 422, "numbers must be finite"),
        ('{"events": [{"author": "u", "text": "nul \\u0000"}]}', 422, "the NUL character"),
        ('{"events": [{"author": "u", "text": "\\ud800"}]}', 422, "a lone surrogate"),
        (
            '{"events": [{"author": "u", "deep": ' + "[" * 80 + "]" * 80 + "}]}",
            422,
            "nest at most 64 levels",
        ),
        (
            '{"events": [{"author": "u", "actions": {"stateDelta": {"' + "k" * 300 + '": 1}}}]}',
            422,
            "state keys are at most 256 characters",
        ),
        ('{"events": [{"author": "u"}', 400, "not valid JSON"),
    ],
    ids=["nan", "infinite", "nul", "surrogate", "deep", "long-key", "truncated"],
)
async def test_hostile_values_in_a_batch_are_refused_and_store_nothing(
    client: httpx.AsyncClient, raw: str, status: int, detail: str
):
    await create(client, mood="calm")
    before = await client.get(f"{S}/s")
    assert before.headers["etag"] == '"0"'
    good = '{"id": "fine", "author": "u"}, '
    refused = await client.post(
        f"{S}/s/events/batch",
        content=raw.replace('{"events": [', '{"events": [' + good, 1),
        headers={"Content-Type": "application/json"},
    )
    assert refused.status_code == status, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    problem = refused.json()
    assert problem["status"] == status and detail in problem["detail"], problem
    if status == 400:
        assert problem["code"] == "bad_request"
    else:
        # The hostile event is named, not the good one before it.
        assert problem["code"] == "validation_error"
        assert [error["loc"][:3] for error in problem["errors"]] == [["body", "events", 1]]
    # Nothing written: no event, the same revision and state.
    assert await event_ids(client) == []
    after = await client.get(f"{S}/s")
    assert after.status_code == 200
    assert after.headers["etag"] == before.headers["etag"]
    assert after.json() == before.json()


async def test_an_event_too_large_is_named_by_its_place(database_url: str):
    small = Settings(database_url=database_url, max_event_bytes=2048)
    async with asgi_client(small) as client:
        await create(client)
        batch = [event("a"), {"id": "b", "author": "u", "text": "x" * 4096}]
        refused = await client.post(f"{S}/s/events/batch", json={"events": batch})
        assert refused.status_code == 413
        assert refused.json()["code"] == "event_too_large"
        assert refused.json()["detail"].startswith("events[1]: ")
        assert await event_ids(client) == []
