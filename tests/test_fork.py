"""Forking a session: a new session of the same user with copies of the
events up to one, and the session state those events leave (derived from
the creation state and the events' deltas, compared here with a replay);
app and user state shared, not copied; the two sessions independent after."""

import copy

import httpx
import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from session_state.db import migrations
from session_state.sessions import forking, history

from .conftest import Clock

ADA = "/apps/travel/users/ada"

# Deltas touching every scope: overwrites, nulls, nested values, temp: keys
# (never stored), and events without a delta.
DELTAS = [
    {"stage": "search", "user:visits": 1, "app:searches": 1, "temp:draft": "x"},
    {},
    {"stage": "offer", "offer": {"price": 410, "seats": [1, 2]}, "app:searches": 2},
    {"offer": None, "note": "held", "user:visits": 2},
    None,
    {"stage": "paid", "receipt": [1, "two", {"three": 3.0}], "temp:card": "4111"},
    {"note": "sent", "app:searches": 3},
]
INITIAL = {"stage": "new", "lang": "fr", "user:name": "Ada", "app:region": "eu"}


def _replay(up_to: int) -> dict:
    """The session-scope state after the first `up_to` events, by replay."""
    state = {key: value for key, value in INITIAL.items() if ":" not in key}
    for delta in DELTAS[:up_to]:
        for key, value in (delta or {}).items():
            if not key.startswith(("app:", "user:", "temp:")):
                state[key] = copy.deepcopy(value)
    return state


def _session_scope(state: dict) -> dict:
    return {key: value for key, value in state.items() if not key.startswith(("app:", "user:"))}


async def _conversation(client: httpx.AsyncClient, session_id: str = "trip") -> list[dict]:
    created = await client.post(f"{ADA}/sessions", json={"sessionId": session_id, "state": INITIAL})
    assert created.status_code == 201
    stored = []
    for index, delta in enumerate(DELTAS):
        event = {"id": f"e{index}", "author": "planner", "invocationId": "i1"}
        event["content"] = {"role": "model", "parts": [{"text": f"turn {index}"}]}
        if delta is not None:
            event["actions"] = {"stateDelta": delta}
        appended = await client.post(f"{ADA}/sessions/{session_id}/events", json=event)
        assert appended.status_code == 201
        stored.append(appended.json())
    return stored


async def _events(client: httpx.AsyncClient, session_id: str) -> list[dict]:
    page = await client.get(f"{ADA}/sessions/{session_id}/events", params={"pageSize": 1000})
    return page.json()["events"]


async def test_a_fork_at_each_event_holds_its_events_and_the_replayed_state(client):
    stored = await _conversation(client)
    shared = (await client.get(f"{ADA}/sessions/trip")).json()["state"]
    for up_to in range(1, len(DELTAS) + 1):
        body = {"sessionId": f"fork-{up_to}", "upToEventId": f"e{up_to - 1}"}
        forked = await client.post(f"{ADA}/sessions/trip/fork", json=body)
        assert forked.status_code == 201, forked.text
        assert forked.headers["ETag"] == f'"{up_to}"'
        # The copies are not sent back: no "events" that would read as none.
        assert "events" not in forked.json()
        assert len(await _events(client, f"fork-{up_to}")) == up_to
        assert _session_scope(forked.json()["state"]) == _replay(up_to)
        # App and user state are the scopes', shared with the source.
        assert {k: v for k, v in forked.json()["state"].items() if ":" in k} == {
            k: v for k, v in shared.items() if ":" in k
        }
        assert await _events(client, f"fork-{up_to}") == stored[:up_to]


async def test_the_stored_state_equals_the_derivation_over_the_whole_history(client):
    await _conversation(client)
    whole = await client.post(f"{ADA}/sessions/trip/fork", json={"sessionId": "copy"})
    last = await client.post(
        f"{ADA}/sessions/trip/fork", json={"sessionId": "derived", "upToEventId": "e6"}
    )
    source = (await client.get(f"{ADA}/sessions/trip")).json()
    assert whole.json()["state"] == last.json()["state"] == source["state"]
    assert _session_scope(source["state"]) == _replay(len(DELTAS))
    assert whole.headers["ETag"] == last.headers["ETag"] == f'"{len(DELTAS)}"'


async def test_a_fork_and_its_source_go_their_own_ways(client):
    await _conversation(client)
    forked = await client.post(f"{ADA}/sessions/trip/fork", json={"upToEventId": "e2"})
    fork_id = forked.json()["id"]
    assert fork_id != "trip" and len(fork_id) == 36  # a uuid4
    event = {"id": "e3", "author": "user", "actions": {"stateDelta": {"stage": "other"}}}
    # The copy's ids are the source's; the fork continues at its own revision.
    on_fork = await client.post(
        f"{ADA}/sessions/{fork_id}/events", json=event, headers={"If-Match": '"3"'}
    )
    assert on_fork.status_code == 201 and on_fork.headers["ETag"] == '"4"'
    source = (await client.get(f"{ADA}/sessions/trip")).json()
    assert source["state"]["stage"] == "paid" and len(source["events"]) == len(DELTAS)
    assert (await client.delete(f"{ADA}/sessions/trip")).status_code == 204
    assert (await client.get(f"{ADA}/sessions/trip")).status_code == 404
    assert len(await _events(client, fork_id)) == 4


