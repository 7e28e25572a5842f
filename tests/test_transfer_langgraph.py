"""`export` and `import` carry LangGraph's threads (checkpoints, channel
values as bytes, pending writes) and its store's items between SQLite and
PostgreSQL, both ways: read back through the API they are equal; an import
run twice adds nothing; the same thread or item stored with other content
is a conflict, reported and left alone; `--app` keeps one app's."""

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import migrate
from tests.test_transfer import api, dump_lines, export, import_, sqlite_url

APPS = ("graphs", "helpers")
# Bytes that are not UTF-8: LangGraph's msgpack is any bytes.
RAW = bytes(range(256))


@pytest.fixture
def empty_postgresql(fresh_postgres_url: str) -> str:
    migrate(fresh_postgres_url)
    return fresh_postgres_url


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def checkpoint(
    versions: dict[str, str], values: dict[str, bytes], parent: str | None, step: int
) -> dict[str, Any]:
    return {
        "userId": "ada",
        "parentCheckpointId": parent,
        "checkpoint": {"type": "msgpack", "data": b64(RAW + bytes([step]))},
        "metadata": {"source": "loop", "step": step, "run_id": f"run-{step}", "f": 1.5},
        "channelVersions": versions,
        "newValues": [
            {"channel": channel, "version": versions[channel], "type": "msgpack", "data": b64(v)}
            for channel, v in values.items()
        ],
    }


async def put_thread(http: httpx.AsyncClient, app: str, thread: str, tag: bytes = b"") -> None:
    base = f"/apps/{app}/threads/{thread}/checkpoints"
    steps = [
        ("c1", None, {"messages": "1"}, {"messages": RAW + tag}),
        ("c2", "c1", {"messages": "2", "topic": "1"}, {"messages": b"second", "topic": b"\x00"}),
    ]
    for step, (checkpoint_id, parent, versions, values) in enumerate(steps):
        body = checkpoint(versions, values, parent, step)
        assert (await http.put(f"{base}/{checkpoint_id}", json=body)).status_code == 204
    # A subgraph's namespace, and pending writes of the latest checkpoint.
    sub = checkpoint({"inner": "1"}, {"inner": b"x"}, None, 0)
    answer = await http.put(f"{base}/s1", params={"checkpointNs": "child:task-1"}, json=sub)
    assert answer.status_code == 204
    writes = {
        "userId": "ada",
        "writes": [
            {
                "taskId": "task-1",
                "taskPath": "~",
                "idx": 0,
                "channel": "messages",
                "type": "msgpack",
                "data": b64(RAW),
            },
            {
                "taskId": "task-1",
                "taskPath": "~",
                "idx": -1,
                "channel": "__error__",
                "type": "json",
                "data": b64(b'"boom"'),
            },
        ],
    }
    assert (await http.post(f"{base}/c2/writes", json=writes)).status_code == 204


def put_item(namespace: list[str], key: str, value: Any, ttl: float | None = None) -> Any:
    return {"op": "put", "namespace": namespace, "key": key, "value": value, "ttlSeconds": ttl}


async def fill(http: httpx.AsyncClient) -> None:
    for app in APPS:
        await put_thread(http, app, "t1")
        ops = [
            put_item(["ada", "notes"], "n1", {"text": "aisle", "n": 2**40, "f": 1.0}),
            put_item(["ada", "notes"], "n2", {"nested": [1, None, {"é": True}]}, ttl=3600),
            put_item(["bob"], "b", {"v": 1}),
        ]
        answer = await http.post(f"/apps/{app}/store/batch", json={"ops": ops})
        assert answer.status_code == 200, answer.text
    await put_thread(http, "graphs", "t2")


async def seen(http: httpx.AsyncClient) -> dict[str, Any]:
    """What LangGraph's savers read: list and get_tuple of every thread,
    and every store item (not refreshing their TTL). Channel values by
    channel: a saver makes a dict of them, and JSONB orders a checkpoint's
    channel versions its own way."""
    found: dict[str, Any] = {}
    for app in APPS:
        for thread in ("t1", "t2"):
            base = f"/apps/{app}/threads/{thread}/checkpoints"
            listed = (await http.get(base)).json()["checkpoints"]
            for entry in listed:
                entry["channelValues"].sort(key=lambda value: value["channel"])
            found[f"{app}/{thread}"] = listed
            for entry in listed:
                one = await http.get(
                    f"{base}/{entry['checkpointId']}",
                    params={"checkpointNs": entry["checkpointNs"]},
                )
                assert one.status_code == 200
                one_json = one.json()
                one_json["channelValues"].sort(key=lambda value: value["channel"])
                found[f"{app}/{thread}/{entry['checkpointNs']}/{entry['checkpointId']}"] = one_json
        search = {"op": "search", "namespacePrefix": [], "limit": 100, "refreshTtl": False}
        answer = await http.post(f"/apps/{app}/store/batch", json={"ops": [search]})
        found[f"{app}/store"] = answer.json()["results"]
    return found


