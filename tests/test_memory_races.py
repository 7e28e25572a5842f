"""Memory writes racing each other, against started servers on both
backends: concurrent adds of the same events store each once and never fail,
and a delete_memory racing adds of the same id never leaves the deleted id
stored (on PostgreSQL an add could wait on the deleted row's index entry and
then insert it once the delete committed, past the forgotten id it had not
seen: the user's memory writes are serialised)."""

import asyncio
import uuid

import httpx
import pytest

from tests.in_flight import InFlight

ROUNDS = 20
ADDS_PER_ROUND = 6


@pytest.fixture(params=["sqlite", "postgresql"])
def base_url(request) -> str:
    return request.getfixturevalue(f"{request.param}_server").base_url


def _events(word: str, count: int) -> list[dict]:
    return [
        {"id": f"e{index}", "author": "user", "content": {"parts": [{"text": f"{word} {index}"}]}}
        for index in range(count)
    ]


async def test_concurrent_adds_of_the_same_events_store_each_once(base_url):
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        user = f"/apps/races/users/a{uuid.uuid4().hex[:8]}/memory"
        # In different orders, so that a row-by-row insert would deadlock.
        events = _events("walrus", 200)
        bodies = [
            {"sessionId": "s", "events": events if turn % 2 else events[::-1]}
            for turn in range(ADDS_PER_ROUND)
        ]
        answers = await asyncio.gather(*[http.post(f"{user}/events", json=b) for b in bodies])
        assert [answer.status_code for answer in answers] == [200] * ADDS_PER_ROUND
        assert sum(answer.json()["memoriesAdded"] for answer in answers) == 200
        found = await http.get(user, params={"query": "walrus", "limit": 100})
        assert len(found.json()["memories"]) == 100


async def test_a_delete_racing_adds_never_leaves_the_deleted_id_stored(base_url):
    raced = 0
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        for trial in range(ROUNDS):
            in_flight = InFlight()
            user = f"/apps/races/users/d{uuid.uuid4().hex[:8]}/memory"
            word = f"narwhal{trial}x"
            event = {"id": "gone", "author": "user", "content": {"parts": [{"text": word}]}}
            first = await http.post(f"{user}/events", json={"sessionId": "s0", "events": [event]})
            assert first.json() == {"memoriesAdded": 1}

            async def add(session: str, event=event, user=user, in_flight=in_flight):
                body = {"sessionId": session, "events": [event]}
                return await in_flight.time(http.post(f"{user}/events", json=body), "add")

            async def delete(user=user, in_flight=in_flight):
                await asyncio.sleep(0.001)
                return await in_flight.time(http.delete(f"{user}/gone"), "delete")

            *adds, deleted = await asyncio.gather(
                *[add(f"s{index % 2}") for index in range(ADDS_PER_ROUND)], delete()
            )
            assert deleted.status_code == 204
            assert all(answer.status_code == 200 for answer in adds), [a.text for a in adds]
            found = await http.get(user, params={"query": word})
            assert found.json()["memories"] == [], trial
            raced += in_flight.overlapped_across("add", "delete")
    # The race was run: in some round the delete was in flight with an add.
    assert raced >= 1
