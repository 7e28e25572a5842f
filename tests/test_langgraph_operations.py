"""A thread's batch of checkpoint operations (POST .../operations), over
HTTP on both backends: puts and put_writes applied in order as their single
routes apply them, all or none; hostile batches are 4xx and store nothing.
(End-user tokens on the route: tests/test_end_user_tokens.py; the client's
grouping: tests/client/test_langgraph_batching.py.)"""

from typing import Any

import httpx
import pytest

from tests.conftest import Clock
from tests.test_langgraph_threads import b64, checkpoint_body, thread_url

MAX_OPERATIONS = 64


def put_op(checkpoint_id: str, namespace: str = "", **extra: Any) -> dict[str, Any]:
    body = checkpoint_body({"a": f"{checkpoint_id}.1"}, {"a": checkpoint_id})
    return {"op": "put", "checkpointId": checkpoint_id, "checkpointNs": namespace, **body, **extra}


def writes_op(checkpoint_id: str, task: str, idx: int, value: Any, **extra: Any) -> dict[str, Any]:
    write = {"taskId": task, "idx": idx, "channel": "a", "type": "json", "data": b64(value)}
    return {"op": "putWrites", "checkpointId": checkpoint_id, "writes": [write], **extra}


async def apply(client: httpx.AsyncClient, body: Any, thread: str = "t1") -> httpx.Response:
    return await client.post(f"{thread_url(thread)}/operations", json=body)


async def stored(client: httpx.AsyncClient, thread: str = "t1") -> list[dict[str, Any]]:
    response = await client.get(f"{thread_url(thread)}/checkpoints")
    assert response.status_code == 200, response.text
    checkpoints: list[dict[str, Any]] = response.json()["checkpoints"]
    return checkpoints


async def test_a_batch_stores_what_its_single_requests_would_in_order(
    client: httpx.AsyncClient,
) -> None:
    operations = [
        put_op("c1"),
        writes_op("c1", "task-a", 0, "first"),
        # Special writes (negative index) replace: the later one stays.
        writes_op("c1", "task-b", -1, "error 1"),
        writes_op("c1", "task-b", -1, "error 2"),
        # Ordinary writes are kept once: the earlier one stays.
        writes_op("c1", "task-a", 0, "second"),
        put_op("c2", parentCheckpointId="c1", metadata={"source": "loop", "step": 1}),
        put_op("s1", namespace="sub:1"),
    ]
    response = await apply(client, {"operations": operations, "userId": "ada", "ttlSeconds": 60})
    assert response.status_code == 204, response.text
    found = {(c["checkpointNs"], c["checkpointId"]): c for c in await stored(client)}
    assert sorted(found) == [("", "c1"), ("", "c2"), ("sub:1", "s1")]
    assert found["", "c2"]["parentCheckpointId"] == "c1"
    assert found["", "c2"]["metadata"] == {"source": "loop", "step": 1}
    writes = {(w["taskId"], w["idx"]): w["data"] for w in found["", "c1"]["pendingWrites"]}
    assert writes == {("task-a", 0): b64("first"), ("task-b", -1): b64("error 2")}
    # The thread is recorded under the batch's user: erasing ada removes it.
    assert (await client.delete("/apps/graphs/users/ada")).status_code == 204
    assert await stored(client) == []


async def test_a_batch_with_one_bad_operation_stores_nothing(client: httpx.AsyncClient) -> None:
    assert (await apply(client, {"operations": [put_op("c0")]})).status_code == 204
    bad_data = writes_op("c1", "task-a", 0, "x")
    bad_data["writes"][0]["data"] = "not base64!"
    bad_empty = {**put_op("c3"), "checkpoint": {"type": "json", "data": None}}
    for bad, field in [(bad_data, "data"), (bad_empty, "data"), ({"op": "put"}, "checkpointId")]:
        operations = [put_op("c1"), writes_op("c0", "task-a", 0, "x"), bad, put_op("c2")]
        response = await apply(client, {"operations": operations})
        assert response.status_code == 422, response.text
        problem = response.json()
        assert any(error["loc"][:3] == ["body", "operations", 2] for error in problem["errors"])
        assert field in response.text
    [only] = await stored(client)
    assert only["checkpointId"] == "c0"
    assert only["pendingWrites"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"operations": []}, "operations"),
        ({"operations": [put_op(f"c{n}") for n in range(MAX_OPERATIONS + 1)]}, "operations"),
        ({"operations": "x"}, "operations"),
        ({}, "operations"),
        ([], "body"),
        ({"operations": [{"op": "delete", "checkpointId": "c1"}]}, "op"),
        ({"operations": [{**put_op("c1"), "op": None}]}, "op"),
        ({"operations": [put_op("x" * 129)]}, "checkpointId"),
        ({"operations": [{**put_op("c1"), "checkpointId": ""}]}, "checkpointId"),
        ({"operations": [{**put_op("c1"), "checkpointId": "c\x00"}]}, "checkpointId"),
        ({"operations": [put_op("c1", namespace="a\x00")]}, "checkpointNs"),
        ({"operations": [put_op("c1", namespace="n" * 4097)]}, "checkpointNs"),
        ({"operations": [{**writes_op("c1", "t", 0, 1), "writes": "x"}]}, "writes"),
        ({"operations": [writes_op("c1", "t", 2**31, 1)]}, "idx"),
        ({"operations": [put_op("c1")], "ttlSeconds": -1}, "ttlSeconds"),
        ({"operations": [put_op("c1")], "userId": "bad\x00"}, "userId"),
        ({"operations": [put_op("c1", userId="ada")]}, "userId"),
        ({"operations": [[]]}, "operations"),
    ],
)
async def test_hostile_batches_are_422_naming_the_field_and_store_nothing(
    client: httpx.AsyncClient, body: Any, field: str
) -> None:
    response = await apply(client, body)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert field in response.text
    assert await stored(client) == []