@pytest.mark.parametrize("direction", ["sqlite-to-postgresql", "postgresql-to-sqlite"])
async def test_threads_and_store_items_move_to_the_other_backend(
    direction: str, tmp_path: Path, empty_postgresql: str
) -> None:
    sqlite = sqlite_url(tmp_path, "a.db")
    source, target = (
        (sqlite, empty_postgresql)
        if direction == "sqlite-to-postgresql"
        else (empty_postgresql, sqlite)
    )
    async with api(source) as http:
        await fill(http)
        before = await seen(http)
    assert before["graphs/t1"] and len(before["graphs/store"][0]) == 3
    export(source, tmp_path / "dump.jsonl")
    code, summary, stderr = import_(target, tmp_path / "dump.jsonl")
    assert code == 0, stderr
    assert summary["threads"] == {"added": 3, "skipped": 0, "conflicts": 0}
    assert summary["storeItems"] == {"added": 6, "skipped": 0, "conflicts": 0}
    async with api(target) as http:
        assert await seen(http) == before
    export(target, tmp_path / "again.jsonl")
    assert dump_lines(tmp_path / "again.jsonl") == dump_lines(tmp_path / "dump.jsonl")
    # Twice: nothing added.
    code, summary, stderr = import_(target, tmp_path / "dump.jsonl")
    assert code == 0, stderr
    assert summary["threads"] == {"added": 0, "skipped": 3, "conflicts": 0}
    assert summary["storeItems"] == {"added": 0, "skipped": 6, "conflicts": 0}


async def test_other_content_under_the_same_keys_is_a_conflict_left_alone(
    database_url: str, tmp_path: Path
) -> None:
    source = sqlite_url(tmp_path, "source.db")
    async with api(source) as http:
        await fill(http)
    export(source, tmp_path / "dump.jsonl")
    async with api(database_url) as http:
        # The same thread and item, other bytes and value, before the import.
        await put_thread(http, "graphs", "t1", tag=b"other")
        ops = [put_item(["ada", "notes"], "n1", {"text": "window"})]
        assert (await http.post("/apps/graphs/store/batch", json={"ops": ops})).status_code == 200
        mine = await seen(http)
    code, summary, stderr = import_(database_url, tmp_path / "dump.jsonl")
    assert code == 1 and "conflict" in stderr
    assert summary["threads"] == {"added": 2, "skipped": 0, "conflicts": 1}
    assert summary["storeItems"] == {"added": 5, "skipped": 0, "conflicts": 1}
    assert any("'t1'" in text and "graphs" in text for text in summary["conflicts"])
    async with api(database_url) as http:
        after = await seen(http)
    assert after["graphs/t1"] == mine["graphs/t1"]
    [items] = after["graphs/store"]
    assert {item["key"]: item["value"] for item in items}["n1"] == {"text": "window"}


async def test_export_of_one_app_holds_its_threads_and_items_only(
    database_url: str, tmp_path: Path
) -> None:
    async with api(database_url) as http:
        await fill(http)
    export(database_url, tmp_path / "graphs.jsonl", "--app", "graphs")
    lines = dump_lines(tmp_path / "graphs.jsonl")
    threads = [line for line in lines if line["kind"] == "thread"]
    items = [line for line in lines if line["kind"] == "storeItem"]
    assert sorted(line["id"] for line in threads) == ["t1", "t2"]
    assert {line["app"] for line in threads + items} == {"graphs"} and len(items) == 3
    assert lines[-1]["counts"]["threads"] == 2 and lines[-1]["counts"]["storeItems"] == 3
    export(database_url, tmp_path / "ada.jsonl", "--user", "bob")
    bob = [line for line in dump_lines(tmp_path / "ada.jsonl") if line["kind"] == "storeItem"]
    assert {tuple(line["namespace"]) for line in bob} == {("bob",)}
