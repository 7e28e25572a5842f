"""The async SessionStateSaver sends many threads' batches together (POST
/apps/{app}/thread-operations), against a started server on each backend:
the steps of threads run at once go in far fewer requests than threads,
nothing is lost and each thread keeps its order; one thread's refused
batch raises in its own calls only; a batch its own request would retry
(503) goes again alone; a request refused whole for its size, or by a
server without the route, goes again thread by thread."""

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web

from session_state_client import ValidationError
from session_state_client.langgraph import SessionStateSaver
from tests.client.langgraph_proxy import problem_response, proxy_before
from tests.client.own_loops import runs_cleanly
from tests.client.test_langgraph_batching import _checkpoint, _config, _counted
from tests.conftest import ServerProcess
from tests.test_observability import answered_on

THREADS = 30
TASKS = 3
MANY = "/thread-operations"


async def _superstep(saver: SessionStateSaver, thread_id: str, step: int) -> None:
    """A step of one thread as LangGraph makes it: the tasks' writes on the
    latest checkpoint and the next checkpoint, all at once."""
    parent = _config(thread_id, f"c{step:03}")
    await asyncio.gather(
        *(
            saver.aput_writes(parent, [("count", f"{thread_id}:{step}:{n}")], task_id=f"task-{n}")
            for n in range(TASKS)
        ),
        saver.aput(parent, _checkpoint(step + 1), {"source": "loop", "step": step}, {"count": "1"}),
    )


async def _run_threads(saver: SessionStateSaver, threads: list[str], steps: int) -> None:
    async def one(thread_id: str) -> None:
        await saver.aput(_config(thread_id), _checkpoint(0), {"source": "input"}, {})
        for step in range(steps):
            await _superstep(saver, thread_id, step)

    await asyncio.gather(*(one(thread_id) for thread_id in threads))


async def _assert_all_stored(saver: SessionStateSaver, threads: list[str], steps: int) -> None:
    for thread_id in threads:
        found = [item async for item in saver.alist(_config(thread_id))]
        assert len(found) == steps + 1, thread_id
        by_id = {item.config["configurable"]["checkpoint_id"]: item for item in found}
        for step in range(steps):
            # Each step's writes, on the checkpoint they were made on.
            parent = by_id.get(f"c{step:03}")
            writes = sorted(value for _, _, value in parent.pending_writes) if parent else None
            assert writes == [f"{thread_id}:{step}:{n}" for n in range(TASKS)], (thread_id, step)


