"""The async SessionStateSaver's group commit, against a started server on
each backend: a thread's puts and put_writes made while one of its requests
is in flight go together in one request (POST .../operations), in the order
they were made; each call returns once its batch is stored and raises its
batch's error; two processes writing one thread lose nothing; a server
without the batch route gets each call alone."""

import asyncio
import contextlib
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
from langgraph.checkpoint.base import WRITES_IDX_MAP, Checkpoint, empty_checkpoint

from session_state_client import NotFoundError, ValidationError
from session_state_client.langgraph import SessionStateSaver
from tests.client.langgraph_proxy import problem_response, proxy_before
from tests.conftest import ServerProcess

ERROR = "__error__"
assert WRITES_IDX_MAP[ERROR] < 0  # a special write: a later one replaces it


def _counted(saver: SessionStateSaver) -> list[tuple[str, str]]:
    """The requests the saver's async transport sends, as (method, path)."""
    sent: list[tuple[str, str]] = []
    transport = saver._server._async
    send = transport.send

    async def counting(method: str, path: str, *rest: Any) -> Any:
        sent.append((method, path))
        return await send(method, path, *rest)

    transport.send = counting  # type: ignore[method-assign]  # a hook on our transport
    return sent


def _checkpoint(value: int) -> Checkpoint:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"count": value}
    checkpoint["channel_versions"] = {"count": f"{value:012}.0"}
    return checkpoint


def _config(thread_id: str, checkpoint_id: str | None = None) -> Any:
    configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


async def _step(saver: SessionStateSaver, thread_id: str, tasks: int, label: str) -> list[Any]:
    """A superstep on the thread's latest checkpoint (the thread's first
    when it has none)."""
    latest = await saver.aget_tuple(_config(thread_id))
    if latest is None:
        first = _checkpoint(0)
        parent = await saver.aput(_config(thread_id), first, {"source": "input"}, {})
    else:
        parent = latest.config
    return await _step_from(saver, parent, tasks, label)


async def test_a_threads_concurrent_writes_go_in_fewer_requests_in_order(
    server: ServerProcess,
) -> None:
    app_name = f"lgb-{uuid.uuid4().hex[:8]}"
    async with SessionStateSaver(server.base_url, app_name=app_name) as saver:
        first = await saver.aput(_config("t"), _checkpoint(0), {"source": "input"}, {})
        sent = _counted(saver)
        results = await _step_from(saver, first, tasks=20)
        calls = 20 + 5 + 1
        assert len(sent) < calls / 4, sent
        assert sent[0][1].endswith("/writes")  # the first call went alone
        assert any(path.endswith("/operations") for _, path in sent[1:])
        stored = await saver.aget_tuple(first)
        assert stored is not None
        writes = {(task, channel): value for task, channel, value in stored.pending_writes}
        assert {task for task, _ in writes} == {f"task-{n}" for n in range(20)} | {"failing"}
        # Special writes replace: the last of them, as made, is the one kept.
        assert writes["failing", ERROR] == "error-4"
        latest = await saver.aget_tuple(_config("t"))
        assert latest is not None
        assert latest.checkpoint["id"] == results[-1]["configurable"]["checkpoint_id"]
        assert latest.parent_config == first
        # Nothing is left queued: the next call goes alone.
        sent.clear()
        await saver.aput_writes(latest.config, [("count", 2)], task_id="after")
        assert [path.rsplit("/", 1)[-1] for _, path in sent] == ["writes"]


async def _step_from(
    saver: SessionStateSaver, parent: Any, tasks: int, label: str = ""
) -> list[Any]:
    """A superstep's calls as LangGraph makes them in the background, all at
    once: each task's writes, a run of special writes of one task, then the
    next checkpoint; returns what each call returned."""
    calls: list[Awaitable[Any]] = [
        saver.aput_writes(parent, [("count", f"{label}{n}")], task_id=f"{label}task-{n}")
        for n in range(tasks)
    ]
    calls += [
        saver.aput_writes(parent, [(ERROR, f"{label}error-{n}")], task_id=f"{label}failing")
        for n in range(5)
    ]
    calls.append(saver.aput(parent, _checkpoint(1), {"source": "loop", "step": 0}, {"count": "1"}))
    return list(await asyncio.gather(*calls))


