"""Removing a session's newest events (DELETE .../events): all of them, the
last n, or those after one event; with If-Match; the session state becomes
what the remaining events leave. On both backends."""

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from session_state.core.config import Settings
from session_state.sessions.domain import NEVER_EXPIRES, ForkSource, SessionKey
from session_state.sessions.history import changes_session_state
from session_state.stores import open_store
from tests.conftest import Clock, asgi_client

S = "/apps/chat/users/ann/sessions"


def event(event_id: str, **delta: object) -> dict[str, object]:
    document: dict[str, object] = {"id": event_id, "author": "user"}
    if delta:
        document["actions"] = {"stateDelta": dict(delta)}
    return document


async def setup_session(client: httpx.AsyncClient, *events: dict[str, object]) -> None:
    created = await client.post(S, json={"sessionId": "s", "state": {"mood": "calm"}})
    assert created.status_code == 201, created.text
    for document in events:
        stored = await client.post(f"{S}/s/events", json=document)
        assert stored.status_code == 201, stored.text


async def event_ids(client: httpx.AsyncClient) -> list[str]:
    page = await client.get(f"{S}/s/events", params={"pageSize": 1000})
    return [stored["id"] for stored in page.json()["events"]]


THREE = (
    event("a", mood="happy", **{"user:visits": 1}),
    event("b"),
    event("c", mood="sad", topic="tea", **{"app:hits": 3}),
)


async def test_removing_the_last_event_derives_the_state_from_the_rest(
    client: httpx.AsyncClient,
):
    await setup_session(client, *THREE)
    removed = await client.delete(f"{S}/s/events", params={"last": 1})
    assert removed.status_code == 200, removed.text
    assert removed.headers["session-state-removed-events"] == "1"
    # The revision goes on up: a removal is a change like an append.
    assert removed.headers["etag"] == '"4"'
    # Session keys as event b left them; app: and user: keys are shared and
    # stay as they are.
    assert removed.json()["state"] == {"mood": "happy", "user:visits": 1, "app:hits": 3}
    assert removed.json()["events"] == []
    assert await event_ids(client) == ["a", "b"]
    session = await client.get(f"{S}/s")
    assert session.json()["state"] == removed.json()["state"]
    assert session.headers["etag"] == '"4"'
    # Appends go on after the removal, each a revision of its own.
    again = await client.post(f"{S}/s/events", json=event("c"), headers={"If-Match": '"4"'})
    assert again.status_code == 201 and again.headers["etag"] == '"5"'
    assert await event_ids(client) == ["a", "b", "c"]


async def test_removing_after_an_event_and_removing_all(client: httpx.AsyncClient):
    await setup_session(client, *THREE)
    after_a = await client.delete(f"{S}/s/events", params={"after": "a"})
    assert after_a.headers["session-state-removed-events"] == "2"
    assert await event_ids(client) == ["a"]
    assert after_a.json()["state"]["mood"] == "happy"
    everything = await client.delete(f"{S}/s/events")
    assert everything.status_code == 200
    assert everything.headers["session-state-removed-events"] == "1"
    assert await event_ids(client) == []
    # The state the session was created with.
    assert everything.json()["state"] == {"mood": "calm", "user:visits": 1, "app:hits": 3}


async def test_nothing_to_remove_writes_nothing(client: httpx.AsyncClient):
    await setup_session(client, event("a"))
    nothing = await client.delete(f"{S}/s/events", params={"after": "a"})
    assert nothing.status_code == 200
    assert nothing.headers["session-state-removed-events"] == "0"
    assert nothing.headers["etag"] == '"1"'
    await client.delete(f"{S}/s/events")
    empty = await client.delete(f"{S}/s/events", params={"last": 5})
    assert empty.headers["session-state-removed-events"] == "0"
    assert empty.headers["etag"] == '"2"'


async def test_more_than_there_are_removes_all(client: httpx.AsyncClient):
    await setup_session(client, *THREE)
    removed = await client.delete(f"{S}/s/events", params={"last": 10})
    assert removed.headers["session-state-removed-events"] == "3"
    assert removed.json()["state"]["mood"] == "calm"


