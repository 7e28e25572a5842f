"""The checkpoint routes a LangGraph step calls (put, put_writes, get_tuple)
served without FastAPI's request machinery.

A graph's step is a put of its checkpoint and a put of its task's writes,
and a run starts with a get_tuple; FastAPI's routing, parameter solving and
exception layers cost more server CPU than the statements behind them
(docs/performance.md, "LangGraph"). This middleware, beside the session
routes' (app.sessions.append_fast_path, .read_fast_path), stands in for
six routes: the PUT of a checkpoint, the POST of its writes, the POST of
a thread's batch of both (the async saver's group commit), the POST of
several threads' batches, the GET of one checkpoint, and the GET of a
thread's list whose query is `checkpointNs` and `limit` at most
(get_tuple's "the latest"). It finds
each among the app's routes as assembled (app.sessions.fast_path_routes:
off, and FastAPI serves, when a route is not the one it stands in for) and
answers through the route's own code (`store_checkpoint`, `store_writes`,
`store_operations`, `apply_thread_batches`, `one_checkpoint`,
`checkpoint_page`, `checked_namespace`, `error_response`).
Anything else, including a bad identifier, a repeated or unknown query
parameter, or a value FastAPI would refuse or read another way, goes on to
FastAPI unchanged, so its validation errors stay FastAPI's.
"""

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import parse_qsl

from fastapi.responses import Response
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from ...core.identifiers import name_problem
from ...http.bodies import decode_json
from ...sessions.fast_path_routes import SessionRouteMatch, StandIn, answered
from . import routes as checkpoints
from .domain import CheckpointQuery, ThreadKey
from .metrics import CHECKPOINT_FAST_PATH
from .schemas import MAX_TEXT_LENGTH
from .service import CheckpointService
from .thread_batches import apply_thread_batches

_ONE = frozenset(
    {
        ("path", "app_name"),
        ("path", "thread_id"),
        ("path", "checkpoint_id"),
        ("query", "checkpoint_ns"),
    }
)
_LIST = frozenset(
    {
        ("path", "app_name"),
        ("path", "thread_id"),
        ("query", "checkpoint_ns"),
        ("query", "metadata"),
        ("query", "before"),
        ("query", "limit"),
        ("query", "page_token"),
    }
)
PUT = StandIn(checkpoints.put_checkpoint, checkpoints.CHECKPOINT_PATH, "PUT", _ONE)
WRITES = StandIn(checkpoints.put_writes, checkpoints.CHECKPOINT_PATH + "/writes", "POST", _ONE)
OPERATIONS = StandIn(
    checkpoints.apply_operations,
    checkpoints.THREAD_PATH + "/operations",
    "POST",
    frozenset({("path", "app_name"), ("path", "thread_id")}),
)
GET = StandIn(checkpoints.get_checkpoint, checkpoints.CHECKPOINT_PATH, "GET", _ONE)
LATEST = StandIn(checkpoints.list_checkpoints, checkpoints.CHECKPOINTS_PATH, "GET", _LIST)
THREAD_BATCHES = StandIn(
    checkpoints.apply_thread_operations,
    checkpoints.THREAD_OPERATIONS_PATH,
    "POST",
    frozenset({("path", "app_name")}),
)
# The route's query parameters read here, by name as sent; the list's
# others (metadata, before, pageToken) are left to the route.
_NAMESPACE = "checkpointNs"
_LIMIT = "limit"
# At most 4 digits, checked against the route's bounds below.
_PLAIN_NUMBER = re.compile(r"[0-9]{1,4}")
_THREADS_SEGMENT = "/threads/"
_THREAD_BATCHES_TAIL = "/thread-operations"

# A route's answer: the service, the thread, the query read, and the body
# (None for a GET).
Answer = Callable[[CheckpointService, ThreadKey, dict[str, str], Any], Awaitable[Response]]


def _query(scope: Scope, names: frozenset[str]) -> dict[str, str] | None:
    """The query as Starlette reads it, when it names only `names`, each
    once; None otherwise (FastAPI takes the request)."""
    query_string: bytes = scope["query_string"]
    if not query_string:
        return {}
    found: dict[str, str] = {}
    for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if name not in names or name in found:
            return None
        found[name] = value
    namespace = found.get(_NAMESPACE)
    if namespace is not None and len(namespace) > MAX_TEXT_LENGTH:
        return None  # FastAPI's 422
    limit = found.get(_LIMIT)
    if limit is not None and not (
        _PLAIN_NUMBER.fullmatch(limit) and 1 <= int(limit) <= checkpoints.MAX_PAGE_SIZE
    ):
        return None
    return found


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body; None when the client went away before sending it all."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _put(
    service: CheckpointService, key: ThreadKey, query: dict[str, str], document: Any
) -> Response:
    namespace = checkpoints.checked_namespace(query.get(_NAMESPACE, "")) or ""
    return await checkpoints.store_checkpoint(
        service, key, namespace, query["checkpoint_id"], document
    )


async def _writes(
    service: CheckpointService, key: ThreadKey, query: dict[str, str], document: Any
) -> Response:
    namespace = checkpoints.checked_namespace(query.get(_NAMESPACE, "")) or ""
    return await checkpoints.store_writes(service, key, namespace, query["checkpoint_id"], document)


