"""An app's list of LangGraph threads (GET /apps/{app}/threads), over HTTP on
both backends: latest write first by the server's clock, one user's with
userId, expired threads left out, keyset pages that neither lose nor repeat
a thread while threads are written between them, API keys scoped to apps,
and hostile queries a 4xx, never a 500. (End-user tokens:
tests/test_end_user_tokens.py.)"""

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from session_state.core.config import Settings
from tests.conftest import Clock, asgi_client

APP = "graphs"
THREADS = f"/apps/{APP}/threads"


@pytest.fixture
async def http(clocked_app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=clocked_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


def checkpoint(**extra: Any) -> dict[str, Any]:
    return {
        "checkpoint": {"type": "json", "data": base64.b64encode(b'{"v": 4}').decode()},
        "metadata": {"source": "loop", "step": 0},
        "channelVersions": {},
        **extra,
    }


async def put(
    client: httpx.AsyncClient, thread: str, checkpoint_id: str = "c1", app: str = APP, **extra: Any
) -> None:
    response = await client.put(
        f"/apps/{app}/threads/{thread}/checkpoints/{checkpoint_id}", json=checkpoint(**extra)
    )
    assert response.status_code == 204, response.text


async def write(client: httpx.AsyncClient, thread: str, checkpoint_id: str = "c1") -> None:
    body = {"writes": [{"taskId": "t", "idx": 0, "channel": "a", "type": "json", "data": "MQ=="}]}
    response = await client.post(
        f"{THREADS}/{thread}/checkpoints/{checkpoint_id}/writes", json=body
    )
    assert response.status_code == 204, response.text


async def page(client: httpx.AsyncClient, path: str = THREADS, **params: Any) -> dict[str, Any]:
    response = await client.get(path, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def ids(client: httpx.AsyncClient, **params: Any) -> list[str]:
    return [thread["threadId"] for thread in (await page(client, **params))["threads"]]


async def test_threads_are_listed_latest_write_first_with_their_user_times_and_latest_checkpoint(
    http: httpx.AsyncClient, clock: Clock
) -> None:
    start = clock.now
    await put(http, "t1", userId="ada")
    clock.advance(10)
    await put(http, "t2", ttlSeconds=3600)
    clock.advance(10)
    await put(http, "t3", userId="bo")
    assert await ids(http) == ["t3", "t2", "t1"]
    # A checkpoint moves t1 first, then a pending write alone moves t2 first.
    clock.advance(10)
    await put(http, "t1", "c2", parentCheckpointId="c1")
    assert await ids(http) == ["t1", "t3", "t2"]
    clock.advance(10)
    await write(http, "t2")
    listed = (await page(http))["threads"]
    assert [thread["threadId"] for thread in listed] == ["t2", "t1", "t3"]
    t2, t1, _ = listed
    assert t1 == {
        "threadId": "t1",
        "userId": "ada",
        "createTime": start,
        "lastUpdateTime": start + 30,
        "expireTime": None,
        "latestCheckpointId": "c2",
    }
    assert t2["userId"] == "langgraph"
    assert (t2["createTime"], t2["lastUpdateTime"]) == (start + 10, start + 40)
    assert t2["expireTime"] == start + 40 + 3600


async def test_latest_checkpoint_is_the_root_graphs_and_null_without_one(
    http: httpx.AsyncClient,
) -> None:
    await put(http, "t1", "c1")
    response = await http.put(f"{THREADS}/t1/checkpoints/c9?checkpointNs=inner", json=checkpoint())
    assert response.status_code == 204
    # c9, a subgraph's, is newer by id than c1 but not the root graph's.
    assert (await page(http))["threads"][0]["latestCheckpointId"] == "c1"
    # A thread whose checkpoints were all deleted with their run is listed without one.
    await put(http, "t3", "c1", metadata={"run_id": "r1"})
    await http.post(f"/apps/{APP}/runs/delete", json={"runIds": ["r1"]})
    assert (await page(http))["threads"][0]["latestCheckpointId"] is None


async def test_userid_lists_one_users_threads(http: httpx.AsyncClient, clock: Clock) -> None:
    for index, user in enumerate(["ada", "bo", "ada", "bo", "ada"]):
        clock.advance(1)
        await put(http, f"t{index}", userId=user)
    assert await ids(http, userId="ada") == ["t4", "t2", "t0"]
    assert await ids(http, userId="bo") == ["t3", "t1"]
    assert await ids(http, userId="cy") == []
    first = await page(http, userId="ada", pageSize=2)
    assert [thread["threadId"] for thread in first["threads"]] == ["t4", "t2"]
    rest = await page(http, userId="ada", pageSize=2, pageToken=first["nextPageToken"])
    assert [thread["threadId"] for thread in rest["threads"]] == ["t0"]
    assert rest["nextPageToken"] is None


async def test_an_expired_thread_is_not_listed_and_a_deleted_one_is_gone(
    http: httpx.AsyncClient, clock: Clock
) -> None:
    await put(http, "short", ttlSeconds=60)
    await put(http, "long", ttlSeconds=600)
    await put(http, "gone")
    assert sorted(await ids(http)) == ["gone", "long", "short"]
    assert (await http.delete(f"{THREADS}/gone")).status_code == 204
    clock.advance(60)
    assert await ids(http) == ["long"]
    assert await ids(http, userId="langgraph") == ["long"]


async def test_a_walk_lists_every_thread_once_while_threads_are_written_between_pages(
    http: httpx.AsyncClient, clock: Clock
) -> None:
    """Threads not written during the walk are listed exactly once; a thread
    written during it at most once: a write moves it first, never behind a
    page already passed, even when the writing server's clock is behind
    (its stamp never moves back)."""
    for index in range(23):
        clock.advance(1)
        await put(http, f"t{index:02}")
    seen: list[str] = []
    written: set[str] = set()
    body = await page(http, pageSize=4)
    while True:
        seen.extend(thread["threadId"] for thread in body["threads"])
        if body["nextPageToken"] is None:
            break
        # Between pages: a listed thread and one not listed yet are written,
        # a listed one by a server whose clock is an hour behind, and a new
        # thread is made.
        clock.advance(1)
        await put(http, seen[0], f"c{len(seen)}")
        not_yet = next(f"t{index:02}" for index in range(23) if f"t{index:02}" not in seen)
        await write(http, not_yet)
        written.update({seen[0], not_yet})
        clock.advance(-3600)
        await put(http, seen[-1], f"c{len(seen)}")
        clock.advance(3600)
        await put(http, f"new{len(seen)}")
        body = await page(http, pageSize=4, pageToken=body["nextPageToken"])
    assert len(seen) == len(set(seen)), seen
    unwritten = {f"t{index:02}" for index in range(23)} - written
    assert unwritten <= set(seen)
    assert len(unwritten) > 10  # the scenario left most threads alone
    assert len(body["threads"]) >= 1


async def test_an_app_lists_only_its_own_threads(http: httpx.AsyncClient) -> None:
    await put(http, "t1")
    await put(http, "t2", app="other")
    assert await ids(http) == ["t1"]
    assert [t["threadId"] for t in (await page(http, "/apps/other/threads"))["threads"]] == ["t2"]
    assert (await page(http, "/apps/empty/threads")) == {"threads": [], "nextPageToken": None}


async def test_api_keys_list_only_the_apps_they_may_use(settings: Settings) -> None:
    keyed = settings.model_copy(
        update={"api_keys": {"graphs-key-0123456789": [APP], "other-key-0123456789": ["other"]}}
    )
    async with asgi_client(keyed) as client:
        graphs = {"Authorization": "Bearer graphs-key-0123456789"}
        other = {"Authorization": "Bearer other-key-0123456789"}
        response = await client.put(
            f"{THREADS}/t1/checkpoints/c1", json=checkpoint(), headers=graphs
        )
        assert response.status_code == 204
        listed = await client.get(THREADS, headers=graphs)
        assert [thread["threadId"] for thread in listed.json()["threads"]] == ["t1"]
        refused = await client.get(THREADS, headers=other)
        assert refused.status_code == 403
        assert refused.headers["content-type"] == "application/problem+json"
        assert (await client.get(THREADS)).status_code == 401
        assert (await client.get("/apps/other/threads", headers=other)).json()["threads"] == []


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"pageSize": "0"}, 422),
        ({"pageSize": "1001"}, 422),
        ({"pageSize": "-1"}, 422),
        ({"pageSize": str(10**40)}, 422),
        ({"pageSize": "1e3"}, 422),
        ({"pageSize": "NaN"}, 422),
        ({"userId": "a\x00b"}, 422),
        ({"userId": "x" * 129}, 422),
        ({"userId": ""}, 422),
        ({"pageToken": "garbage"}, 400),
        ({"pageToken": "!!!"}, 400),
        ({"pageToken": "x" * 5000}, 400),
        ({"pageToken": ""}, 400),
    ],
)
async def test_hostile_queries_are_a_4xx_problem_never_a_500(
    http: httpx.AsyncClient, params: dict[str, str], status: int
) -> None:
    await put(http, "t1")
    response = await http.get(THREADS, params=params)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"