@pytest.mark.parametrize("returned", [False, True], ids=["plain", "returnRemoved"])
async def test_if_match_guards_a_removal(client: httpx.AsyncClient, returned: bool):
    """With returnRemoved, "c" (it changed state) is removed on the general
    path and "d" refused by the pop's own statement."""
    await setup_session(client, *THREE)
    last = {"last": 1, **({"returnRemoved": "true"} if returned else {})}
    stale = await client.delete(f"{S}/s/events", params=last, headers={"If-Match": '"2"'})
    assert stale.status_code == 412
    assert stale.json()["code"] == "stale_session"
    assert await event_ids(client) == ["a", "b", "c"]
    fresh = await client.delete(f"{S}/s/events", params=last, headers={"If-Match": '"3"'})
    assert fresh.status_code == 200
    # The revision never comes back: the If-Match of the read before the
    # removal cannot match again, even once the same number of events is
    # stored again.
    await client.post(f"{S}/s/events", json=event("d"))
    old = await client.delete(f"{S}/s/events", params=last, headers={"If-Match": '"3"'})
    assert old.status_code == 412
    assert await event_ids(client) == ["a", "b", "d"]
    now = await client.delete(f"{S}/s/events", params=last, headers={"If-Match": '"5"'})
    assert now.status_code == 200, now.text
    assert await event_ids(client) == ["a", "b"]


async def test_a_removed_event_id_may_be_stored_again(client: httpx.AsyncClient):
    await setup_session(client, *THREE)
    await client.delete(f"{S}/s/events", params={"last": 1})
    again = await client.post(f"{S}/s/events", json=event("c", mood="sad"))
    assert again.status_code == 201
    assert (await client.get(f"{S}/s")).json()["state"]["mood"] == "sad"


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"last": 0}, 422),
        ({"last": -1}, 422),
        ({"last": "x"}, 422),
        ({"last": 2**63}, 422),
        ({"after": ""}, 422),
        ({"after": "x" * 129}, 422),
        ({"after": "nope"}, 422),
        ({"after": "a", "last": 1}, 422),
    ],
)
async def test_bad_removals_are_refused_and_remove_nothing(
    client: httpx.AsyncClient, params: dict[str, object], status: int
):
    await setup_session(client, *THREE)
    refused = await client.delete(f"{S}/s/events", params=params)
    assert refused.status_code == status, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert await event_ids(client) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("query", "status"),
    [("after=a%00b", 422), ("after=%00", 422), ("after=%ED%A0%80", 400), ("after=%FF", 400)],
)
async def test_an_after_no_event_id_could_be_is_a_4xx_on_both_backends(
    client: httpx.AsyncClient, query: str, status: int
):
    """Text no database stores (NUL, a lone surrogate, bytes that are not
    UTF-8) never reaches one: PostgreSQL refused NUL with a 500 before. A
    query that is not UTF-8 is refused before any route."""
    await setup_session(client, *THREE)
    refused = await client.delete(f"{S}/s/events?{query}")
    assert refused.status_code == status, refused.text
    assert await event_ids(client) == ["a", "b", "c"]


async def test_removing_from_a_missing_session_is_404(client: httpx.AsyncClient):
    for params in ({}, {"last": 1}, {"after": "a"}):
        missing = await client.delete(f"{S}/nobody/events", params=params)
        assert missing.status_code == 404, (params, missing.text)


async def test_a_removal_restarts_an_idle_timeout(clocked_client: httpx.AsyncClient, clock: Clock):
    created = await clocked_client.post(S, json={"sessionId": "s", "ttlSeconds": 60})
    assert created.status_code == 201
    await clocked_client.post(f"{S}/s/events", json=event("a"))
    clock.advance(50)
    await clocked_client.delete(f"{S}/s/events")
    clock.advance(50)
    assert (await clocked_client.get(f"{S}/s")).status_code == 200