def _saver_ids(saver: SessionStateSaver) -> None:
    """Every put of the saver gets the id c000, c001, ... by its step."""
    put = saver._put_request

    def with_step_ids(config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
        step = metadata.get("step", -1) + 1
        checkpoint = {**checkpoint, "id": f"c{step:03}"}
        return put(config, checkpoint, metadata, versions)

    saver._put_request = with_step_ids  # type: ignore[method-assign]  # ids a test can name


async def test_many_threads_steps_go_in_far_fewer_requests_and_lose_nothing(
    server: ServerProcess,
) -> None:
    threads = [f"t{n}" for n in range(THREADS)]
    steps = 4
    async with SessionStateSaver(server.base_url, app_name=f"lgg-{uuid.uuid4().hex[:8]}") as saver:
        _saver_ids(saver)
        sent = _counted(saver)
        await _run_threads(saver, threads, steps)
        calls = THREADS * (1 + steps * (TASKS + 1))
        many = [path for _, path in sent if path.endswith(MANY)]
        assert many, sent
        # Without gathering, threads' batches: at least a request per thread and step.
        assert len(sent) < THREADS * steps / 2, (len(sent), calls)
        await _assert_all_stored(saver, threads, steps)


def _spoiling(thread_id: str) -> Callable[[str, bytes], bytes | None]:
    """Makes the given thread's batches bad on their way (a put whose
    checkpoint has no data: the server's 422 for that batch alone)."""

    def rewrite(path: str, body: bytes) -> bytes | None:
        if not path.endswith(MANY):
            return None
        document = json.loads(body)
        for batch in document["threads"]:
            if batch["threadId"] == thread_id:
                for operation in batch["operations"]:
                    if operation["op"] == "put":
                        operation["checkpoint"]["data"] = None
                    else:
                        operation["writes"][0]["data"] = None
        return json.dumps(document).encode()

    return rewrite


async def test_one_threads_refused_batch_raises_in_its_own_calls_only(
    server: ServerProcess,
) -> None:
    app_name = f"lgg-{uuid.uuid4().hex[:8]}"
    threads = [f"t{n}" for n in range(8)]
    async with (
        proxy_before(server, _spoiling("t3")) as base_url,
        SessionStateSaver(base_url, app_name=app_name) as saver,
    ):
        _saver_ids(saver)
        sent = _counted(saver)
        outcomes = await asyncio.gather(
            *(
                saver.aput(_config(thread_id), _checkpoint(0), {"source": "input"}, {})
                for thread_id in threads
            ),
            return_exceptions=True,
        )
        assert [path for _, path in sent] == [f"/apps/{app_name}{MANY}"]
        refused = outcomes[threads.index("t3")]
        assert isinstance(refused, ValidationError), refused
        assert refused.status_code == 422
        assert all(isinstance(o, dict) for n, o in enumerate(outcomes) if threads[n] != "t3")
        for thread_id in threads:
            stored = await saver.aget_tuple(_config(thread_id))
            assert (stored is None) == (thread_id == "t3"), thread_id


async def test_a_batch_its_own_request_would_retry_goes_again_alone(
    server: ServerProcess,
) -> None:
    """The first request of several threads is answered with a 503 result
    for each (the database unavailable to those batches): each batch goes
    again as its own thread's request, and is stored once."""
    answered: list[int] = []

    def unavailable_once(path: str, body: bytes) -> web.Response | None:
        if not path.endswith(MANY) or answered:
            return None
        count = len(json.loads(body)["threads"])
        answered.append(count)
        problem = {"status": 503, "code": "database_unavailable", "title": "Unavailable"}
        return web.json_response({"results": [{"status": 503, "problem": problem}] * count})

    threads = [f"t{n}" for n in range(6)]
    async with (
        proxy_before(server, unavailable_once) as base_url,
        SessionStateSaver(base_url, app_name=f"lgg-{uuid.uuid4().hex[:8]}") as saver,
    ):
        _saver_ids(saver)
        sent = _counted(saver)
        await _run_threads(saver, threads, steps=1)
        assert answered == [len(threads)]
        # The six first puts again, each to its own route, then the step.
        assert [path.rsplit("/", 2)[-2] for _, path in sent[1:7]] == ["checkpoints"] * 6
        await _assert_all_stored(saver, threads, steps=1)


@pytest.mark.parametrize(
    ("status", "code", "route_kept"),
    [(404, None, False), (405, "method_not_allowed", False), (413, "payload_too_large", True)],
)
async def test_a_request_refused_whole_goes_again_thread_by_thread(
    server: ServerProcess,
    status: int,
    code: str | None,
    route_kept: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An older server's unknown route (logged once, and each thread's batch
    alone from then on) or a body too large together: nothing is lost."""
    problem = {} if code is None else {"code": code}
    refused: list[str] = []

    def refuse(path: str, _body: bytes) -> web.Response | None:
        if not path.endswith(MANY):
            return None
        refused.append(path)
        return problem_response(status, problem)

    threads = [f"t{n}" for n in range(6)]
    async with (
        proxy_before(server, refuse) as base_url,
        SessionStateSaver(base_url, app_name=f"lgg-{uuid.uuid4().hex[:8]}") as saver,
    ):
        _saver_ids(saver)
        await _run_threads(saver, threads, steps=2)
        await _assert_all_stored(saver, threads, steps=2)
        assert saver._threads_route is route_kept
        assert (len(refused) == 1) is not route_kept, refused
        assert ("no route for several threads' batches" in caplog.text) is not route_kept


async def test_an_answer_without_results_raises_in_each_call_and_hangs_none(
    server: ServerProcess,
) -> None:
    """A proxy answering the request of several threads with a 200 of its
    own: each call raises rather than waiting for ever."""

    def foreign(path: str, _body: bytes) -> web.Response | None:
        return web.json_response({"ok": True}) if path.endswith(MANY) else None

    async with (
        proxy_before(server, foreign) as base_url,
        SessionStateSaver(base_url, app_name=f"lgg-{uuid.uuid4().hex[:8]}") as saver,
    ):
        outcomes = await asyncio.wait_for(
            asyncio.gather(
                *(
                    saver.aput(_config(f"t{n}"), _checkpoint(0), {"source": "input"}, {})
                    for n in range(4)
                ),
                return_exceptions=True,
            ),
            timeout=30,
        )
        assert all(isinstance(outcome, ValueError) for outcome in outcomes), outcomes
        assert all("without results" in str(outcome) for outcome in outcomes)


_LOOPS_PROGRAM = """
import asyncio, sys, threading
from session_state_client.langgraph import SessionStateSaver

base_url, app = sys.argv[1], sys.argv[2]
saver = SessionStateSaver(base_url, app_name=app)
failures = []

def config(thread_id, checkpoint_id=None):
    configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}

