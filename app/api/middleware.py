"""Per-request context: request id (accepted or generated, echoed back),
metrics by route template, and one JSON access log line."""

import logging
import time

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..metrics import HTTP_LATENCY, HTTP_REQUESTS
from ..observability import (
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


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

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
            labels = (scope["method"], template, str(status))
            HTTP_REQUESTS.labels(*labels).inc()
            HTTP_LATENCY.labels(*labels).observe(elapsed)
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