async def test_a_fork_at_a_removed_event_is_refused(client: httpx.AsyncClient):
    await setup_session(client, *THREE)
    await client.delete(f"{S}/s/events", params={"last": 1})
    fork = await client.post(f"{S}/s/fork", json={"sessionId": "f", "upToEventId": "c"})
    assert fork.status_code == 422
    fork = await client.post(f"{S}/s/fork", json={"sessionId": "f", "upToEventId": "b"})
    assert fork.status_code == 201, fork.text
    assert fork.json()["state"]["mood"] == "happy"
    # A fork after a removal continues past the source's revision, not its
    # event count: its next append cannot collide with a copied event.
    assert fork.headers["etag"] == '"2"'
    whole = await client.post(f"{S}/s/fork", json={"sessionId": "w"})
    assert whole.headers["etag"] == '"4"'
    more = await client.post(f"{S}/w/events", json=event("e"))
    assert more.status_code == 201 and more.headers["etag"] == '"5"'


async def test_concurrent_pops_never_remove_an_event_twice_or_one_not_seen(
    client: httpx.AsyncClient,
):
    """Each popper reads the newest event and its revision, then removes the
    newest event only if the session is still at that revision."""
    await setup_session(client, *(event(f"e{n}") for n in range(12)))
    popped: list[str] = []

    async def pop() -> None:
        while True:
            read = await client.get(f"{S}/s", params={"numRecentEvents": 1})
            if not read.json()["events"]:
                return
            newest = read.json()["events"][-1]["id"]
            removed = await client.delete(
                f"{S}/s/events", params={"last": 1}, headers={"If-Match": read.headers["etag"]}
            )
            if removed.status_code == 200:
                popped.append(newest)
            else:
                assert removed.status_code == 412, removed.text

    await asyncio.gather(*(pop() for _ in range(4)))
    assert sorted(popped) == sorted(f"e{n}" for n in range(12))
    assert await event_ids(client) == []


async def test_the_largest_last_removes_everything(client: httpx.AsyncClient):
    await setup_session(client, *THREE)
    removed = await client.delete(f"{S}/s/events", params={"last": 2**63 - 1})
    assert removed.status_code == 200, removed.text
    assert removed.headers["session-state-removed-events"] == "3"


async def test_a_fork_whose_event_is_removed_before_its_copy_writes_nothing(
    settings: Settings, client: httpx.AsyncClient
):
    """A fork derives its state before its transaction; inside it, it finds
    its last event gone (a removal in between) and writes nothing."""
    await setup_session(client, *THREE)
    store = await open_store(settings)
    try:
        source = SessionKey("chat", "ann", "s")
        found = await store.find_event(source, "c")
        assert found is not None
        await client.delete(f"{S}/s/events", params={"last": 1})
        outcome = await store.fork_session(
            ForkSource(source, found.seq, {"mood": "sad"}),
            "f",
            time.time(),
            NEVER_EXPIRES,
            forget_expired_memories=False,
        )
        assert outcome == "source_changed"
    finally:
        await store.close()
    assert (await client.get(f"{S}/f")).status_code == 404


async def test_a_removal_answers_with_the_removed_events_when_asked(client: httpx.AsyncClient):
    await setup_session(client, *THREE)
    removed = await client.delete(f"{S}/s/events", params={"last": 2, "returnRemoved": "true"})
    assert removed.status_code == 200, removed.text
    assert removed.headers["session-state-removed-events"] == "2"
    assert removed.headers["etag"] == '"4"'
    body = removed.json()
    # Oldest first, as stored; the session as any removal answers with it.
    assert [stored["id"] for stored in body["removedEvents"]] == ["b", "c"]
    assert body["removedEvents"][1]["actions"]["stateDelta"]["mood"] == "sad"
    assert body["events"] == []
    assert body["state"] == {"mood": "happy", "user:visits": 1, "app:hits": 3}
    assert await event_ids(client) == ["a"]
    # Without the flag, no removedEvents at all.
    plain = await client.delete(f"{S}/s/events", params={"last": 1})
    assert "removedEvents" not in plain.json()
    empty = await client.delete(f"{S}/s/events", params={"last": 1, "returnRemoved": "true"})
    assert empty.status_code == 200
    assert empty.json()["removedEvents"] == []
    assert empty.headers["session-state-removed-events"] == "0"


async def test_returned_removals_are_bounded_and_refused_otherwise(client: httpx.AsyncClient):
    await setup_session(client, *THREE)
    for params in (
        {"returnRemoved": "true"},
        {"returnRemoved": "true", "after": "a"},
        {"returnRemoved": "true", "last": 101},
        {"returnRemoved": "maybe", "last": 1},
    ):
        refused = await client.delete(f"{S}/s/events", params=params)
        assert refused.status_code == 422, (params, refused.text)
        assert refused.headers["content-type"] == "application/problem+json"
    assert await event_ids(client) == ["a", "b", "c"]


