"""Refuses request bodies above the configured size with 413, before they are
read into memory whole."""

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..core.errors import PayloadTooLarge
from .problems import service_error_response


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    def _error(self) -> PayloadTooLarge:
        return PayloadTooLarge(f"the request body is larger than {self.max_body_bytes} bytes")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body_bytes:
                await service_error_response(self._error())(scope, receive, send)
                return

        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    # Chunked bodies have no Content-Length: stop at the limit.
                    raise self._error()
            return message

        await self.app(scope, limited_receive, send)