async def test_fork_errors(client):
    await _conversation(client)
    fork = f"{ADA}/sessions/trip/fork"
    missing = await client.post(f"{ADA}/sessions/nope/fork", json={})
    assert missing.status_code == 404
    await client.post(f"{ADA}/sessions", json={"sessionId": "taken"})
    taken = await client.post(fork, json={"sessionId": "taken"})
    assert taken.status_code == 409 and taken.json()["code"] == "session_already_exists"
    unknown = await client.post(fork, json={"upToEventId": "e99"})
    assert unknown.status_code == 422
    assert unknown.json()["errors"][0]["loc"] == ["body", "upToEventId"]
    other_session = await client.post(f"{ADA}/sessions/taken/fork", json={"upToEventId": "e1"})
    assert other_session.status_code == 422
    for bad in ({"sessionId": ""}, {"sessionId": 5}, {"upToEventId": ""}, {"ttlSeconds": 0}, []):
        refused = await client.post(fork, json=bad)
        assert refused.status_code == 422, (bad, refused.text)
    # Nothing was created by any of them.
    listed = (await client.get(f"{ADA}/sessions")).json()["sessions"]
    assert sorted(session["id"] for session in listed) == ["taken", "trip"]


# The invocation of each event of DELTAS: one invocation may come back later
# (its first event is where a fork before it stops, as ADK's rewind finds it).
INVOCATIONS = ["inv-a", "inv-a", "inv-b", "inv-b", "inv-a", "inv-c", "inv-c"]


async def _invocations(client: httpx.AsyncClient, session_id: str) -> list[dict]:
    await client.post(f"{ADA}/sessions", json={"sessionId": session_id, "state": INITIAL})
    stored = []
    for index, (delta, invocation) in enumerate(zip(DELTAS, INVOCATIONS, strict=True)):
        event = {"id": f"e{index}", "author": "planner", "invocationId": invocation}
        if delta is not None:
            event["actions"] = {"stateDelta": delta}
        appended = await client.post(f"{ADA}/sessions/{session_id}/events", json=event)
        assert appended.status_code == 201
        stored.append(appended.json())
    return stored


@pytest.mark.parametrize(("invocation", "before"), [("inv-a", 0), ("inv-b", 2), ("inv-c", 5)])
async def test_a_fork_before_an_invocation_holds_the_events_before_its_first(
    client, invocation, before
):
    stored = await _invocations(client, "plan")
    body = {"sessionId": "retry", "beforeInvocationId": invocation}
    forked = await client.post(f"{ADA}/sessions/plan/fork", json=body)
    assert forked.status_code == 201, forked.text
    assert forked.headers["ETag"] == f'"{before}"'
    assert "events" not in forked.json()
    assert await _events(client, "retry") == stored[:before]
    # The state as of then: the creation state and the deltas before it.
    assert _session_scope(forked.json()["state"]) == _replay(before)
    # The fork goes on from there.
    event = {"id": "again", "author": "user", "invocationId": invocation}
    headers = {"If-Match": f'"{before}"'}
    assert (
        await client.post(f"{ADA}/sessions/retry/events", json=event, headers=headers)
    ).status_code == 201


async def test_a_fork_before_an_invocation_refuses_what_it_cannot_find(client):
    await _invocations(client, "plan")
    fork = f"{ADA}/sessions/plan/fork"
    unknown = await client.post(fork, json={"beforeInvocationId": "inv-z"})
    assert unknown.status_code == 404
    assert unknown.json()["code"] == "invocation_not_found"
    both = await client.post(fork, json={"upToEventId": "e1", "beforeInvocationId": "inv-b"})
    assert both.status_code == 422
    assert "not both" in both.json()["errors"][0]["msg"]
    for bad in ({"beforeInvocationId": ""}, {"beforeInvocationId": 1}):
        assert (await client.post(fork, json=bad)).status_code == 422, bad
    # Nothing was created by any of them.
    listed = (await client.get(f"{ADA}/sessions")).json()["sessions"]
    assert [session["id"] for session in listed] == ["plan"]


async def test_a_fork_before_an_invocation_reads_a_long_history_in_batches(client, monkeypatch):
    monkeypatch.setattr(history, "READ_BATCH", 3)
    await client.post(f"{ADA}/sessions", json={"sessionId": "long", "state": {"n": -1}})
    for index in range(20):
        event = {"id": f"e{index}", "author": "a", "invocation_id": f"i{index // 2}"}
        event["actions"] = {"state_delta": {"n": index}}
        assert (await client.post(f"{ADA}/sessions/long/events", json=event)).status_code == 201
    for invocation in range(10):
        body = {"sessionId": f"f{invocation}", "before_invocation_id": f"i{invocation}"}
        forked = await client.post(f"{ADA}/sessions/long/fork", json=body)
        assert forked.json()["state"] == {"n": 2 * invocation - 1}
        assert len(await _events(client, f"f{invocation}")) == 2 * invocation


