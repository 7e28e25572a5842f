"""The session read route served without FastAPI's request machinery.

After the append, a session read is the call every agent turn makes (ADK's
Runner reads the session first, the OpenAI Agents SDK's `get_items` is one),
and FastAPI's parameter solving alone costs more server CPU than the read's
statement (docs/performance.md). This middleware, beside the append's,
takes a GET of the session route whose query is empty or gives
`numRecentEvents` and `minRevision` as plain numbers, and answers through
the route's own code (`SessionService.get_session`, `session_response`,
`error_response`). Any other query (`afterTimestamp`, `compacted`,
`keepInvocations`, a repeated or unknown parameter, a value FastAPI would
refuse or read another way) goes on to
FastAPI unchanged, as does every request with a bad identifier, and a path
a route declared before this one matches (the user stream's). The route,
and those before it, are found among the app's routes as assembled
(app.sessions.fast_path_routes: off, and FastAPI serves, when the route is not the
one it stands in for).
"""

import re
from collections.abc import Sequence
from urllib.parse import unquote

from fastapi.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.metrics import FAST_PATH_READS
from . import rendering
from . import routes as sessions
from .domain import SessionKey
from .fast_path_routes import SessionRouteMatch, StandIn, answered
from .service import SessionService

# Every parameter the route declares, as (where, name): read here, or left
# to FastAPI (the fast path declines the request).
ROUTE_PARAMETERS = frozenset(
    {
        ("path", "app_name"),
        ("path", "user_id"),
        ("path", "session_id"),
        ("query", "num_recent_events"),
        ("query", "after_timestamp"),
        ("query", "min_revision"),
        ("query", "compacted"),
        ("query", "keep_invocations"),
    }
)
READ = StandIn(sessions.get_session, sessions.SESSION_PATH, "GET", ROUTE_PARAMETERS)
# The query parameters read here, by name as sent; the route's others,
# afterTimestamp (a float: FastAPI's reading of its forms is its own),
# compacted (a boolean, and a read that is rarely the hot one) and
# keepInvocations (only with compacted), are left to the route.
_NUMBERS = {"numRecentEvents": "num_recent_events", "minRevision": "min_revision"}
# At most 18 digits: always within the route's bound of 2**63 - 1.
_PLAIN_NUMBER = re.compile(r"[0-9]{1,18}")


def _numbers(query_string: bytes) -> dict[str, int] | None:
    """The query's numbers by argument name, when the query is one the fast
    path reads exactly as FastAPI would; None otherwise."""
    numbers: dict[str, int] = {}
    if not query_string:
        return numbers
    for pair in query_string.split(b"&"):
        name, equals, value = pair.partition(b"=")
        argument = _NUMBERS.get(unquote(name.decode("latin-1")))
        if not equals or argument is None or argument in numbers:
            return None
        text = unquote(value.decode("latin-1"))
        if not _PLAIN_NUMBER.fullmatch(text):
            return None
        numbers[argument] = int(text)
    return numbers


class ReadFastPath:
    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        """`routes`: the app's."""
        self.app = app
        self._match = SessionRouteMatch(routes, READ)
        # Set in the scope, so that metrics and logs label the request by the
        # template FastAPI would have matched.
        self.route = self._match.route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = self._match.session_of(scope)
        numbers = None if key is None else _numbers(scope["query_string"])
        if key is None or numbers is None:
            await self.app(scope, receive, send)
            return
        scope["route"] = self.route
        service: SessionService = scope["app"].state.service
        response = await answered(_read(service, key, numbers))
        FAST_PATH_READS.inc()
        await response(scope, receive, send)


async def _read(service: SessionService, key: SessionKey, numbers: dict[str, int]) -> Response:
    """The route's own reading of the session and its answer."""
    session = await service.get_session(
        key, numbers.get("num_recent_events"), None, numbers.get("min_revision")
    )
    return rendering.session_response(session)
