"""A user's memories listed without a question (GET .../memory/entries), on
both backends: the last added first, each as a search shows it (without
its score); keyset pages that neither lose nor repeat a memory while others
are added or deleted between them, and that end early to fit a response;
other users', other apps' and deleted memories left out; hostile queries a
4xx, never a 500."""

import asyncio
from typing import Any

import httpx
import pytest

from session_state.core.config import Settings
from tests.conftest import asgi_client

APP = "assistant"
MEMORY = f"/apps/{APP}/users/ann/memory"
LISTED = f"{MEMORY}/entries"


def entry(memory_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": memory_id,
        "author": "user",
        "timestamp": "2026-12-07T08:00:00Z",
        "content": {"role": "user", "parts": [{"text": text}]},
        **extra,
    }


async def add(client: httpx.AsyncClient, *entries: dict[str, Any], path: str = MEMORY) -> None:
    response = await client.post(f"{path}/entries", json={"memories": list(entries)})
    assert response.status_code == 200, response.text


async def page(client: httpx.AsyncClient, path: str = LISTED, **params: Any) -> dict[str, Any]:
    response = await client.get(path, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def ids(body: dict[str, Any]) -> list[str]:
    return [memory["id"] for memory in body["memories"]]


async def test_memories_are_listed_last_added_first_as_a_search_shows_them(
    client: httpx.AsyncClient,
) -> None:
    await add(client, entry("m1", "The user's dog is called Rex", customMetadata={"topic": "pets"}))
    events = [
        {
            "id": "e1",
            "author": "user",
            "timestamp": 1_765_000_000,
            "content": {"role": "user", "parts": [{"text": "I moved to Lisbon in May"}]},
        }
    ]
    added = await client.post(f"{MEMORY}/events", json={"sessionId": "s1", "events": events})
    assert added.status_code == 200, added.text
    await add(client, entry("m2", "The user prefers window seats"))
    body = await page(client)
    assert ids(body) == ["m2", "e1", "m1"]
    assert body["nextPageToken"] is None
    found = (await client.get(MEMORY, params={"query": "dog Rex"})).json()["memories"]
    rex = next(memory for memory in found if memory["id"] == "m1")
    listed = body["memories"][2]
    assert listed == {k: v for k, v in rex.items() if k not in ("matchedBy", "score")}
    assert listed["customMetadata"] == {"topic": "pets"}
    assert body["memories"][1]["customMetadata"] == {"sessionId": "s1"}
    assert body["memories"][1]["content"]["parts"] == [{"text": "I moved to Lisbon in May"}]
    # An entry written again replaces the old one and is listed as just added.
    await add(client, entry("m1", "The user's dog is called Max"))
    again = await page(client)
    assert ids(again) == ["m1", "m2", "e1"]
    assert again["memories"][0]["content"]["parts"] == [{"text": "The user's dog is called Max"}]


async def test_other_users_other_apps_and_deleted_memories_are_not_listed(
    client: httpx.AsyncClient,
) -> None:
    await add(client, entry("mine", "one"), entry("gone", "two"))
    await add(client, entry("theirs", "three"), path=f"/apps/{APP}/users/bob/memory")
    await add(client, entry("elsewhere", "four"), path="/apps/other/users/ann/memory")
    assert (await client.delete(f"{MEMORY}/gone")).status_code == 204
    assert ids(await page(client)) == ["mine"]
    assert ids(await page(client, f"/apps/{APP}/users/bob/memory/entries")) == ["theirs"]
    assert ids(await page(client, "/apps/other/users/ann/memory/entries")) == ["elsewhere"]
    assert await page(client, f"/apps/{APP}/users/nobody/memory/entries") == {
        "memories": [],
        "nextPageToken": None,
    }
    assert (await client.delete(MEMORY)).status_code == 204
    assert ids(await page(client)) == []


async def test_a_walk_lists_each_memory_once_while_memories_are_added_and_deleted(
    client: httpx.AsyncClient,
) -> None:
    """Memories there throughout the walk are listed once each; one added
    during it is above the walk (the next walk lists it); one deleted before
    its page is not listed."""
    await add(client, *(entry(f"m{index:02}", f"fact number {index}") for index in range(17)))
    expected = [f"m{index:02}" for index in reversed(range(17))]
    seen: list[str] = []
    body = await page(client, pageSize=4)
    pages = 1
    while True:
        seen += ids(body)
        if body["nextPageToken"] is None:
            break
        await add(client, entry(f"new{pages}", "added during the walk"))
        if pages == 2:
            assert (await client.delete(f"{MEMORY}/m00")).status_code == 204
        body = await page(client, pageSize=4, pageToken=body["nextPageToken"])
        pages += 1
    assert seen == [memory for memory in expected if memory != "m00"]
    assert pages == 4
    assert ids(await page(client, pageSize=3)) == ["new3", "new2", "new1"]


async def test_deletes_racing_a_walk_never_repeat_lose_or_fail_a_page(
    client: httpx.AsyncClient,
) -> None:
    """Deletes of two memories in three, three at a time, run while a walk
    pages through them: the walk lists every memory never deleted exactly
    once, in order, none twice, and no page fails."""
    count = 90
    await add(client, *(entry(f"m{index:03}", f"fact number {index}") for index in range(count)))
    doomed = [f"m{index:03}" for index in range(count) if index % 3 != 1]
    pages_done = 0
    deleted_mid_walk = 0

    async def delete_all() -> None:
        nonlocal deleted_mid_walk
        for start in range(0, len(doomed), 3):
            answers = await asyncio.gather(
                *(client.delete(f"{MEMORY}/{memory}") for memory in doomed[start : start + 3])
            )
            assert {answer.status_code for answer in answers} == {204}
            deleted_mid_walk += pages_done > 0
            await asyncio.sleep(0)

    async def walk() -> list[str]:
        nonlocal pages_done
        seen: list[str] = []
        token = None
        while True:
            params: dict[str, Any] = {"pageSize": 3}
            if token is not None:
                params["pageToken"] = token
            body = await page(client, **params)
            pages_done += 1
            seen += ids(body)
            token = body["nextPageToken"]
            if token is None:
                return seen
            await asyncio.sleep(0)

    seen, _ = await asyncio.gather(walk(), delete_all())
    survivors = [f"m{index:03}" for index in reversed(range(count)) if index % 3 == 1]
    assert len(seen) == len(set(seen))
    assert [memory for memory in seen if memory not in doomed] == survivors
    assert seen == sorted(seen, reverse=True)
    # The race happened: deletes landed while the walk was under way.
    assert deleted_mid_walk > 0
    assert not set(ids(await page(client, pageSize=100))) & set(doomed)


async def test_a_page_ends_early_to_fit_one_response(database_url: str) -> None:
    settings = Settings(
        database_url=database_url,
        db_timeout_seconds=30,
        max_event_bytes=100_000,
        max_state_bytes=100_000,
        max_response_bytes=600_000,
    )
    async with asgi_client(settings) as client:
        for index in range(12):
            await add(client, entry(f"m{index:02}", f"fact {index} " + "x" * 90_000))
        first = await client.get(LISTED)
        assert first.status_code == 200
        assert len(first.content) <= 600_000
        assert 1 <= len(first.json()["memories"]) < 12
        seen, body = ids(first.json()), first.json()
        while body["nextPageToken"] is not None:
            body = await page(client, pageToken=body["nextPageToken"])
            seen += ids(body)
    assert seen == [f"m{index:02}" for index in reversed(range(12))]


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"pageSize": "0"}, 422),
        ({"pageSize": "1001"}, 422),
        ({"pageSize": "NaN"}, 422),
        ({"pageSize": str(10**40)}, 422),
        ({"pageToken": "garbage"}, 400),
        ({"pageToken": "x" * 5000}, 400),
        ({"pageToken": ""}, 400),
    ],
)
async def test_hostile_queries_are_a_4xx_problem_never_a_500(
    client: httpx.AsyncClient, params: dict[str, str], status: int
) -> None:
    await add(client, entry("m1", "one"))
    response = await client.get(LISTED, params=params)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"


