"""uvicorn's httptools protocol, plus a timeout on the request head.

uvicorn has none: a client that connects and sends nothing, or sends part of a
head and then a byte now and then (slowloris), keeps its connection forever,
and a few thousand of them use up the file descriptors while every other
client is refused. Its keep-alive timer does not help: any byte cancels it,
even the blank lines that the parser skips between requests.

Here a connection is closed unless each request head is complete within
`request_head_timeout_seconds` of the connection's start or of the first byte
after an idle keep-alive gap (blank lines included). The clock stops when the
head is in and does not run while a request is in flight, so bodies, responses,
pipelined requests and the keep-alive gap are left alone. One timer serves all
of a connection's requests: it is not cancelled when a head is in but, when it
fires, stops or waits for the head begun since, so a request costs a clock
reading, not a timer.

uvicorn is given the class itself, which pickles by name for `--workers`: each
process reads the timeout from its settings, as the app does.
"""

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from ..core import json_codec
from ..core.config import get_settings

CONNECTION_CONTROL = "session_state.connection"
# The longest request target httptools parses; a longer one is a parser error.
MAX_URL_BYTES = 65535


class ConnectionControl:
    """What an app may do to its request's connection, beyond ASGI."""

    __slots__ = ("shutting_down", "transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.shutting_down = asyncio.Event()

    def abort(self) -> None:
        """Closes at once, dropping what is buffered (close() would wait
        to send it to a reader that does not read)."""
        self.transport.abort()


class _HeadWithBody(asyncio.Transport):
    """The transport one response is written through: its first write (the
    head, as uvicorn writes it on http.response.start) is held until the
    next (the body), so that both go in one system call and one packet
    instead of two; held alone (no body yet), it goes at the loop's next turn.
    A write system call is the largest single cost of an append
    (docs/performance.md, "Server CPU per append")."""

    __slots__ = ("_first", "_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None
        self._first = True

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            self._transport.write(held + bytes(data))
        elif self._first:
            self._first = False
            self._held = bytes(data)
            self._loop.call_soon(self._release)
        else:
            self._transport.write(data)

    def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        self._release()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)


class RequestHeadTimeoutProtocol(HttpToolsProtocol):
    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.request_head_timeout = get_settings().request_head_timeout_seconds
        self.head_started: float | None = None  # loop time; None once the head is in
        self.head_timer: asyncio.TimerHandle | None = None
        self.control: ConnectionControl | None = None  # set once connected

    def _head_begins(self) -> None:
        self.head_started = self.loop.time()
        if self.head_timer is None:
            self.head_timer = self.loop.call_later(self.request_head_timeout, self._check_head)

    def _check_head(self) -> None:
        self.head_timer = None
        if self.head_started is None:
            return
        remaining = self.head_started + self.request_head_timeout - self.loop.time()
        if remaining > 0:
            self.head_timer = self.loop.call_later(remaining, self._check_head)
        elif not self.transport.is_closing():
            self.logger.debug("request head timed out, closing the connection of %s", self.client)
            self.transport.close()

    def connection_made(  # type: ignore[override]
        self, transport: asyncio.Transport
    ) -> None:
        super().connection_made(transport)
        # One per connection: shutdown() reaches whichever request is in flight.
        self.control = ConnectionControl(transport)
        self._head_begins()

    def data_received(self, data: bytes) -> None:
        # uvicorn's keep-alive timer runs exactly while the connection idles
        # between requests (reading resumed, nothing in flight).
        if self.timeout_keep_alive_task is not None:
            self._head_begins()
        HttpToolsProtocol.data_received(self, data)  # not super(): this runs per read

    def on_headers_complete(self) -> None:
        self.head_started = None
        # A long response (a live stream) is told of a graceful shutdown, and
        # may cut a reader that takes nothing (app.streams.sse).
        extensions: dict[str, object] = self.scope.setdefault("extensions", {})  # type: ignore[assignment]  # uvicorn types extensions as dict[str, dict[object, object]]
        extensions[CONNECTION_CONTROL] = self.control
        previous = self.cycle
        HttpToolsProtocol.on_headers_complete(self)
        if self.cycle is not previous and self.cycle is not None:
            self.cycle.transport = _HeadWithBody(self.transport, self.loop)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to what its parser refuses, in the API's one error
        format (problem+json) instead of text/plain; the connection closes."""
        from .problems import problem_document

        if len(self.url) >= MAX_URL_BYTES - 1024:  # the parser stops near the limit
            detail = f"the request line is too long: a URL may hold at most {MAX_URL_BYTES} bytes"
        else:
            detail = f"the request is not valid HTTP/1.1 ({msg.rstrip('.')})"
        body = json_codec.dumps(problem_document(400, "bad_request", "Bad request", detail))
        head = [b"HTTP/1.1 400 Bad Request\r\n"]
        for name, value in self.server_state.default_headers:
            head.append(name + b": " + value + b"\r\n")
        head.append(b"content-type: application/problem+json\r\n")
        head.append(
            b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(b"".join(head) + body)
        self.transport.close()

    def shutdown(self) -> None:
        if self.control is not None:
            self.control.shutting_down.set()
        super().shutdown()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None
        super().connection_lost(exc)
