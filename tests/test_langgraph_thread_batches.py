"""Several threads' batches in one request (POST /apps/{app}/thread-operations),
over HTTP on both backends: each batch stored or refused exactly as its
thread's own batch route would, with its own result; a wrapper the server
cannot read is refused whole and nothing is written. (End-user tokens on
the route: tests/test_end_user_tokens.py; the client's gathering:
tests/client/test_langgraph_batching.py.)"""

import asyncio
import json
from typing import Any

import httpx

from tests.test_langgraph_operations import put_op, stored, writes_op
from tests.test_langgraph_threads import nested

URL = "/apps/graphs/thread-operations"
MAX_BATCHES = 100


def batch(thread_id: str, *operations: dict[str, Any], **owner: Any) -> dict[str, Any]:
    return {"threadId": thread_id, "operations": list(operations), **owner}


async def send(client: httpx.AsyncClient, *batches: dict[str, Any]) -> list[dict[str, Any]]:
    response = await client.post(URL, json={"threads": list(batches)})
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    assert len(results) == len(batches)
    return results


async def ids(client: httpx.AsyncClient, thread_id: str) -> list[str]:
    return sorted(checkpoint["checkpointId"] for checkpoint in await stored(client, thread_id))


async def test_each_threads_batch_is_stored_as_its_own_route_would_store_it(
    client: httpx.AsyncClient,
) -> None:
    results = await send(
        client,
        batch("t1", put_op("c1"), writes_op("c1", "task-a", 0, "first"), userId="ada"),
        batch("t2", put_op("d1"), ttlSeconds=60),
        # A thread given twice: its batches run in the order given.
        batch("t1", writes_op("c1", "task-a", 0, "second"), put_op("c2", parentCheckpointId="c1")),
    )
    assert results == [{"status": 204}] * 3
    assert await ids(client, "t1") == ["c1", "c2"]
    assert await ids(client, "t2") == ["d1"]
    [c1] = [c for c in await stored(client, "t1") if c["checkpointId"] == "c1"]
    # Ordinary writes are kept once: the first batch's stays.
    assert [w["idx"] for w in c1["pendingWrites"]] == [0]
    listed = (await client.get("/apps/graphs/threads")).json()["threads"]
    threads = {thread["threadId"]: thread for thread in listed}
    assert (threads["t1"]["userId"], threads["t1"]["expireTime"]) == ("ada", None)
    assert (threads["t2"]["userId"], threads["t2"]["expireTime"] is None) == ("langgraph", False)
    # t1 was recorded under its first batch's user: erasing ada removes it, not t2.
    assert (await client.delete("/apps/graphs/users/ada")).status_code == 204
    assert await ids(client, "t1") == []
    assert await ids(client, "t2") == ["d1"]


async def test_one_threads_refused_batch_is_its_own_answer_and_stores_nothing(
    client: httpx.AsyncClient,
) -> None:
    empty_data = {**put_op("c9"), "checkpoint": {"type": "json", "data": None}}
    results = await send(
        client,
        batch("good", put_op("g1")),
        batch("bad", put_op("b1"), empty_data),
        batch("also-good", put_op("a1")),
    )
    assert [result["status"] for result in results] == [204, 422, 204]
    problem = results[1]["problem"]
    assert problem["code"] == "validation_error"
    # Located as in the thread's own batch's body.
    assert [error["loc"][:3] for error in problem["errors"]] == [["body", "operations", 1]]
    assert "problem" not in results[0]
    assert await ids(client, "good") == ["g1"]
    assert await ids(client, "also-good") == ["a1"]
    assert await ids(client, "bad") == []