async def test_a_batch_with_one_bad_call_stores_nothing_and_each_call_raises(
    server: ServerProcess,
) -> None:
    app_name = f"lgb-{uuid.uuid4().hex[:8]}"
    async with SessionStateSaver(server.base_url, app_name=app_name) as saver:
        first = await saver.aput(_config("t"), _checkpoint(0), {"source": "input"}, {})
        sent = _counted(saver)
        bad = _config("t", "x" * 200)  # not a checkpoint id the server takes
        outcomes = await asyncio.gather(
            saver.aput_writes(first, [("count", 0)], task_id="alone"),
            saver.aput_writes(first, [("count", 1)], task_id="before-bad"),
            saver.aput_writes(bad, [("count", 2)], task_id="bad"),
            saver.aput_writes(first, [("count", 3)], task_id="after-bad"),
            return_exceptions=True,
        )
        assert outcomes[0] is None
        errors = outcomes[1:]
        assert all(isinstance(error, ValidationError) for error in errors), errors
        assert errors[0] is errors[1] is errors[2]  # one batch, one error
        assert [path.rsplit("/", 1)[-1] for _, path in sent] == ["writes", "operations"]
        stored = await saver.aget_tuple(first)
        assert stored is not None
        assert [task for task, _, _ in stored.pending_writes] == ["alone"]


WRITER_ROUNDS = 6
WRITER_TASKS = 12


async def _writer(base_url: str, app_name: str, name: str) -> int:
    """One process's writes to the shared thread: rounds of a superstep's
    calls at once; returns how many requests they took."""
    async with SessionStateSaver(base_url, app_name=app_name) as saver:
        sent = _counted(saver)
        for round_number in range(WRITER_ROUNDS):
            await _step(saver, "shared", WRITER_TASKS, f"{name}{round_number}-")
        return len(sent)


def test_two_processes_batching_writes_to_one_thread_lose_nothing(
    server: ServerProcess,
) -> None:
    app_name = f"lgb-{uuid.uuid4().hex[:8]}"
    command = [sys.executable, "-m", "tests.client.test_langgraph_batching", "writer"]
    processes = [
        subprocess.Popen([*command, server.base_url, app_name, name], stdout=subprocess.PIPE)
        for name in ("a", "b")
    ]
    outputs = [process.communicate(timeout=300)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0]
    requests = [json.loads(output)["requests"] for output in outputs]

    async def check() -> None:
        async with SessionStateSaver(server.base_url, app_name=app_name) as saver:
            found = [item async for item in saver.alist(_config("shared"))]
            writes = {
                (task, value)
                for item in found
                for task, channel, value in item.pending_writes
                if channel != ERROR
            }
            errors = {
                (task, value)
                for item in found
                for task, channel, value in item.pending_writes
                if channel == ERROR
            }
        # Each round's checkpoint, and the thread's first (one writer's, or
        # each's when both found the thread empty).
        assert 2 * WRITER_ROUNDS + 1 <= len(found) <= 2 * WRITER_ROUNDS + 2
        labels = [f"{name}{r}-" for name in ("a", "b") for r in range(WRITER_ROUNDS)]
        assert {value for _, value in writes} == {
            f"{label}{n}" for label in labels for n in range(WRITER_TASKS)
        }
        assert {value for _, value in errors} == {f"{label}error-4" for label in labels}

    asyncio.run(check())
    calls = WRITER_ROUNDS * (WRITER_TASKS + 5 + 1)
    assert all(count < calls / 2 for count in requests), requests


def _refusing_batches(
    server: ServerProcess, status: int, problem: dict[str, Any]
) -> contextlib.AbstractAsyncContextManager[str]:
    """A proxy before the started server that answers every batch request
    of a thread with `status` and the `problem` body, and passes every
    other request on."""
    return proxy_before(
        server,
        lambda path, _body: (
            problem_response(status, problem) if path.endswith("/operations") else None
        ),
    )


@pytest.fixture
async def without_batch_route(server: ServerProcess) -> AsyncIterator[str]:
    """A server as an older one answers: the batch route is unknown (404)."""
    async with _refusing_batches(server, 404, {"type": "about:blank"}) as base_url:
        yield base_url


async def test_a_server_without_the_batch_route_gets_each_call_alone(
    without_batch_route: str, caplog: pytest.LogCaptureFixture
) -> None:
    app_name = f"lgb-{uuid.uuid4().hex[:8]}"
    async with SessionStateSaver(without_batch_route, app_name=app_name) as saver:
        first = await saver.aput(_config("t"), _checkpoint(0), {"source": "input"}, {})
        sent = _counted(saver)
        await _step_from(saver, first, tasks=4)
        kinds = [path.rsplit("/", 1)[-1] for _, path in sent]
        # One batch tried and refused (404, logged), then each call alone.
        assert kinds.count("operations") == 1
        assert len(kinds) == 1 + 4 + 5 + 1
        assert "no route for a thread's batch" in caplog.text
        assert saver._batch_route is False
        stored = await saver.aget_tuple(first)
        assert stored is not None
        writes = {(task, channel): value for task, channel, value in stored.pending_writes}
        assert len(writes) == 4 + 1
        assert writes["failing", ERROR] == "error-4"


