"""The append routes (one event, a batch, appends to several sessions)
served without FastAPI's request machinery.

Appends are the hot path, and FastAPI's routing, validation and exception
layers cost as much server CPU as the append itself (docs/performance.md,
"Where the time goes"). This middleware, one per route, sits inside ours
(request id, metrics, API keys, body limit), finds its route among the
app's routes as assembled (app.sessions.fast_path_routes: off, and FastAPI serves,
when that route is not the one it stands in for), and answers through the same code as the route
(`appending.append`, `appending.append_batch`,
`session_appends.append_to_sessions`, `error_response`).
Anything else, including every request with a bad identifier or If-Match,
goes on to FastAPI unchanged, so its validation errors stay FastAPI's.
"""

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from fastapi.responses import Response
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.errors import BadRequest
from ..core.metrics import FAST_PATH_APPENDS
from ..http.bodies import decode_json
from ..http.dependencies import expected_revision
from . import routes as sessions
from .domain import SessionKey
from .fast_path_routes import SessionRouteMatch, StandIn, answered
from .service import SessionService
from .session_appends import append_to_sessions

_IF_MATCH = b"if-match"
# Every parameter the routes declare, as (where, name): the fast path reads
# each of these itself (the body, raw, as the routes do).
ROUTE_PARAMETERS = frozenset(
    {("path", "app_name"), ("path", "user_id"), ("path", "session_id"), ("header", "if_match")}
)
APPENDS_ROUTE_PARAMETERS = frozenset({("path", "app_name")})
APPEND = StandIn(sessions.append_event, sessions.APPEND_PATH, "POST", ROUTE_PARAMETERS)
BATCH = StandIn(sessions.append_events, sessions.BATCH_PATH, "POST", ROUTE_PARAMETERS)
APPENDS = StandIn(
    sessions.append_to_sessions, sessions.APPENDS_PATH, "POST", APPENDS_ROUTE_PARAMETERS
)


def _if_match(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == _IF_MATCH:
            header: str = value.decode("latin-1")
            return header
    return None


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body; None when the client went away before sending it all
    (what it did send may still parse, and must not be stored)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


# The route's own answer to a parsed request (app.sessions.appending).
Answer = Callable[[SessionService, SessionKey, Any, int | None], Awaitable[Response]]
# What a fast path does with the request's body: the service, the raw body
# (its size bounds an answer) and the body parsed.
Respond = Callable[[SessionService, bytes, Any], Awaitable[Response]]


async def _serve(
    route: APIRoute | None, respond: Respond, scope: Scope, receive: Receive, send: Send
) -> None:
    """Answers a request a fast path took: its body read and parsed once,
    then `respond`'s answer, or the problem response of its error."""
    # Set in the scope, so that metrics and logs label the request by the
    # template FastAPI would have matched.
    scope["route"] = route
    service: SessionService = scope["app"].state.service

    async def work() -> Response | None:
        body = await _read_body(receive)  # the body limit's 413 is raised here
        if body is None:
            return None  # the client went away before its body arrived
        return await respond(service, body, await decode_json(body, service.limits))

    response = await answered(work())
    if response is None:
        FAST_PATH_APPENDS.labels("client_gone").inc()
        return  # nobody to answer
    FAST_PATH_APPENDS.labels("answered").inc()
    await response(scope, receive, send)


class AppendFastPath:
    """An append route of one session (one event, a batch)."""

    def __init__(
        self, app: ASGIApp, routes: Sequence[BaseRoute], stand_in: StandIn, answer: Answer
    ) -> None:
        """`routes`: the app's; `answer`: the code the route answers with,
        given the parsed body."""
        self.app = app
        self._answer = answer
        self._match = SessionRouteMatch(routes, stand_in)
        self.route = self._match.route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = self._match.session_of(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        try:
            revision = expected_revision(_if_match(scope))
        except BadRequest:
            await self.app(scope, receive, send)
            return

        async def respond(service: SessionService, _body: bytes, document: Any) -> Response:
            return await self._answer(service, key, document, revision)

        await _serve(self.route, respond, scope, receive, send)


class AppendsFastPath:
    """The route of appends to several sessions of one app."""

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        """`routes`: the app's."""
        self.app = app
        self._match = SessionRouteMatch(routes, APPENDS)
        self.route = self._match.route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app_name = self._match.app_of(scope)
        if app_name is None:
            await self.app(scope, receive, send)
            return

        async def respond(service: SessionService, body: bytes, document: Any) -> Response:
            return await append_to_sessions(service, app_name, document, len(body))

        await _serve(self.route, respond, scope, receive, send)