async def test_a_fork_has_its_own_expiry(clocked_client, clock: Clock):
    await _conversation(clocked_client)
    forked = await clocked_client.post(
        f"{ADA}/sessions/trip/fork", json={"sessionId": "f", "ttlSeconds": 30}
    )
    assert forked.json()["expireTime"] == pytest.approx(clock.now + 30)
    plain = await clocked_client.post(f"{ADA}/sessions/trip/fork", json={"sessionId": "g"})
    assert "expireTime" not in plain.json()
    clock.advance(30)
    assert (await clocked_client.get(f"{ADA}/sessions/f")).status_code == 404
    assert (await clocked_client.get(f"{ADA}/sessions/g")).status_code == 200
    # An expired fork's id is free for the next fork.
    again = await clocked_client.post(f"{ADA}/sessions/trip/fork", json={"sessionId": "f"})
    assert again.status_code == 201


async def test_a_long_history_is_copied_and_derived_in_batches(client, monkeypatch):
    monkeypatch.setattr(forking, "FORK_BATCH_EVENTS", 7)
    monkeypatch.setattr(history, "READ_BATCH", 5)
    await client.post(f"{ADA}/sessions", json={"sessionId": "long", "state": {"n": -1}})
    for index in range(40):
        event = {"id": f"e{index}", "author": "a", "actions": {"stateDelta": {"n": index}}}
        assert (await client.post(f"{ADA}/sessions/long/events", json=event)).status_code == 201
    for up_to in (1, 5, 7, 8, 23, 40):
        body = {"sessionId": f"f{up_to}", "upToEventId": f"e{up_to - 1}"}
        forked = await client.post(f"{ADA}/sessions/long/fork", json=body)
        assert forked.json()["state"] == {"n": up_to - 1}
        events = await _events(client, f"f{up_to}")
        assert [event["id"] for event in events] == [f"e{index}" for index in range(up_to)]


async def _to_0006_then_head(url: str) -> None:
    engine = create_async_engine(url)
    try:
        await migrations.downgrade(engine, "0006")
        async with engine.begin() as connection:
            await connection.exec_driver_sql(
                "INSERT INTO sessions (app_name, user_id, id, state, state_bytes, revision, "
                "create_time, update_time) VALUES "
                "('travel', 'ada', 'fresh', '{\"k\": 1}', 8, 0, 1, 1), "
                "('travel', 'ada', 'used', '{\"k\": 2}', 8, 1, 1, 2)"
            )
            await connection.exec_driver_sql(
                "INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, "
                "author, timestamp, data) VALUES ('travel', 'ada', 'used', 1, 'e1', '', 'a', 2, "
                '\'{"id":"e1","author":"a","timestamp":2,"actions":{"stateDelta":{"k":2}}}\')'
            )
        await migrations.upgrade(engine)
    finally:
        await engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_sessions_from_before_0007_fork_whole_and_partially_only_when_derivable(
    backend, tmp_path, request
):
    from session_state.core.config import Settings
    from session_state.main import create_app

    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
    else:
        url = request.getfixturevalue("fresh_postgres_url")
    engine = create_async_engine(url)
    await migrations.upgrade(engine)
    await engine.dispose()
    await _to_0006_then_head(url)
    app = create_app(Settings(database_url=url, sweep_interval_seconds=0))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
    ):
        # No event yet: its state is still its creation state, recorded by 0007.
        await client.post(
            f"{ADA}/sessions/fresh/events",
            json={"id": "x1", "author": "a", "actions": {"stateDelta": {"k": 9}}},
        )
        partial = await client.post(f"{ADA}/sessions/fresh/fork", json={"upToEventId": "x1"})
        assert partial.status_code == 201 and partial.json()["state"] == {"k": 9}
        # Events from before 0007: the creation state is unknown.
        refused = await client.post(f"{ADA}/sessions/used/fork", json={"upToEventId": "e1"})
        assert refused.status_code == 409, refused.text
        assert refused.json()["code"] == "initial_state_unknown"
        assert "omit upToEventId" in refused.json()["detail"]
        before = await client.post(f"{ADA}/sessions/used/fork", json={"beforeInvocationId": "b"})
        assert before.status_code == 404  # its one event is of no invocation
        whole = await client.post(f"{ADA}/sessions/used/fork", json={"sessionId": "copy"})
        assert whole.status_code == 201 and whole.json()["state"] == {"k": 2}
        assert len(await _events(client, "copy")) == 1
        # A fork of a fork is derivable as far as its source was.
        refused = await client.post(f"{ADA}/sessions/copy/fork", json={"upToEventId": "e1"})
        assert refused.status_code == 409
