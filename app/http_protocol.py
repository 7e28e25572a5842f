"""uvicorn's httptools protocol, plus a timeout on the request head.

uvicorn has none: a client that connects and sends nothing, or sends part of a
head and then a byte now and then (slowloris), keeps its connection forever,
and a few thousand of them use up the file descriptors while every other
client is refused. Its keep-alive timer does not help: any byte cancels it,
even the blank lines the parser skips between requests.

Here a connection is closed unless each request head is complete within
`request_head_timeout_seconds`, counted from the connection's start, or from
the first byte after an idle keep-alive gap, or from the start of a pipelined
request. The clock stops at the end of the head, so bodies, responses and the
keep-alive gap are left alone; it costs one timer per request.

uvicorn is given the class itself, which pickles by name for `--workers`: each
process reads the timeout from its settings, as the app does.
"""

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from app.config import get_settings


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
        self.head_timer: asyncio.TimerHandle | None = None

    def _start_head_clock(self) -> None:
        self.head_timer = self.loop.call_later(self.request_head_timeout, self._head_timed_out)

    def _head_timed_out(self) -> None:
        self.head_timer = None
        if self.flow.read_paused:
            # uvicorn stopped reading (a pipelined request waits for the one
            # before it): the delay is the server's, not the client's.
            self._start_head_clock()
        elif not self.transport.is_closing():
            self.logger.debug("request head timed out, closing the connection from %s", self.client)
            self.transport.close()

    def connection_made(  # type: ignore[override]
        self, transport: asyncio.Transport
    ) -> None:
        super().connection_made(transport)
        self._start_head_clock()

    def data_received(self, data: bytes) -> None:
        # The keep-alive timer is armed only while the connection idles between
        # requests; whatever comes next is the next head, blank lines included.
        if self.timeout_keep_alive_task is not None and self.head_timer is None:
            self._start_head_clock()
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self.head_timer is None:  # a pipelined request
            self._start_head_clock()

    def on_headers_complete(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None
        super().connection_lost(exc)