async def test_removed_events_past_the_answer_limit_are_refused_and_stay(database_url: str):
    small = Settings(
        database_url=database_url,
        max_event_bytes=64 * 1024,
        max_state_bytes=16 * 1024,
        max_response_bytes=256 * 1024,
    )
    async with asgi_client(small) as client:
        await setup_session(
            client, *({"id": f"e{n}", "author": "u", "text": "x" * 40_000} for n in range(5))
        )
        refused = await client.delete(f"{S}/s/events", params={"last": 4, "returnRemoved": "true"})
        assert refused.status_code == 413, refused.text
        assert refused.json()["code"] == "response_too_large"
        # Nothing removed: the session is at its revision, newest event e4.
        newest = await client.get(f"{S}/s", params={"numRecentEvents": 1})
        assert newest.headers["etag"] == '"5"'
        assert newest.json()["events"][0]["id"] == "e4"
        fits = await client.delete(f"{S}/s/events", params={"last": 2, "returnRemoved": "true"})
        assert [stored["id"] for stored in fits.json()["removedEvents"]] == ["e3", "e4"]


async def test_concurrent_one_request_pops_each_take_a_different_event(
    client: httpx.AsyncClient,
):
    """Pops of one request each (no If-Match): every event is taken by
    exactly one popper, newest first for each."""
    count, poppers = 16, 4
    await setup_session(client, *(event(f"e{n}") for n in range(count)))
    taken: list[list[int]] = [[] for _ in range(poppers)]
    in_flight = [0, 0]  # now, most at once

    async def pop(popper: int) -> None:
        while True:
            in_flight[0] += 1
            in_flight[1] = max(in_flight)
            try:
                removed = await client.delete(
                    f"{S}/s/events", params={"last": 1, "returnRemoved": "true"}
                )
            finally:
                in_flight[0] -= 1
            assert removed.status_code in (200, 412), removed.text
            if removed.status_code == 412:  # kept changing under the server's tries
                continue
            events = removed.json()["removedEvents"]
            if not events:
                return
            taken[popper].append(int(events[0]["id"][1:]))

    await asyncio.gather(*(pop(popper) for popper in range(poppers)))
    everything = [number for numbers in taken for number in numbers]
    assert sorted(everything) == list(range(count))
    # The pops raced: several were at the server at once. (Which popper wins
    # each race is the scheduler's: on a loaded machine one took them all.)
    assert in_flight[1] >= 2
    for numbers in taken:
        assert numbers == sorted(numbers, reverse=True)
    assert await event_ids(client) == []


# -- a pop in one store call (Store.pop_newest) ------------------------------


def _without_removed_events(body: bytes) -> bytes:
    """A removal's answer as a session read shows the session: its
    removedEvents (the answer's last member) cut off."""
    cut = body.rindex(b',"removedEvents":')
    return body[:cut] + b"}"


async def test_a_pop_writes_and_answers_as_the_general_removal_does(
    clocked_app: Any, clocked_client: httpx.AsyncClient, clock: Clock
):
    """Twin sessions, one popped (returnRemoved: one store call), one by a
    plain removal (the events read, then removed): the same answers, the
    same rows written (revision, update time, idle expiry, the recorded
    removal)."""
    for session_id in ("popped", "removed"):
        created = await clocked_client.post(
            S,
            json={
                "sessionId": session_id,
                "state": {"mood": "calm"},
                "ttlSeconds": 600,
                "labels": {"team": "blue"},
            },
        )
        assert created.status_code == 201, created.text
        for document in (event("a", mood="happy"), event("b", **{"user:visits": 2})):
            stored = await clocked_client.post(f"{S}/{session_id}/events", json=document)
            assert stored.status_code == 201, stored.text
    clock.advance(30)
    popped = await clocked_client.delete(
        f"{S}/popped/events", params={"last": 1, "returnRemoved": "true"}
    )
    removed = await clocked_client.delete(f"{S}/removed/events", params={"last": 1})
    assert popped.status_code == removed.status_code == 200, (popped.text, removed.text)
    assert [stored["id"] for stored in popped.json()["removedEvents"]] == ["b"]
    for header in ("etag", "session-state-removed-events"):
        assert popped.headers[header] == removed.headers[header]
    answer = _without_removed_events(popped.content)
    assert answer.replace(b'"popped"', b'"removed"') == removed.content
    # Byte for byte what a read of the session without events answers.
    read = await clocked_client.get(f"{S}/popped", params={"numRecentEvents": 0})
    assert answer == read.content
    store = clocked_app.state.service.store
    changes = [
        await store.read_changes(SessionKey("chat", "ann", name), 0, 10, 10_000, clock())
        for name in ("popped", "removed")
    ]
    assert changes[0] is not None and changes[1] is not None
    assert changes[0].removals == changes[1].removals
    assert [removal.event_ids for removal in changes[0].removals] == [["b"]]
    assert changes[0].expire_time == changes[1].expire_time == clock() + 600


