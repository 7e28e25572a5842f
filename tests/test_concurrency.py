"""Real concurrent HTTP requests against two `session-state serve` processes
sharing one database: no update is lost, preconditions pick one winner,
retries store once."""

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import (
    ServerProcess,
    _async_url,
    create_postgres_database,
    drop_postgres_database,
    migrate,
)
from tests.in_flight import InFlight

APP = "concurrency"
USER = "writer"
SESSIONS = 20
KEYS_PER_SESSION = 25
CREATIONS = 20
PRECONDITION_ROUNDS = 40


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
def servers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[ServerProcess]]:
    database_name = None
    if request.param == "postgresql":
        if not request.getfixturevalue("postgres_available"):
            pytest.skip("PostgreSQL not reachable")
        database_name = create_postgres_database("session_state_concurrency")
        url = _async_url(database_name)
        migrate(url)
    else:
        url = f"sqlite+aiosqlite:///{Path(tmp_path_factory.mktemp('sqlite')) / 'shared.db'}"
    processes = [ServerProcess(url).start(), ServerProcess(url).start()]
    yield processes
    for process in processes:
        process.stop()
    if database_name is not None:
        drop_postgres_database(database_name)


@pytest.fixture
async def http() -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        yield client


async def test_concurrent_writers_of_user_and_app_keys_lose_nothing(servers, http):
    bases = itertools.cycle([server.base_url for server in servers])
    in_flight = InFlight()
    session_ids = [f"s{index}" for index in range(SESSIONS)]
    for session_id in session_ids:
        response = await http.post(
            f"{next(bases)}/apps/{APP}/users/{USER}/sessions", json={"sessionId": session_id}
        )
        assert response.status_code == 201

    async def append(base: str, session_id: str, key_index: int) -> int:
        event = {
            "author": "agent",
            "actions": {"stateDelta": {f"user:{session_id}_k{key_index}": key_index}},
        }
        response = await in_flight.time(
            http.post(f"{base}/apps/{APP}/users/{USER}/sessions/{session_id}/events", json=event),
            base,
        )
        return response.status_code

    async def create(base: str, index: int) -> int:
        body = {
            "sessionId": f"created{index}",
            "state": {f"user:created{index}": index, f"app:created{index}": index},
        }
        response = await in_flight.time(
            http.post(f"{base}/apps/{APP}/users/{USER}/sessions", json=body), base
        )
        return response.status_code

    work = [
        append(next(bases), session_id, key_index)
        for key_index in range(KEYS_PER_SESSION)
        for session_id in session_ids
    ]
    # Creations carrying initial user: and app: state, interleaved with appends.
    for index in range(CREATIONS):
        work.insert(index * len(work) // CREATIONS, create(next(bases), index))
    statuses = await asyncio.gather(*work)
    assert set(statuses) == {201}
    # The writers raced: many requests at once, on both servers together.
    assert in_flight.most_at_once() >= 8, in_flight.most_at_once()
    assert in_flight.overlapped_across(servers[0].base_url, servers[1].base_url)

    user_state = (await http.get(f"{servers[0].base_url}/apps/{APP}/users/{USER}/state")).json()
    expected_user_keys = {
        f"{session_id}_k{key_index}"
        for session_id in session_ids
        for key_index in range(KEYS_PER_SESSION)
    } | {f"created{index}" for index in range(CREATIONS)}
    assert set(user_state["state"]) == expected_user_keys

    app_state = (await http.get(f"{servers[1].base_url}/apps/{APP}/state")).json()
    assert {f"created{index}" for index in range(CREATIONS)} <= set(app_state["state"])

    session = (await http.get(f"{servers[1].base_url}/apps/{APP}/users/{USER}/sessions/s0")).json()
    assert len(session["events"]) == KEYS_PER_SESSION
    assert expected_user_keys <= {key.removeprefix("user:") for key in session["state"]}


async def test_two_writers_with_the_same_revision_get_one_success_and_one_412(servers, http):
    first, second = (server.base_url for server in servers)
    path = f"/apps/{APP}/users/{USER}/sessions"
    created = await http.post(f"{first}{path}", json={"sessionId": "contended"})
    revision = created.headers["ETag"]
    raced = 0
    for round_number in range(PRECONDITION_ROUNDS):
        in_flight = InFlight()

        async def write(
            base: str,
            writer: str,
            etag: str = revision,
            n: int = round_number,
            in_flight: InFlight = in_flight,
        ):
            request = http.post(
                f"{base}{path}/contended/events",
                json={"author": writer, "actions": {"stateDelta": {"winner": f"{writer}{n}"}}},
                headers={"If-Match": etag},
            )
            return await in_flight.time(request, base)

        responses = await asyncio.gather(write(first, "a"), write(second, "b"))
        raced += in_flight.overlapped_across(first, second)
        statuses = sorted(response.status_code for response in responses)
        assert statuses == [201, 412], f"round {round_number}: {statuses}"
        winner = next(response for response in responses if response.status_code == 201)
        loser = next(response for response in responses if response.status_code == 412)
        assert loser.json()["code"] == "stale_session"
        revision = winner.headers["ETag"]

    # In some round both writes were in flight at once (else the 412 proves
    # only that a revision moved on).
    assert raced >= 1
    session = (await http.get(f"{first}{path}/contended")).json()
    assert len(session["events"]) == PRECONDITION_ROUNDS
    assert session["state"]["winner"] == session["events"][-1]["actions"]["stateDelta"]["winner"]


async def test_the_same_event_sent_to_both_servers_at_once_is_stored_once(servers, http):
    first, second = (server.base_url for server in servers)
    path = f"/apps/{APP}/users/{USER}/sessions"
    await http.post(f"{first}{path}", json={"sessionId": "retried"})
    raced = 0
    for index in range(20):
        in_flight = InFlight()
        event = {
            "id": f"event-{index}",
            "author": "agent",
            "timestamp": 1000.0 + index,
            "actions": {"stateDelta": {"app:retried_counter": index}},
        }
        responses = await asyncio.gather(
            in_flight.time(http.post(f"{first}{path}/retried/events", json=event), first),
            in_flight.time(http.post(f"{second}{path}/retried/events", json=event), second),
        )
        raced += in_flight.overlapped_across(first, second)
        assert sorted(response.status_code for response in responses) == [200, 201]
        assert responses[0].json() == responses[1].json() == event
        # A later retry, after the success, is recognised as well.
        again = await http.post(f"{second}{path}/retried/events", json=event)
        assert again.status_code == 200
    # In some round both copies were in flight at once, not one after the other.
    assert raced >= 1
    session = (await http.get(f"{second}{path}/retried")).json()
    assert [event["id"] for event in session["events"]] == [f"event-{i}" for i in range(20)]


async def test_the_same_events_sent_to_both_servers_at_once_in_many_sessions_are_stored_once(
    servers, http
):
    """Each server sends the appends it gets together in one statement (group
    commit on PostgreSQL): a batch meeting an event id that the other
    server's batch stored meanwhile is run append by append, so each pair
    still gets one 201 and one 200, and no other append of either batch is
    lost or failed."""
    first, second = (server.base_url for server in servers)
    path = f"/apps/{APP}/users/{USER}/sessions"
    session_ids = [f"paired{index}" for index in range(SESSIONS)]
    for session_id in session_ids:
        await http.post(f"{first}{path}", json={"sessionId": session_id})
    in_flight = InFlight()
    for step in range(5):
        events = {
            session_id: {
                "id": f"{session_id}-{step}",
                "author": "agent",
                "timestamp": 1000.0 + step,
                "actions": {"stateDelta": {"step": step, f"user:{session_id}": step}},
            }
            for session_id in session_ids
        }
        sends = [
            in_flight.time(
                http.post(f"{base}{path}/{session_id}/events", json=events[session_id]), base
            )
            for session_id in session_ids
            for base in (first, second)
        ]
        responses = await asyncio.gather(*sends)
        for index, session_id in enumerate(session_ids):
            pair = responses[2 * index : 2 * index + 2]
            assert sorted(response.status_code for response in pair) == [200, 201], session_id
            assert pair[0].json() == pair[1].json() == events[session_id]
    # The servers' appends ran together (many at once, on both servers).
    assert in_flight.most_at_once() >= 8, in_flight.most_at_once()
    assert in_flight.overlapped_across(first, second)
    user_state = (await http.get(f"{second}/apps/{APP}/users/{USER}/state")).json()["state"]
    for session_id in session_ids:
        session = (await http.get(f"{second}{path}/{session_id}")).json()
        assert [event["id"] for event in session["events"]] == [
            f"{session_id}-{step}" for step in range(5)
        ]
        assert session["state"]["step"] == 4
        assert user_state[session_id] == 4


async def test_batches_single_appends_and_removals_from_both_servers_lose_nothing(servers, http):
    """Batches (one statement each, all or none) and single appends racing on
    the same sessions from both servers, with shared user: and app: keys:
    every event of every batch is stored, the batches stay whole, and every
    key lands. Then pops from both servers at once (If-Match on the revision
    read with the newest event) each take a different event."""
    first, second = (server.base_url for server in servers)
    path = f"/apps/{APP}/users/{USER}/sessions"
    session_ids = [f"batched{index}" for index in range(4)]
    for session_id in session_ids:
        await http.post(f"{first}{path}", json={"sessionId": session_id})

    def batch(session_id: str, writer: str, round_number: int) -> list[dict[str, object]]:
        return [
            {
                "id": f"{writer}{round_number}-{part}",
                "author": writer,
                "actions": {
                    "stateDelta": {
                        f"user:{session_id}-{writer}{round_number}": part,
                        "app:hot": part,
                        writer: round_number,
                    }
                },
            }
            for part in range(3)
        ]

    sends = []
    for round_number in range(10):
        for session_id in session_ids:
            for writer, base in (("a", first), ("b", second)):
                sends.append(
                    http.post(
                        f"{base}{path}/{session_id}/events/batch",
                        json={"events": batch(session_id, writer, round_number)},
                    )
                )
            single = {"id": f"c{round_number}", "author": "c"}
            sends.append(http.post(f"{second}{path}/{session_id}/events", json=single))
    statuses = [response.status_code for response in await asyncio.gather(*sends)]
    assert set(statuses) == {201}

    user_state = (await http.get(f"{first}/apps/{APP}/users/{USER}/state")).json()["state"]
    for session_id in session_ids:
        ids = [
            event["id"]
            for event in (await http.get(f"{first}{path}/{session_id}")).json()["events"]
        ]
        assert len(ids) == 10 * 7
        for writer in "ab":
            for round_number in range(10):
                start = ids.index(f"{writer}{round_number}-0")
                assert ids[start : start + 3] == [f"{writer}{round_number}-{p}" for p in range(3)]
                assert user_state[f"{session_id}-{writer}{round_number}"] == 2

    async def pop(base: str, session_id: str) -> list[str]:
        popped = []
        while True:
            read = await http.get(f"{base}{path}/{session_id}", params={"numRecentEvents": 1})
            if not read.json()["events"]:
                return popped
            removed = await http.delete(
                f"{base}{path}/{session_id}/events",
                params={"last": 1},
                headers={"If-Match": read.headers["ETag"]},
            )
            if removed.status_code == 200:
                assert removed.headers["Session-State-Removed-Events"] == "1"
                popped.append(read.json()["events"][-1]["id"])
            else:
                assert removed.status_code == 412, removed.text

    for session_id in session_ids[:2]:
        popped = await asyncio.gather(pop(first, session_id), pop(second, session_id))
        taken = popped[0] + popped[1]
        assert len(taken) == len(set(taken)) == 10 * 7
        session = await http.get(f"{first}{path}/{session_id}")
        assert session.json()["events"] == []
        # The session keys went with their events (it was made with none);
        # the shared keys stay.
        state = session.json()["state"]
        assert not {key for key in state if not key.startswith(("user:", "app:"))}
        assert state["app:hot"] == 2