def forged(position: Any, user: str = "") -> str:
    """A token as the server makes them (app.core.pagination) holding `position`."""
    from session_state.core.pagination import encode_token

    return encode_token("threads", (APP, user), position)


@pytest.mark.parametrize(
    "position",
    [
        [],
        [1.0],
        ["1", "t1"],
        [1e308 * 10, "t1"],  # inf
        [True, "t1"],
        [1.0, ""],
        [1.0, "a\x00"],
        [1.0, "x" * 129],
        [1.0, ["t1"]],
        [1.0, "t1", "extra"],
    ],
)
async def test_a_token_holding_anything_but_a_time_and_a_thread_id_is_a_400(
    http: httpx.AsyncClient, position: Any
) -> None:
    response = await http.get(THREADS, params={"pageToken": forged(position)})
    assert response.status_code == 400, response.text
    assert response.json()["detail"] == "pageToken is not a valid page token"


async def test_a_token_of_another_list_is_a_400(http: httpx.AsyncClient, clock: Clock) -> None:
    for index in range(3):
        clock.advance(1)
        await put(http, f"t{index}", userId="ada")
    token = (await page(http, pageSize=1))["nextPageToken"]
    assert token is not None
    for path, params in [
        (THREADS, {"userId": "ada"}),
        ("/apps/other/threads", {}),
        (f"/apps/{APP}/sessions", {}),
    ]:
        response = await http.get(path, params={**params, "pageToken": token})
        assert response.status_code == 400, response.text
        assert response.json()["detail"] == "pageToken does not belong to this list"
    # A forged position past every thread is an empty page, not an error.
    empty = await http.get(THREADS, params={"pageToken": forged([-1e300, "a"])})
    assert empty.json() == {"threads": [], "nextPageToken": None}
    assert json.loads(base64.urlsafe_b64decode(token + "==="))["k"] == "threads"