async def test_a_batch_within_the_bound_of_operations_is_taken(client: httpx.AsyncClient) -> None:
    operations = [writes_op("c1", f"task-{n}", 0, n) for n in range(MAX_OPERATIONS - 1)]
    response = await apply(client, {"operations": [put_op("c1"), *operations]})
    assert response.status_code == 204, response.text
    [checkpoint] = await stored(client)
    assert len(checkpoint["pendingWrites"]) == MAX_OPERATIONS - 1


async def test_a_batch_over_the_body_limit_is_413(client: httpx.AsyncClient) -> None:
    large = {"taskId": "t", "idx": 0, "channel": "a", "type": "json", "data": "A" * (8 << 20)}
    operation = {"op": "putWrites", "checkpointId": "c1", "writes": [large]}
    response = await apply(client, {"operations": [put_op("c1"), operation]})
    assert response.status_code == 413, response.text
    assert await stored(client) == []


async def test_writes_of_one_task_and_index_in_one_request_keep_one_as_the_rule_does(
    client: httpx.AsyncClient,
) -> None:
    """Special writes repeated in one body: the last (they replace);
    ordinary ones: the first (kept once). A 204 on both backends, never a 500."""
    special = writes_op("c1", "t", -1, "error 1")
    special["writes"].append({**special["writes"][0], "data": b64("error 2")})
    ordinary = writes_op("c1", "u", 0, "first")
    ordinary["writes"].append({**ordinary["writes"][0], "data": b64("second")})
    response = await apply(client, {"operations": [put_op("c1"), special, ordinary]})
    assert response.status_code == 204, response.text
    # The same writes through the single routes, on a thread of their own.
    assert (await apply(client, {"operations": [put_op("c1")]}, "t2")).status_code == 204
    for body in (special, ordinary):
        single = await client.post(
            f"{thread_url('t2')}/checkpoints/c1/writes", json={"writes": body["writes"]}
        )
        assert single.status_code == 204, single.text
    for thread in ("t1", "t2"):
        response = await client.get(f"{thread_url(thread)}/checkpoints/c1")
        writes = {(w["taskId"], w["idx"]): w["data"] for w in response.json()["pendingWrites"]}
        assert writes == {("t", -1): b64("error 2"), ("u", 0): b64("first")}, thread


async def test_a_batch_keeps_a_threads_life_as_its_single_requests_do(
    clocked_app: Any, clock: Clock
) -> None:
    """A batch to a live thread pushes its expiry out, whichever operation
    comes first; one to an expired thread makes it anew, as a put does."""
    transport = httpx.ASGITransport(app=clocked_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await apply(client, {"operations": [put_op("c1")], "ttlSeconds": 60})
        assert response.status_code == 204, response.text
        for first_writes, later in [(True, "c2"), (False, "c3")]:
            clock.advance(50)
            operations = [put_op(later), writes_op(later, "task-a", 0, later)]
            if first_writes:
                operations.reverse()
            assert (await apply(client, {"operations": operations})).status_code == 204
        clock.advance(50)
        assert [c["checkpointId"] for c in await stored(client)] == ["c3", "c2", "c1"]
        assert [w["taskId"] for c in await stored(client) for w in c["pendingWrites"]] == [
            "task-a",
            "task-a",
        ]
        clock.advance(11)
        assert await stored(client) == []
        operations = [writes_op("c4", "task-b", 0, "x"), put_op("c4")]
        assert (await apply(client, {"operations": operations})).status_code == 204
        [only] = await stored(client)
        assert only["checkpointId"] == "c4"
        assert [w["taskId"] for w in only["pendingWrites"]] == ["task-b"]


async def test_a_batch_of_one_keeps_a_threads_life_as_its_single_request_does(
    clocked_app: Any, clock: Clock
) -> None:
    """A batch of one operation is its single route's write: it pushes a
    live thread's expiry out, and makes an expired thread anew."""
    transport = httpx.ASGITransport(app=clocked_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await apply(client, {"operations": [put_op("c1")], "ttlSeconds": 60})
        assert response.status_code == 204, response.text
        for operation in [writes_op("c1", "task-a", 0, "x"), put_op("c2")]:
            clock.advance(50)
            assert (await apply(client, {"operations": [operation]})).status_code == 204
        clock.advance(50)
        assert [c["checkpointId"] for c in await stored(client)] == ["c2", "c1"]
        clock.advance(11)
        assert await stored(client) == []
        assert (await apply(client, {"operations": [put_op("c3")]})).status_code == 204
        [only] = await stored(client)
        assert (only["checkpointId"], only["pendingWrites"]) == ("c3", [])
