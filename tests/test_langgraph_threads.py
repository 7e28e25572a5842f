"""The service's rules on LangGraph's threads, over HTTP on both backends:
API keys scoped to apps, hostile input (422, never 500), values stored once
per version, prune, delete-for-runs, expiry and the sweeper, erasure and
metrics. (The conformance suite and a real graph are in tests/client.)"""

import base64
import json
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from session_state.core.config import Settings
from tests.conftest import Clock, asgi_client

APP = "graphs"


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def b64(value: Any) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


def checkpoint_body(
    versions: dict[str, str], values: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {
        "checkpoint": {"type": "json", "data": b64({"v": 4})},
        "metadata": {"source": "loop", "step": 0},
        "channelVersions": versions,
        "newValues": [
            {"channel": channel, "version": versions[channel], "type": "json", "data": b64(value)}
            for channel, value in values.items()
        ],
        **extra,
    }


def thread_url(thread: str = "t1", app: str = APP) -> str:
    return f"/apps/{app}/threads/{thread}"


async def put(
    client: httpx.AsyncClient, checkpoint_id: str, body: dict[str, Any], thread: str = "t1"
) -> httpx.Response:
    return await client.put(f"{thread_url(thread)}/checkpoints/{checkpoint_id}", json=body)


async def listed(client: httpx.AsyncClient, thread: str = "t1", **params: Any) -> list[Any]:
    response = await client.get(f"{thread_url(thread)}/checkpoints", params=params)
    assert response.status_code == 200, response.text
    checkpoints: list[Any] = response.json()["checkpoints"]
    return checkpoints


async def count_rows(database_url: str, table: str) -> int:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            result = await connection.execute(
                text(f"SELECT count(*) FROM {table} WHERE app_name = :app"), {"app": APP}
            )
            return int(result.scalar_one())
    finally:
        await engine.dispose()


async def test_a_channel_value_is_stored_once_per_version(
    client: httpx.AsyncClient, database_url: str
) -> None:
    big = "x" * 10_000
    assert (
        await put(client, "c1", checkpoint_body({"doc": "1", "n": "1"}, {"doc": big, "n": 1}))
    ).status_code == 204
    for step in range(2, 6):
        # Only "n" changes: "doc" stays at version 1 and is not sent again.
        body = checkpoint_body(
            {"doc": "1", "n": str(step)}, {"n": step}, parentCheckpointId=f"c{step - 1}"
        )
        assert (await put(client, f"c{step}", body)).status_code == 204
    assert await count_rows(database_url, "lg_channel_values") == 6
    latest = (await listed(client, limit=1))[0]
    assert latest["checkpointId"] == "c5"
    assert latest["parentCheckpointId"] == "c4"
    values = {
        value["channel"]: json.loads(base64.b64decode(value["data"]))
        for value in latest["channelValues"]
    }
    assert values == {"doc": big, "n": 5}


async def test_prune_keeps_the_latest_checkpoint_with_its_values_and_frees_the_rest(
    client: httpx.AsyncClient, database_url: str
) -> None:
    await put(client, "c1", checkpoint_body({"a": "1", "b": "1"}, {"a": "kept", "b": 1}))
    await put(
        client, "c2", checkpoint_body({"a": "1", "b": "2"}, {"b": 2}, parentCheckpointId="c1")
    )
    await put(
        client, "c3", checkpoint_body({"a": "1", "b": "3"}, {"b": 3}, parentCheckpointId="c2")
    )
    writes = {"writes": [{"taskId": "t", "idx": 0, "channel": "b", "type": "json", "data": b64(9)}]}
    for checkpoint_id in ("c2", "c3"):
        response = await client.post(
            f"{thread_url()}/checkpoints/{checkpoint_id}/writes", json=writes
        )
        assert response.status_code == 204
    response = await client.post(f"/apps/{APP}/threads/prune", json={"threadIds": ["t1"]})
    assert response.status_code == 204
    [kept] = await listed(client)
    assert kept["checkpointId"] == "c3"
    assert kept["parentCheckpointId"] is None
    assert {value["channel"] for value in kept["channelValues"]} == {"a", "b"}
    assert len(kept["pendingWrites"]) == 1
    assert await count_rows(database_url, "lg_channel_values") == 2
    assert await count_rows(database_url, "lg_writes") == 1


async def test_prune_refuses_a_delta_channel_thread_and_prunes_nothing(
    client: httpx.AsyncClient,
) -> None:
    body = checkpoint_body({"a": "1"}, {"a": 1})
    body["metadata"]["counters_since_delta_snapshot"] = {"a": [1, 1]}
    await put(client, "c1", body)
    await put(client, "c2", {**body, "parentCheckpointId": "c1"})
    response = await client.post(f"/apps/{APP}/threads/prune", json={"threadIds": ["t1"]})
    assert response.status_code == 409
    assert response.json()["code"] == "delta_channel_thread"
    assert len(await listed(client)) == 2
    response = await client.post(
        f"/apps/{APP}/threads/prune", json={"threadIds": ["t1"], "strategy": "delete"}
    )
    assert response.status_code == 204
    assert await listed(client) == []


async def test_delete_for_runs_takes_only_those_runs(client: httpx.AsyncClient) -> None:
    for index, run in enumerate(["r1", "r2", "r1"]):
        body = checkpoint_body({"a": str(index)}, {"a": index})
        body["metadata"]["run_id"] = run
        await put(client, f"c{index}", body, thread=f"t{index}")
    response = await client.post(f"/apps/{APP}/runs/delete", json={"runIds": ["r1"]})
    assert response.status_code == 204
    assert [len(await listed(client, thread=f"t{index}")) for index in range(3)] == [0, 1, 0]


async def test_list_filters_by_metadata_and_pages_newest_first(client: httpx.AsyncClient) -> None:
    for index in range(5):
        body = checkpoint_body({"a": str(index)}, {"a": index})
        body["metadata"] = {
            "source": "input" if index % 2 == 0 else "loop",
            "step": index,
            "tags": {"x": [1, 2]},
        }
        await put(client, f"c{index}", body)
    assert [c["checkpointId"] for c in await listed(client, metadata='{"source":"input"}')] == [
        "c4",
        "c2",
        "c0",
    ]
    assert [c["checkpointId"] for c in await listed(client, metadata='{"step":3.0}')] == ["c3"]
    assert len(await listed(client, metadata='{"tags":{"x":[1,2]}}')) == 5
    assert await listed(client, metadata='{"step":"3"}') == []
    seen, token = [], None
    while True:
        params = {"limit": 2, **({"pageToken": token} if token else {})}
        page = (await client.get(f"{thread_url()}/checkpoints", params=params)).json()
        seen += [c["checkpointId"] for c in page["checkpoints"]]
        token = page["nextPageToken"]
        if token is None:
            break
    assert seen == ["c4", "c3", "c2", "c1", "c0"]
    assert [c["checkpointId"] for c in await listed(client, before="c2")] == ["c1", "c0"]


# What PostgreSQL's `metadata @> filter` answers (LangGraph's PostgresSaver):
# every backend must answer the same.
CONTAINMENT_METADATA = {
    "c0": {"source": "loop", "tags": ["a", "b"], "parents": {"": "p0", "sub": "p1"}, "n": None},
    "c1": {"source": "loop", "tags": [["x", 1], {"k": 1, "j": 2}], "flag": True, "step": 1},
    "c2": {"source": "input", "tags": [], "parents": {}, "flag": False, "step": 1.5},
}
CONTAINMENT = [
    ({"source": "loop"}, ["c1", "c0"]),
    ({"tags": ["b"]}, ["c0"]),
    ({"tags": ["b", "a", "a"]}, ["c0"]),
    ({"tags": []}, ["c2", "c1", "c0"]),
    ({"tags": "a"}, []),
    ({"tags": [["x"]]}, ["c1"]),
    ({"tags": [{"k": 1}]}, ["c1"]),
    ({"tags": [{"k": 2}]}, []),
    ({"tags": [1]}, []),
    ({"parents": {"sub": "p1"}}, ["c0"]),
    ({"parents": {}}, ["c2", "c0"]),
    ({"n": None}, ["c0"]),
    ({"absent": None}, []),
    ({"flag": True}, ["c1"]),
    ({"flag": 1}, []),
    ({"step": 1.0}, ["c1"]),
    ({"step": 1.5, "source": "input"}, ["c2"]),
    ({"step": "1"}, []),
]


async def test_the_metadata_filter_is_containment_as_postgresql_has_it(
    client: httpx.AsyncClient,
) -> None:
    for checkpoint_id, metadata in CONTAINMENT_METADATA.items():
        body = checkpoint_body({"a": "1"}, {"a": 1})
        body["metadata"] = metadata
        await put(client, checkpoint_id, body)
    for filter_, expected in CONTAINMENT:
        found = await listed(client, metadata=json.dumps(filter_))
        assert [c["checkpointId"] for c in found] == expected, filter_


@pytest.mark.parametrize(
    "metadata",
    [
        json.dumps({f"k{index}": index for index in range(200)}),
        json.dumps({"tags": list(range(200))}),
        json.dumps({"deep": nested(20)}),
        '{"say \\"hi\\"": 1}',
        '{"k\\u0000": 1}',
    ],
    ids=["many-keys", "long-array", "deep", "quote", "nul"],
)
async def test_an_unbounded_metadata_filter_is_422(
    client: httpx.AsyncClient, metadata: str
) -> None:
    response = await client.get(f"{thread_url()}/checkpoints", params={"metadata": metadata})
    assert response.status_code == 422, response.text
    assert "metadata" in response.text


# Standard base64 only, padded, nothing around it: the server decodes it
# strictly (binascii's strict mode), each of these a 422 with nothing stored.
NOT_STANDARD_BASE64 = [
    "YQ",  # padding missing
    "YQ=",  # padding short
    "YQ===",  # padding too long
    "=YWJj",  # padding first
    "YQ==YQ==",  # data after the padding
    "YW Jj",  # a space
    "YWJj\n",  # a line break
    "YWJ-",  # base64url's alphabet
    "YWJ_",
    "YWJ\u0000",  # NUL
    "\u00e9\u00e9==",  # not ASCII
    "\ud800YWJj",  # a lone surrogate
]


@pytest.mark.parametrize("data", NOT_STANDARD_BASE64)
async def test_values_not_in_standard_base64_are_422_and_stored_nowhere(
    client: httpx.AsyncClient, data: str
) -> None:
    body = checkpoint_body({"a": "1"}, {"a": 1})
    body["checkpoint"] = {"type": "json", "data": "e30="}
    body["newValues"] = [{"channel": "a", "version": "1", "type": "json", "data": data}]
    raw = json.dumps(body)  # keeps \ud800 as an escape, as a client would send it
    response = await client.put(
        f"{thread_url()}/checkpoints/c1",
        content=raw,
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 422, (data, response.text)
    assert response.headers["content-type"] == "application/problem+json"
    assert await listed(client) == []


async def test_padded_base64_values_are_stored_as_their_bytes(client: httpx.AsyncClient) -> None:
    body = checkpoint_body({"a": "1", "b": "1"}, {})
    body["newValues"] = [
        {"channel": "a", "version": "1", "type": "bytes", "data": "YWI="},
        {"channel": "b", "version": "1", "type": "bytes", "data": "YWJj"},
    ]
    assert (await put(client, "c1", body)).status_code == 204
    [stored] = await listed(client)
    values = {value["channel"]: value["data"] for value in stored["channelValues"]}
    assert {channel: base64.b64decode(data) for channel, data in values.items()} == {
        "a": b"ab",
        "b": b"abc",
    }


@pytest.mark.parametrize(
    ("body_change", "field"),
    [
        ({"metadata": {"step": "NUL\u0000"}}, "metadata"),
        ({"metadata": {"deep": nested(100)}}, "metadata"),
        ({"checkpoint": {"type": "json", "data": "not base64!"}}, "checkpoint"),
        ({"checkpoint": {"type": "json", "data": None}}, "data"),
        # As an encrypted value's stored tag begins (app.langgraph.sealing).
        ({"checkpoint": {"type": "\x01ss1:json", "data": b64(1)}}, "type"),
        ({"channelVersions": []}, "channelVersions"),
        ({"userId": "x" * 129}, "userId"),
        ({"ttlSeconds": -1}, "ttlSeconds"),
    ],
)
async def test_hostile_checkpoints_are_422_naming_the_field(
    client: httpx.AsyncClient, body_change: dict[str, Any], field: str
) -> None:
    body = {**checkpoint_body({"a": "1"}, {"a": 1}), **body_change}
    response = await put(client, "c1", body)
    assert response.status_code == 422, response.text
    assert field in response.text
    assert await listed(client) == []


async def test_non_finite_metadata_and_bad_names_are_422(client: httpx.AsyncClient) -> None:
    raw = json.dumps(checkpoint_body({"a": "1"}, {"a": 1})).replace('"step": 0', '"step": 1e999')
    response = await client.put(
        f"{thread_url()}/checkpoints/c1", content=raw, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert "finite" in response.text
    for path in (thread_url("x" * 129) + "/checkpoints/c1", thread_url() + "/checkpoints/%00"):
        assert (await client.put(path, json=checkpoint_body({}, {}))).status_code == 422
    response = await client.get(f"{thread_url()}/checkpoints", params={"checkpointNs": "a\x00"})
    assert response.status_code == 422
    for metadata in ("[1]", "{", '{"a": 1e999}'):
        response = await client.get(f"{thread_url()}/checkpoints", params={"metadata": metadata})
        assert response.status_code == 422, metadata
    response = await client.get(f"{thread_url()}/checkpoints", params={"pageToken": "garbage"})
    assert response.status_code == 400


async def test_erasing_a_user_removes_their_threads_only(client: httpx.AsyncClient) -> None:
    await put(client, "c1", checkpoint_body({"a": "1"}, {"a": 1}, userId="ada"), thread="ada-1")
    await put(client, "c1", checkpoint_body({"a": "1"}, {"a": 1}, userId="bob"), thread="bob-1")
    await put(client, "c1", checkpoint_body({"a": "1"}, {"a": 1}), thread="nobody")
    assert (await client.delete(f"/apps/{APP}/users/ada")).status_code == 204
    assert await listed(client, thread="ada-1") == []
    assert len(await listed(client, thread="bob-1")) == 1
    assert (await client.delete(f"/apps/{APP}/users/langgraph")).status_code == 204
    assert await listed(client, thread="nobody") == []
    assert (await client.delete(f"/apps/{APP}?confirm={APP}")).status_code == 204
    assert await listed(client, thread="bob-1") == []


async def test_copy_thread_copies_everything_and_refuses_an_existing_target(
    client: httpx.AsyncClient,
) -> None:
    await put(client, "c1", checkpoint_body({"a": "1"}, {"a": 1}))
    await put(client, "c1", checkpoint_body({"a": "1"}, {"a": 1}), thread="taken")
    response = await client.post(f"{thread_url()}/copy", json={"targetThreadId": "t2"})
    assert response.status_code == 204
    assert await listed(client, thread="t2") == await listed(client)
    response = await client.post(f"{thread_url()}/copy", json={"targetThreadId": "taken"})
    assert response.json()["code"] == "thread_already_exists"
    response = await client.post(f"{thread_url('none')}/copy", json={"targetThreadId": "t3"})
    assert response.json()["code"] == "thread_not_found"


async def test_an_idle_thread_expires_and_the_sweeper_removes_it(
    clocked_app: Any, clock: Clock, database_url: str
) -> None:
    transport = httpx.ASGITransport(app=clocked_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        await put(client, "c1", checkpoint_body({"a": "1"}, {"a": 1}, ttlSeconds=60))
        await put(client, "c1", checkpoint_body({"a": "1"}, {"a": 1}), thread="kept")
        clock.advance(50)
        # A write pushes the expiry out; a checkpoint without ttlSeconds keeps it.
        await put(client, "c2", checkpoint_body({"a": "2"}, {"a": 2}, parentCheckpointId="c1"))
        clock.advance(50)
        assert len(await listed(client)) == 2
        clock.advance(11)
        assert await listed(client) == []
        assert await count_rows(database_url, "lg_checkpoints") == 3
        await clocked_app.state.sweeper.sweep_once()
        assert await count_rows(database_url, "lg_checkpoints") == 1
        assert await count_rows(database_url, "lg_threads") == 1
        assert len(await listed(client, thread="kept")) == 1


async def test_api_keys_are_scoped_to_apps(settings: Settings) -> None:
    keyed = settings.model_copy(
        update={"api_keys": {"graphs-key-0123456789": [APP], "other-key-0123456789": ["other"]}}
    )
    async with asgi_client(keyed) as client:
        body = checkpoint_body({"a": "1"}, {"a": 1})
        response = await put(client, "c1", body)
        assert response.status_code == 401
        client.headers["Authorization"] = "Bearer other-key-0123456789"
        assert (await put(client, "c1", body)).status_code == 403
        assert (
            await client.post(f"/apps/{APP}/threads/prune", json={"threadIds": ["t1"]})
        ).status_code == 403
        client.headers["Authorization"] = "Bearer graphs-key-0123456789"
        assert (await put(client, "c1", body)).status_code == 204
        assert len(await listed(client)) == 1


async def test_metrics_count_checkpoints_writes_and_removed_threads(
    client: httpx.AsyncClient,
) -> None:
    def value(metrics: str, name: str) -> float:
        lines = [line for line in metrics.splitlines() if line.startswith(name + " ")]
        return float(lines[0].split()[1]) if lines else 0.0

    before = (await client.get("/metrics")).text
    await put(client, "c1", checkpoint_body({"a": "1", "b": "1"}, {"a": 1, "b": 2}))
    await client.delete(thread_url())
    after = (await client.get("/metrics")).text
    assert (
        value(after, "session_state_checkpoints_stored_total")
        - value(before, "session_state_checkpoints_stored_total")
        == 1
    )
    assert (
        value(after, "session_state_checkpoint_values_total")
        - value(before, "session_state_checkpoint_values_total")
        == 2
    )
    removed = 'session_state_threads_removed_total{how="deleted"}'
    assert value(after, removed) - value(before, removed) == 1


async def test_pending_writes_come_in_langgraph_order_task_path_task_id_index(
    client: httpx.AsyncClient,
) -> None:
    """LangGraph applies a checkpoint's writes sorted by (task path, task id,
    index): tasks written in another order than their ids', two of them of
    the same path, each with several indexes, come back in that order."""
    assert (await put(client, "c1", checkpoint_body({"a": "1"}, {"a": 0}))).status_code == 204
    # (task id, task path), in the order their writes are sent.
    tasks = [("t-c", "~0"), ("t-a", "~1"), ("t-b", "~1"), ("t-0", "~1"), ("t-z", "~0")]
    for task_id, task_path in tasks:
        writes = [
            {
                "taskId": task_id,
                "taskPath": task_path,
                "idx": idx,
                "channel": "a",
                "type": "json",
                "data": b64(f"{task_id}/{idx}"),
            }
            for idx in (1, 0, 2)
        ]
        answer = await client.post(f"{thread_url()}/checkpoints/c1/writes", json={"writes": writes})
        assert answer.status_code == 204, answer.text
    [checkpoint] = await listed(client)
    got = [
        (write["taskPath"], write["taskId"], write["idx"]) for write in checkpoint["pendingWrites"]
    ]
    wanted = sorted((task_path, task_id, idx) for task_id, task_path in tasks for idx in (0, 1, 2))
    assert got == wanted
    assert [json.loads(base64.b64decode(w["data"])) for w in checkpoint["pendingWrites"]] == [
        f"{task_id}/{idx}" for _, task_id, idx in wanted
    ]