@pytest.mark.parametrize("status", [404, 405])
async def test_a_batch_refused_with_a_problem_of_its_own_is_not_taken_for_an_older_server(
    server: ServerProcess, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    """A 404 or 405 whose problem names a cause of its own (not the
    framework's unknown route) is the batch's answer: each call raises it,
    nothing is sent again alone, and batching stays on."""
    problem = {"type": "urn:session-state:problem:thread_not_found", "code": "thread_not_found"}
    app_name = f"lgb-{uuid.uuid4().hex[:8]}"
    async with (
        _refusing_batches(server, status, problem) as base_url,
        SessionStateSaver(base_url, app_name=app_name) as saver,
    ):
        first = await saver.aput(_config("t"), _checkpoint(0), {"source": "input"}, {})
        sent = _counted(saver)
        outcomes = await asyncio.gather(
            *(
                saver.aput_writes(first, [("count", index)], task_id=f"task-{index}")
                for index in range(3)
            ),
            return_exceptions=True,
        )
        assert outcomes[0] is None  # alone: nothing was in flight
        errors = outcomes[1:]
        assert all(getattr(error, "code", None) == "thread_not_found" for error in errors)
        assert status != 404 or all(isinstance(error, NotFoundError) for error in errors)
        assert errors[0] is errors[1]  # one batch, one error
        assert [path.rsplit("/", 1)[-1] for _, path in sent] == ["writes", "operations"]
        assert saver._batch_route is True
        assert "no route for a thread's batch" not in caplog.text


def _main(run: Callable[..., Awaitable[int]]) -> None:
    base_url, app_name, name = sys.argv[2:5]
    print(json.dumps({"requests": asyncio.run(run(base_url, app_name, name))}))


if __name__ == "__main__" and sys.argv[1] == "writer":
    _main(_writer)


BODY_LIMIT = 2 * 1024 * 1024


@pytest.fixture
def small_bodies_server(tmp_path: Any) -> Iterator[ServerProcess]:
    """A server whose body limit is 2 MiB (the default is 8)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'small.db'}"
    process = ServerProcess(url, SESSION_STATE_MAX_BODY_BYTES=str(BODY_LIMIT)).start()
    yield process
    process.stop()


async def test_large_writes_go_in_batches_of_bounded_size_and_none_is_refused(
    small_bodies_server: ServerProcess,
) -> None:
    """Writes of 300 KB each made at once go in batches of at most 1 MiB of
    values (two each here), so a batch never meets the server's body limit
    (413) that each write alone is well within, and none is sent twice."""
    app_name = f"lgb-{uuid.uuid4().hex[:8]}"
    async with SessionStateSaver(small_bodies_server.base_url, app_name=app_name) as saver:
        first = await saver.aput(_config("t"), _checkpoint(0), {"source": "input"}, {})
        sent = _counted(saver)
        await asyncio.gather(
            *(
                saver.aput_writes(first, [("count", bytes([n]) * 300_000)], task_id=f"task-{n}")
                for n in range(12)
            )
        )
        kinds = [path.rsplit("/", 1)[-1] for _, path in sent]
        # The first alone (nothing in flight), then the other eleven two by two.
        assert kinds == ["writes"] + ["operations"] * 5 + ["writes"], kinds
        stored = await saver.aget_tuple(first)
        assert stored is not None
        assert {task: value[0] for task, _, value in stored.pending_writes} == {
            f"task-{n}": n for n in range(12)
        }


async def test_puts_with_large_metadata_go_in_batches_of_bounded_size_and_none_is_refused(
    small_bodies_server: ServerProcess,
) -> None:
    """A put's metadata weighs in its batch as its values do: puts of 300 KB
    of metadata each, made at once, go three by three (1 MiB a batch),
    never meeting the body limit (413) that each alone is well within."""
    app_name = f"lgb-{uuid.uuid4().hex[:8]}"
    async with SessionStateSaver(small_bodies_server.base_url, app_name=app_name) as saver:
        first = await saver.aput(_config("t"), _checkpoint(0), {"source": "input"}, {})
        sent = _counted(saver)
        puts = []
        for n in range(12):
            checkpoint = {**_checkpoint(n + 1), "id": f"c{n:02}"}
            metadata: Any = {"source": "loop", "step": n, "note": "abcdefghijkl"[n] * 300_000}
            puts.append(saver.aput(first, checkpoint, metadata, {}))
        await asyncio.gather(*puts)
        kinds = [path.rsplit("/", 1)[-1] for _, path in sent]
        # The first alone (nothing in flight), then the other eleven three by three.
        assert kinds == ["c00"] + ["operations"] * 4, kinds
        stored = [item async for item in saver.alist(_config("t"))]
        notes = {item.config["configurable"]["checkpoint_id"]: item.metadata for item in stored}
        for n in range(12):
            assert notes[f"c{n:02}"]["note"] == "abcdefghijkl"[n] * 300_000