def checkpoint(step):
    return {"v": 4, "id": f"c{step:03}", "ts": "2026-01-01T00:00:00+00:00",
            "channel_values": {"count": step}, "channel_versions": {}, "versions_seen": {}}

async def graph(thread_id, first):
    for step in range(first, first + 3):
        parent = config(thread_id, f"c{step - 1:03}") if step else config(thread_id)
        writes = [saver.aput_writes(parent, [("count", f"{thread_id}:{step}:{n}")], f"task-{n}")
                  for n in range(2)] if step else []
        await asyncio.gather(*writes, saver.aput(parent, checkpoint(step), {"step": step}, {}))

async def graphs(number, first):
    await asyncio.gather(*(graph(f"l{number}-t{n}", first) for n in range(8)))

def thread(number):
    try:
        asyncio.run(graphs(number, 0))
        # A second loop on the OS thread, as a second run of a sync caller.
        asyncio.run(graphs(number, 3))
    except BaseException as error:
        failures.append(repr(error))

workers = [threading.Thread(target=thread, args=(n,)) for n in range(4)]
[w.start() for w in workers]
[w.join() for w in workers]
asyncio.run(saver.aclose())
print("failures:", failures)
print("done")
"""


def test_threads_each_on_its_own_loop_gather_and_close_cleanly(server: ServerProcess) -> None:
    """A sync caller's OS threads each run loops of their own over one
    saver: each loop's batches gather apart, nothing is lost, and closing
    leaves no task or connection behind."""
    app_name = f"lgg-{uuid.uuid4().hex[:8]}"
    before = asyncio.run(_thread_operations_requests(server.base_url))
    runs_cleanly(_LOOPS_PROGRAM, server.base_url, app_name)
    assert asyncio.run(_thread_operations_requests(server.base_url)) > before

    async def check() -> None:
        async with SessionStateSaver(server.base_url, app_name=app_name) as saver:
            for number in range(4):
                for n in range(8):
                    thread_id = f"l{number}-t{n}"
                    found = [item async for item in saver.alist(_config(thread_id))]
                    assert sorted(
                        item.config["configurable"]["checkpoint_id"] for item in found
                    ) == [f"c{step:03}" for step in range(6)], thread_id
                    by_id = {item.config["configurable"]["checkpoint_id"]: item for item in found}
                    for step in range(1, 6):
                        writes = sorted(v for _, _, v in by_id[f"c{step - 1:03}"].pending_writes)
                        assert writes == [f"{thread_id}:{step}:{n}" for n in range(2)]

    asyncio.run(check())


async def _thread_operations_requests(base_url: str) -> float:
    """Requests the server answered on the route of several threads' batches."""
    return await answered_on(base_url, "/apps/{app_name}/thread-operations")