async def _operations(
    service: CheckpointService, key: ThreadKey, _query: dict[str, str], document: Any
) -> Response:
    return await checkpoints.store_operations(service, key, document)


async def _get(
    service: CheckpointService, key: ThreadKey, query: dict[str, str], _document: Any
) -> Response:
    namespace = checkpoints.checked_namespace(query.get(_NAMESPACE, "")) or ""
    return await checkpoints.one_checkpoint(service, key, namespace, query["checkpoint_id"])


async def _latest(
    service: CheckpointService, key: ThreadKey, query: dict[str, str], _document: Any
) -> Response:
    limit = query.get(_LIMIT)
    checked = CheckpointQuery(
        checkpoint_ns=checkpoints.checked_namespace(query.get(_NAMESPACE)),
        metadata=None,
        before=None,
        after=None,
        limit=checkpoints.DEFAULT_PAGE_SIZE if limit is None else int(limit),
    )
    return await checkpoints.checkpoint_page(service, key, checked)


class _Served:
    """One route this middleware stands in for."""

    def __init__(
        self, routes: Sequence[BaseRoute], stand_in: StandIn, answer: Answer, body: bool
    ) -> None:
        self.match = SessionRouteMatch(routes, stand_in)
        self.route: APIRoute | None = self.match.route
        self.answer = answer
        self.body = body
        names = {_NAMESPACE} | ({_LIMIT} if stand_in is LATEST else set())
        # The batch of a thread's operations reads no query.
        self.query_names = frozenset(set() if stand_in is OPERATIONS else names)

    def parameters_of(self, scope: Scope) -> tuple[ThreadKey, dict[str, str]] | None:
        """The thread and the query (the checkpoint id in it too), when the
        request is this route's and the fast path reads it as FastAPI would."""
        parameters = self.match.parameters_of(scope)
        if parameters is None or name_problem(parameters["thread_id"]):
            return None
        checkpoint_id = parameters.get("checkpoint_id")
        if checkpoint_id is not None and name_problem(checkpoint_id):
            return None
        query = _query(scope, self.query_names)
        if query is None:
            return None
        if checkpoint_id is not None:
            query["checkpoint_id"] = checkpoint_id
        return ThreadKey(parameters["app_name"], parameters["thread_id"]), query


class CheckpointFastPath:
    """The checkpoint routes of a LangGraph step."""

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        """`routes`: the app's."""
        self.app = app
        self.served = [
            _Served(routes, PUT, _put, body=True),
            _Served(routes, WRITES, _writes, body=True),
            _Served(routes, OPERATIONS, _operations, body=True),
            _Served(routes, GET, _get, body=False),
            _Served(routes, LATEST, _latest, body=False),
        ]
        self.thread_batches = SessionRouteMatch(routes, THREAD_BATCHES)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _THREADS_SEGMENT in scope["path"]:
            for served in self.served:
                found = served.parameters_of(scope)
                if found is not None:
                    await _serve(served, *found, scope, receive, send)
                    return
        elif scope["type"] == "http" and scope["path"].endswith(_THREAD_BATCHES_TAIL):
            app_name = self.thread_batches.app_of(scope)
            # The route reads no query: one sent goes to FastAPI, as for a thread's batch.
            if app_name is not None and not scope["query_string"]:
                await _serve_thread_batches(
                    self.thread_batches.route, app_name, scope, receive, send
                )
                return
        await self.app(scope, receive, send)


async def _serve(
    served: _Served,
    key: ThreadKey,
    query: dict[str, str],
    scope: Scope,
    receive: Receive,
    send: Send,
) -> None:
    # Set in the scope, so that metrics and logs label the request by the
    # template FastAPI would have matched.
    scope["route"] = served.route
    service: CheckpointService = scope["app"].state.checkpoints

    async def work() -> Response | None:
        if not served.body:
            return await served.answer(service, key, query, None)
        # The routes with a body check the namespace before they read it.
        checkpoints.checked_namespace(query.get(_NAMESPACE, ""))
        body = await _read_body(receive)  # the body limit's 413 is raised here
        if body is None:
            return None  # the client went away before its body arrived
        return await served.answer(service, key, query, await decode_json(body, service.limits))

    await _answer(work(), scope, receive, send)


async def _serve_thread_batches(
    route: APIRoute | None, app_name: str, scope: Scope, receive: Receive, send: Send
) -> None:
    scope["route"] = route
    service: CheckpointService = scope["app"].state.checkpoints

    async def work() -> Response | None:
        body = await _read_body(receive)  # the body limit's 413 is raised here
        if body is None:
            return None
        document = await decode_json(body, service.limits)
        return await apply_thread_batches(service, app_name, document)

    await _answer(work(), scope, receive, send)


async def _answer(
    work: Awaitable[Response | None], scope: Scope, receive: Receive, send: Send
) -> None:
    """The response of `work`, or its error's; nothing when the client went away."""
    response = await answered(work)
    if response is None:
        CHECKPOINT_FAST_PATH.labels("client_gone").inc()
        return  # nobody to answer
    CHECKPOINT_FAST_PATH.labels("answered").inc()
    await response(scope, receive, send)