async def test_a_wrapper_the_server_cannot_read_is_refused_whole_and_stores_nothing(
    client: httpx.AsyncClient,
) -> None:
    good = batch("t1", put_op("c1"))
    bad_base64 = writes_op("c1", "task-a", 0, "x")
    bad_base64["writes"][0]["data"] = "not base64!"
    refused: list[tuple[Any, int, list[Any]]] = [
        (b"{not json", 400, []),
        ([], 422, ["body"]),
        ({}, 422, ["body", "threads"]),
        ({"threads": []}, 422, ["body", "threads"]),
        ({"threads": [good] * (MAX_BATCHES + 1)}, 422, ["body", "threads"]),
        ({"threads": [good, {"operations": [put_op("c2")]}]}, 422, ["body", "threads", 1]),
        ({"threads": [good, batch("x" * 129, put_op("c2"))]}, 422, ["body", "threads", 1]),
        ({"threads": [good, batch("t\u0000", put_op("c2"))]}, 422, ["body", "threads", 1]),
        ({"threads": [good, batch("t2")]}, 422, ["body", "threads", 1]),
        ({"threads": [good, batch("t2", bad_base64)]}, 422, ["body", "threads", 1]),
        ({"threads": [good, {**batch("t2", put_op("c2")), "extra": 1}]}, 422, ["body", "threads"]),
        ({"threads": [good], "userId": "ada"}, 422, ["body"]),
    ]
    for body, status, loc in refused:
        content = body if isinstance(body, bytes) else None
        response = await client.post(
            URL, content=content, json=None if content is not None else body
        )
        assert response.status_code == status, (body, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        if loc:
            found = [error["loc"][: len(loc)] for error in response.json()["errors"]]
            assert loc in found, (body, found)
    assert await ids(client, "t1") == []
    assert (await client.get("/apps/graphs/threads")).json()["threads"] == []


async def test_the_most_batches_a_request_may_carry_are_taken(client: httpx.AsyncClient) -> None:
    results = await send(client, *(batch(f"t{n}", put_op("c1")) for n in range(MAX_BATCHES)))
    assert results == [{"status": 204}] * MAX_BATCHES
    assert await ids(client, f"t{MAX_BATCHES - 1}") == ["c1"]


async def test_concurrent_requests_of_many_threads_lose_no_write(
    client: httpx.AsyncClient,
) -> None:
    """Requests racing on the same threads, each carrying a step of every
    thread: every checkpoint and every write of every request is stored."""
    threads, requests = 8, 6

    async def one(request: int) -> None:
        batches = [
            batch(
                f"t{thread}",
                put_op(f"c{request}"),
                writes_op(f"c{request}", f"task-{request}", 0, request),
            )
            for thread in range(threads)
        ]
        assert await send(client, *batches) == [{"status": 204}] * threads

    await asyncio.gather(*(one(request) for request in range(requests)))
    for thread in range(threads):
        found = await stored(client, f"t{thread}")
        assert sorted(c["checkpointId"] for c in found) == sorted(
            f"c{request}" for request in range(requests)
        )
        assert all(len(c["pendingWrites"]) == 1 for c in found)


async def test_a_request_over_the_body_limit_is_413_and_stores_nothing(
    client: httpx.AsyncClient,
) -> None:
    big = writes_op("c1", "task-a", 0, "x" * (9 * 1024 * 1024))
    response = await client.post(URL, json={"threads": [batch("t1", put_op("c1"), big)]})
    assert response.status_code == 413, response.text
    assert await ids(client, "t1") == []


async def test_hostile_values_in_a_threads_batch_are_422_and_never_a_500(
    client: httpx.AsyncClient,
) -> None:
    """Each as its thread's own route refuses it (tests/test_langgraph_threads.py):
    no TTL of zero or less, past a century or infinite; no metadata
    nested past the limit, no NUL, no lone surrogate in a name or a value."""
    good = json.dumps(batch("good", put_op("g1")))
    deep_metadata = {**put_op("c2"), "metadata": {"deep": nested(100)}}
    hostile = [
        json.dumps(batch("t2", put_op("c2"), ttlSeconds=-1)),
        json.dumps(batch("t2", put_op("c2"))).replace(
            '"threadId"', '"ttlSeconds": 1e999, "threadId"'
        ),
        json.dumps(batch("t2", put_op("c2"), ttlSeconds=10**30)),
        json.dumps(batch("t2", deep_metadata)),
        json.dumps(batch("t2", {**put_op("c2"), "metadata": {"step": "NUL\u0000"}})),
        json.dumps(batch("t2", put_op("c2"))).replace('"t2"', '"t\\ud800"'),
        json.dumps(batch("t2", {**put_op("c2"), "metadata": {"K": "V"}})).replace(
            '"K"', '"\\ud800"'
        ),
        json.dumps(batch("t2", {**put_op("c2"), "metadata": {"K": "V"}})).replace(
            '"V"', '"\\udfff"'
        ),
        json.dumps(batch("t2", put_op("c2"), userId="x" * 129)),
    ]
    for entry in hostile:
        response = await client.post(
            URL,
            content=f'{{"threads": [{good}, {entry}]}}',
            headers={"Content-Type": "application/json"},
        )
        # The wrapper's schema refuses it: the whole request, nothing written.
        assert response.status_code == 422, (entry, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        found = [error["loc"][:3] for error in response.json()["errors"]]
        assert found == [["body", "threads", 1]], (entry, found)
    assert await ids(client, "good") == []
    assert await ids(client, "t2") == []
