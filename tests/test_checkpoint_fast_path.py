"""LangGraph's checkpoint routes as the fast path in front of FastAPI serves
them: the same answer as the routes to every request, and taken only for
the requests it reads exactly as FastAPI would."""

import base64
import json
from contextlib import AsyncExitStack
from typing import Any

import httpx
from fastapi import FastAPI

from session_state.langgraph.checkpoints.fast_path import CheckpointFastPath
from session_state.langgraph.checkpoints.metrics import CHECKPOINT_FAST_PATH
from session_state.main import create_app
from tests.test_append_fast_path import _counted

ASGI_URL = "http://127.0.0.1"


def _answered_in_process() -> float:
    return _counted(
        CHECKPOINT_FAST_PATH, "session_state_checkpoint_fast_path_total", {"outcome": "answered"}
    )


def _without_fast_path(app: FastAPI) -> FastAPI:
    app.user_middleware = [m for m in app.user_middleware if m.cls is not CheckpointFastPath]
    return app


def _data(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


CHECKPOINT: dict[str, Any] = {
    "checkpoint": {"type": "json", "data": _data('{"v": 1}')},
    "metadata": {"step": 1, "source": "loop"},
    "channelVersions": {"messages": "1.a", "count": 2},
    "newValues": [{"channel": "messages", "version": "1.a", "type": "json", "data": _data("[]")}],
}
WRITES: dict[str, Any] = {
    "writes": [
        {"taskId": "t", "idx": 0, "channel": "messages", "type": "json", "data": _data("[1]")}
    ]
}
# Bodies of a put (the first stores the thread's checkpoint "c"), and
# whether the fast path takes them: every body it reads, hostile ones too
# (their answers are the route's own code's).
PUT_BODIES: list[Any] = [
    CHECKPOINT,
    {**CHECKPOINT, "parentCheckpointId": "b", "userId": "alice", "ttlSeconds": 60.0},
    {**CHECKPOINT, "checkpoint": {"type": "json", "data": "not base64!"}},
    {**CHECKPOINT, "ttlSeconds": -1},
    {**CHECKPOINT, "userId": "bad\u0000"},
    {**CHECKPOINT, "unknown": 1},
    {"checkpoint": {"type": "json"}, "channelVersions": {}},
    [],
    None,
    b"{not json",
    b'{"a": 1, "a": 2}',
    b"",
]
WRITES_BODIES: list[Any] = [
    WRITES,
    {"writes": [{**WRITES["writes"][0], "idx": -1}]},
    {"writes": [{**WRITES["writes"][0], "idx": 2**31}]},
    {"writes": [{**WRITES["writes"][0], "data": None}]},
    {"writes": "x"},
    b"[1, 2",
]
_PUT_OP = {"op": "put", "checkpointId": "c", **CHECKPOINT}
_WRITES_OP = {"op": "putWrites", "checkpointId": "c", "checkpointNs": "", **WRITES}
OPERATIONS_BODIES: list[Any] = [
    {"operations": [_PUT_OP, _WRITES_OP], "userId": "alice", "ttlSeconds": 60.0},
    {"operations": [_WRITES_OP, {**_PUT_OP, "checkpointId": "d", "parentCheckpointId": "c"}]},
    {"operations": [_PUT_OP, {**_WRITES_OP, "writes": [{**WRITES["writes"][0], "data": "!"}]}]},
    {"operations": [{**_PUT_OP, "op": "get"}]},
    {"operations": [{**_PUT_OP, "userId": "alice"}]},
    {"operations": [_WRITES_OP] * 65},
    {"operations": []},
    {"operations": [{**_WRITES_OP, "checkpointNs": "\u0000"}]},
    [],
    b'{"operations": [}',
]
# Several threads' batches: each of the bodies above as a thread's, with a
# thread id (one not valid: the whole request's 422), and hostile wrappers.
THREAD_BATCHES_BODIES: list[Any] = [
    {
        "threads": [
            {**body, "threadId": f"t{index}"} for index, body in enumerate(OPERATIONS_BODIES[:3])
        ]
    },
    {
        "threads": [
            {**OPERATIONS_BODIES[0], "threadId": "t"},
            {**OPERATIONS_BODIES[3], "threadId": "u"},
        ]
    },
    {
        "threads": [
            {
                "operations": [{**_PUT_OP, "checkpoint": {"type": "json", "data": None}}],
                "threadId": "t",
            },
            {**OPERATIONS_BODIES[0], "threadId": "u"},
        ]
    },
    {"threads": [{**OPERATIONS_BODIES[0], "threadId": "x" * 129}]},
    {"threads": [OPERATIONS_BODIES[0]]},
    {"threads": [{**OPERATIONS_BODIES[0], "threadId": "t"}] * 101},
    {"threads": []},
    {"threads": {}},
    {"threads": [{**OPERATIONS_BODIES[0], "threadId": "t"}], "userId": "alice"},
    [],
    b'{"threads": [}',
]
# Queries of the batch, and whether the fast path reads them (none: the
# route reads no query, FastAPI ignores one).
OPERATIONS_QUERIES = {"": True, "checkpointNs=": False}
# Thread ids as sent, and whether the fast path takes them.
THREADS = {
    "t": True,
    "a%2Fb": True,
    "é": True,
    " lead": True,
    "x" * 129: False,
    "%zz": False,
    "%00x": False,
}
# Queries of one checkpoint's routes, and whether the fast path reads them.
ONE_QUERIES = {
    "": True,
    "checkpointNs=": True,
    "checkpointNs=sub%3Ax": True,
    "checkpointNs=a+b": True,
    "checkpointNs=%00": True,  # the route's own check: 422
    "checkpointNs=" + "n" * 4097: False,
    "checkpointNs=a&checkpointNs=b": False,
    "checkpointNs=a&other=1": False,
    "limit=1": False,
}
# Queries of the list, and whether the fast path reads them (get_tuple's
# form: the namespace and a limit).
LIST_QUERIES = {
    "checkpointNs=&limit=1": True,
    "limit=1": True,
    "": True,
    "checkpointNs=&limit=1000": True,
    "checkpointNs=&limit=0": False,
    "checkpointNs=&limit=1001": False,
    "checkpointNs=&limit=01": True,
    "checkpointNs=&limit=+1": False,
    "checkpointNs=&limit=1&limit=2": False,
    'checkpointNs=&limit=1&metadata={"step":1}': False,
    "checkpointNs=&limit=1&before=c": False,
    # Not UTF-8: the 400 comes before either of them.
    "checkpointNs=%ED%A0%80&limit=1": False,
}


def _content(body: Any) -> bytes:
    return body if isinstance(body, bytes) else json.dumps(body).encode()


def _outcome(response: httpx.Response, app_name: str) -> tuple[object, ...]:
    body = json.loads(response.text.replace(app_name, "APP")) if response.content else None
    if isinstance(body, dict):
        body.pop("requestId", None)
        for result in body.get("results", ()):
            result.get("problem", {}).pop("requestId", None)
    return response.status_code, response.headers.get("content-type"), body


async def test_the_fast_path_answers_as_the_routes_do(settings):
    """The same requests to an app with the fast path and to one without,
    each in an app of its own name on one database: the same answers, the
    fast path having answered exactly those it should."""
    apps = {"fastapp": create_app(settings), "routeapp": _without_fast_path(create_app(settings))}
    async with AsyncExitStack() as stack:
        clients = {}
        for name, app in apps.items():
            await stack.enter_async_context(app.router.lifespan_context(app))
            clients[name] = await stack.enter_async_context(
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ASGI_URL)
            )

        async def both(method: str, path: str, query: str, body: Any, taken: bool) -> int:
            answered_before = _answered_in_process()
            outcomes = []
            for name, client in clients.items():
                url = f"/apps/{name}/{path}" + (f"?{query}" if query else "")
                content = None if body is None and method == "GET" else _content(body)
                response = await client.request(method, url, content=content)
                outcomes.append(_outcome(response, name))
                if name == "fastapp":
                    answered = _answered_in_process() - answered_before
            case = (method, path, query, body)
            assert answered == taken, case
            assert outcomes[0] == outcomes[1], case
            return int(outcomes[0][0])  # type: ignore[call-overload]

        statuses = set()
        for thread_id, valid in THREADS.items():
            thread = f"threads/{thread_id}"
            for query, read_here in ONE_QUERIES.items():
                taken = valid and read_here
                for body in PUT_BODIES:
                    statuses.add(await both("PUT", f"{thread}/checkpoints/c", query, body, taken))
                for body in WRITES_BODIES:
                    path = f"{thread}/checkpoints/c/writes"
                    statuses.add(await both("POST", path, query, body, taken))
                for checkpoint in ("c", "missing"):
                    path = f"{thread}/checkpoints/{checkpoint}"
                    statuses.add(await both("GET", path, query, None, taken))
            for query, read_here in OPERATIONS_QUERIES.items():
                for body in OPERATIONS_BODIES:
                    path = f"{thread}/operations"
                    statuses.add(await both("POST", path, query, body, valid and read_here))
            for query, read_here in LIST_QUERIES.items():
                path = f"{thread}/checkpoints"
                statuses.add(await both("GET", path, query, None, valid and read_here))
        for query, read_here in OPERATIONS_QUERIES.items():
            for body in THREAD_BATCHES_BODIES:
                statuses.add(await both("POST", "thread-operations", query, body, read_here))
        assert statuses >= {200, 204, 400, 404, 422}
