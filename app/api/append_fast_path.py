"""The append route served without FastAPI's request machinery.

Appends are the hot path of an agent service. Under 50 concurrent writers,
FastAPI's routing, parameter validation and exception layers cost about as
much server CPU per append as the append itself. This middleware sits inside
ours (request id, metrics, API keys, body limit), takes a well-formed
`POST .../events` and answers it through the same code as the route
(`appending.append`, `error_response`). Anything else, including every
request with a bad identifier or If-Match, goes on to FastAPI unchanged, so
its validation errors stay FastAPI's.
"""

from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from ..domain import SessionKey
from ..errors import BadRequest
from ..identifiers import name_problem, session_id_problem
from ..service import SessionService
from . import appending
from .bodies import decode_json
from .dependencies import expected_revision
from .encoded_paths import decode_segment
from .problems import error_response

_IF_MATCH = b"if-match"
# Every parameter the route declares, as (where, name): the fast path reads
# each of these itself (the body, raw, as the route does). A parameter added
# to the route must be served here too, or the fast path would answer
# without it: tests/test_append_fast_path.py fails until both agree.
ROUTE_PARAMETERS = frozenset(
    {("path", "app_name"), ("path", "user_id"), ("path", "session_id"), ("header", "if_match")}
)


def _session_key(path: str) -> SessionKey | None:
    """The session of an append path whose identifiers are all valid; `path`
    is percent-encoded (app.api.encoded_paths), each segment decoded here."""
    parts = path.split("/")
    if len(parts) != 8 or (parts[1], parts[3], parts[5], parts[7]) != (
        "apps",
        "users",
        "sessions",
        "events",
    ):
        return None
    app_name, user_id, session_id = map(decode_segment, (parts[2], parts[4], parts[6]))
    if name_problem(app_name) or name_problem(user_id) or session_id_problem(session_id):
        return None
    return SessionKey(app_name, user_id, session_id)


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


class AppendFastPath:
    def __init__(self, app: ASGIApp, route: BaseRoute) -> None:
        self.app = app
        # The route FastAPI would have matched, set in the scope so that
        # metrics and logs label the request by the same template.
        self.route = route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        key = _session_key(scope["path"])
        if key is None:
            await self.app(scope, receive, send)
            return
        try:
            revision = expected_revision(_if_match(scope))
        except BadRequest:
            await self.app(scope, receive, send)
            return
        scope["route"] = self.route
        service: SessionService = scope["app"].state.service
        try:
            body = await _read_body(receive)
            if body is None:
                return  # nobody to answer
            document = await decode_json(body, service.limits)
            response = await appending.append(service, key, document, revision)
        except Exception as error:
            known = error_response(error)
            if known is None:
                raise
            response = known
        await response(scope, receive, send)
