"""A text/event-stream response of a live stream (app.streams.live), as ASGI.

Each message is sent when the reader has taken the ones before: uvicorn's
send waits while the connection's buffer is full, so a slow reader costs its
buffer and one message here, never a queue. A reader that takes nothing for
`send_timeout` seconds is cut off (its connection aborted): it resumes with
Last-Event-ID and loses nothing. A graceful shutdown ends the stream cleanly
(app.http.uvicorn_protocol tells it), so clients reconnect to another process.
"""

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..core.metrics import STREAMS_CUT, STREAMS_OPEN
from ..http.uvicorn_protocol import CONNECTION_CONTROL, ConnectionControl
from .live import StreamItem, event_stream_bytes

logger = logging.getLogger("session_state.streams.live")

EVENT_STREAM_MEDIA_TYPE = "text/event-stream"
# The first bytes: how long EventSource waits before reconnecting, and a
# comment so that the reader sees the stream open before any change.
STREAM_OPENING = b"retry: 1000\n: open\n\n"


class EventStreamResponse(Response):
    """A Response (so that routes may return it) that sends its own messages."""

    def __init__(
        self,
        items: AsyncGenerator[StreamItem, None],
        *,
        send_timeout: float,
        on_close: Callable[[], None] = lambda: None,
    ) -> None:
        """`on_close` runs however the response ends, even unsent."""
        super().__init__(status_code=200)
        self.items = items
        self.on_close = on_close
        self.send_timeout = send_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._respond(scope, receive, send)
        finally:
            self.on_close()

    async def _respond(self, scope: Scope, receive: Receive, send: Send) -> None:
        control: ConnectionControl | None = scope.get("extensions", {}).get(CONNECTION_CONTROL)
        stream_headers = {
            "content-type": EVENT_STREAM_MEDIA_TYPE + "; charset=utf-8",
            "cache-control": "no-cache",
            "x-accel-buffering": "no",  # proxies such as nginx must not buffer it
        }
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(k.encode(), v.encode()) for k, v in stream_headers.items()],
            }
        )
        STREAMS_OPEN.inc()
        try:
            await self._stream(scope, receive, send, control)
        finally:
            STREAMS_OPEN.dec()

    async def _stream(
        self, scope: Scope, receive: Receive, send: Send, control: ConnectionControl | None
    ) -> None:
        sending = asyncio.create_task(self._send_all(send))
        leaving = asyncio.create_task(_disconnected(receive))
        waits: set[asyncio.Task[object]] = {sending, leaving}
        if control is not None:
            waits.add(asyncio.create_task(control.shutting_down.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
            for task in waits:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if leaving.done() and not leaving.cancelled():
            return  # the reader went away
        if sending.done() and not sending.cancelled() and sending.result() == "too slow":
            STREAMS_CUT.inc()
            logger.info("live stream cut off: its reader took nothing for %ss", self.send_timeout)
            if control is not None:
                control.abort()
                # Its connection_lost runs soon: then the server sees the
                # reader gone, not a response left unfinished.
                for _ in range(3):
                    await asyncio.sleep(0)
            return
        # The stream ended (deleted) or the server is shutting down.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.send_timeout):  # not wait_for: see app.streams.changes
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send_all(self, send: Send) -> str:
        """ "ended" when the items end, "too slow" when a send waited past
        the timeout (nothing of that message was written)."""
        async with contextlib.aclosing(self.items) as items:
            if not await self._send(send, STREAM_OPENING):
                return "too slow"
            async for item in items:
                if not await self._send(send, event_stream_bytes(item)):
                    return "too slow"
        return "ended"

    async def _send(self, send: Send, body: bytes) -> bool:
        message = {"type": "http.response.body", "body": body, "more_body": True}
        try:
            async with asyncio.timeout(self.send_timeout):  # not wait_for: see app.streams.changes
                await send(message)
        except TimeoutError:
            return False
        return True


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
