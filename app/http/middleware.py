"""Per-request context: request id (accepted or generated, echoed back),
metrics by route template, and one JSON access log line."""

import logging
import time

from prometheus_client import Counter, Histogram
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..core.metrics import HTTP_LATENCY, HTTP_REQUESTS
from ..core.observability import (
    REQUEST_ID_HEADER,
    current_request_id,
    request_id_from,
    trace_without_data,
)
from .problems import unexpected_error_response

access_logger = logging.getLogger("session_state.access")
logger = logging.getLogger("session_state")

_REQUEST_ID_HEADER_BYTES = REQUEST_ID_HEADER.lower().encode()
UNMATCHED_ROUTE = "unmatched"


# Metric children by (method, route template, status), looked up once each
# (prometheus_client's labels() takes a lock and builds a key per call);
# bounded, as methods are whatever a client sends.
_MAX_COUNTED = 1024


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._counted: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = None
        for name, value in scope["headers"]:
            if name == _REQUEST_ID_HEADER_BYTES:
                given = value.decode("latin-1")
                break
        request_id = request_id_from(given)
        token = current_request_id.set(request_id)
        started = time.perf_counter()
        status = 500

        started_response = False

        async def send_with_request_id(message: Message) -> None:
            nonlocal status, started_response
            if message["type"] == "http.response.start":
                started_response = True
                status = message["status"]
                MutableHeaders(scope=message)[REQUEST_ID_HEADER] = request_id
            await send(message)

        try:
            await self.app(scope, receive, send_with_request_id)
        except Exception as error:
            if started_response:
                # Too late for a problem response; logged without data (the
                # server would log the exception's message, which may hold it).
                logger.error(
                    "unexpected error after the response started\n%s", trace_without_data(error)
                )
                return
            await unexpected_error_response(error)(scope, receive, send_with_request_id)
        finally:
            elapsed = time.perf_counter() - started
            route = scope.get("route")
            template = getattr(route, "path", UNMATCHED_ROUTE)
            labels = (scope["method"], template, status)
            counted = self._counted.get(labels)
            if counted is None:
                counted = _children(*labels)
                if len(self._counted) < _MAX_COUNTED:
                    self._counted[labels] = counted
            counted[0].inc()
            counted[1].observe(elapsed)
            if access_logger.isEnabledFor(logging.INFO):
                access_logger.info(
                    "request",
                    extra={
                        "method": scope["method"],
                        "path": scope["path"],
                        "route": template,
                        "status": status,
                        "duration_ms": round(elapsed * 1000, 3),
                    },
                )
            current_request_id.reset(token)


def _children(method: str, template: str, status: int) -> tuple[Counter, Histogram]:
    labels = (method, template, str(status))
    return HTTP_REQUESTS.labels(*labels), HTTP_LATENCY.labels(*labels)