def forged(position: Any, user: str = "ann") -> str:
    """A token as the server makes them (app.core.pagination) holding `position`."""
    from session_state.core.pagination import encode_token

    return encode_token("memories", (APP, user), position)


@pytest.mark.parametrize(
    "position", [[], [1, 2], ["5"], [True], [0], [-1], [2**63], [1.5], [None], [[5]]]
)
async def test_a_token_holding_anything_but_a_row_id_is_a_400(
    client: httpx.AsyncClient, position: Any
) -> None:
    response = await client.get(LISTED, params={"pageToken": forged(position)})
    assert response.status_code == 400, response.text
    assert response.json()["detail"] == "pageToken is not a valid page token"


async def test_a_token_of_another_list_is_a_400(client: httpx.AsyncClient) -> None:
    await add(client, entry("m1", "one"), entry("m2", "two"))
    token = (await page(client, pageSize=1))["nextPageToken"]
    assert token is not None
    for path in (f"/apps/{APP}/users/bob/memory/entries", f"/apps/{APP}/users/ann/sessions"):
        response = await client.get(path, params={"pageToken": token})
        assert response.status_code == 400, response.text
        assert response.json()["detail"] == "pageToken does not belong to this list"
    # A forged position below every memory is an empty page, not an error.
    assert await page(client, pageToken=forged([1])) == {"memories": [], "nextPageToken": None}