# Deltas and whether they change session-scope state, as app.sessions.events reads them.
STATE_CHANGES = [
    ({"stateDelta": {"mood": "x"}}, True),
    ({"state_delta": {"mood": "x"}}, True),
    ({"stateDelta": {"apple": 1}}, True),
    ({"stateDelta": {"App:x": 1}}, True),
    ({"stateDelta": {"é": 1, "app:x": 1}}, True),
    ({"stateDelta": {"app:hits": 1, "user:é": 2, "temp:x": 3}}, False),
    ({"stateDelta": None, "state_delta": {"mood": "x"}}, False),
    ({"stateDelta": {}}, False),
    ({"artifactDelta": {"f": 1}}, False),
    (None, False),
]


async def test_a_pop_leaves_events_that_changed_session_state_to_the_service(
    clocked_app: Any, clocked_client: httpx.AsyncClient, clock: Clock
):
    """The store tells a state change as app.sessions.history does, and removes
    nothing then (the state after must be derived); nor when the revision
    is not the one expected or the events would not fit the answer."""
    store = clocked_app.state.service.store
    for number, (actions, changes) in enumerate(STATE_CHANGES):
        session_id = f"s{number}"
        created = await clocked_client.post(S, json={"sessionId": session_id})
        assert created.status_code == 201, created.text
        document: dict[str, Any] = {"id": "e", "author": "user"}
        if actions is not None:
            document["actions"] = actions
        stored = await clocked_client.post(f"{S}/{session_id}/events", json=document)
        assert stored.status_code == 201, stored.text
        key = SessionKey("chat", "ann", session_id)
        for expected, max_bytes in ((0, 10_000), (None, 10)):
            refused = await store.pop_newest(key, 1, expected, max_bytes, clock())
            assert refused.removed is None and refused.revision == 1, (actions, refused)
        popped = await store.pop_newest(key, 1, None, 10_000, clock())
        assert popped.changes_state is changes, actions
        assert popped.changes_state is changes_session_state(popped.events), actions
        assert [json.loads(stored.data)["id"] for stored in popped.events] == ["e"]
        assert popped.removed == (None if changes else 1), actions
        assert popped.session.session.revision == (1 if changes else 2), actions
    assert await store.pop_newest(SessionKey("chat", "ann", "none"), 1, None, 10, clock()) is None


async def test_a_pop_of_an_event_the_database_cannot_read_as_json_takes_the_general_path(
    database_url: str, client: httpx.AsyncClient
):
    """An event stored before the value rules, with a NUL in a text:
    PostgreSQL's JSON refuses to read it, so the pop is the service's."""
    await setup_session(client, event("a"), event("b"))
    legacy = '{"id":"b","author":"user","content":{"parts":[{"text":"a\\u0000b"}]}}'
    engine = create_async_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                text("UPDATE events SET data = :data WHERE id = 'b'"), {"data": legacy}
            )
    finally:
        await engine.dispose()
    popped = await client.delete(f"{S}/s/events", params={"last": 1, "returnRemoved": "true"})
    assert popped.status_code == 200, popped.text
    assert popped.json()["removedEvents"] == [json.loads(legacy)]
    assert await event_ids(client) == ["a"]
