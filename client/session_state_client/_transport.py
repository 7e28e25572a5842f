"""A lean HTTP/1.1 transport for httpx, on plain asyncio streams.

Measured under 50 concurrent appends, httpx's default transport (httpcore on
anyio) spent about half of the client's CPU per request: cancel scopes, locks,
socket probes and h11 state machines for every call. This transport keeps
idle keep-alive connections in a list and writes and parses HTTP/1.1 itself,
for plain `http://` servers only. It serves httpx (`handle_async_request`)
and, through `exchange`, the async client's direct path (_direct.py).
"""

import asyncio
import contextlib
import time
from collections.abc import Mapping
from types import TracebackType
from typing import NamedTuple

import httpx

MAX_HEADER_BYTES = 64 * 1024
DEFAULT_MAX_CONNECTIONS = 100
DEFAULT_MAX_IDLE_CONNECTIONS = 20
# Below uvicorn's default keep-alive of 5 s, so that a connection is not reused
# just as the server closes it.
IDLE_EXPIRY_SECONDS = 4.0
_NO_BODY_STATUSES = frozenset({204, 304})


class _Connection:
    __slots__ = ("idle_since", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def is_reusable(self) -> bool:
        # A server that closed an idle connection has delivered its EOF to the
        # event loop by the time the connection is taken from the pool.
        fresh = time.monotonic() - self.idle_since < IDLE_EXPIRY_SECONDS
        return fresh and not (self.reader.at_eof() or self.writer.is_closing())

    def close(self) -> None:
        self.writer.close()


def _request_head(request: httpx.Request) -> bytes:
    lines = [b"%s %s HTTP/1.1" % (request.method.encode(), request.url.raw_path)]
    lines += [b"%s: %s" % (name, value) for name, value in request.headers.raw]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _parse_head(head: bytes) -> tuple[bytes, int, bytes, list[tuple[bytes, bytes]]]:
    status_line, *header_lines = head[:-4].split(b"\r\n")
    version, _, rest = status_line.partition(b" ")
    code, _, reason = rest.partition(b" ")
    if not version.startswith(b"HTTP/1.") or not code.isdigit():
        raise ValueError(f"not an HTTP/1.1 status line: {status_line!r}")
    headers = []
    for line in header_lines:
        name, colon, value = line.partition(b":")
        if not colon:
            raise ValueError(f"malformed header line: {line!r}")
        headers.append((name.strip(), value.strip()))
    return version, int(code), reason, headers


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            # Trailers, if any, end with an empty line.
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readexactly(2)


class Origin(NamedTuple):
    host: str
    port: int


class Answer(NamedTuple):
    status: int
    reason: bytes
    headers: list[tuple[bytes, bytes]]
    content: bytes


async def _read_answer(reader: asyncio.StreamReader, method: str) -> tuple[Answer, bool]:
    """The response, and whether the connection may be used again."""
    while True:
        version, status, reason, headers = _parse_head(await reader.readuntil(b"\r\n\r\n"))
        if not 100 <= status < 200:
            break  # 1xx interim responses (103 Early Hints) are skipped
    connection_header = (_header(headers, b"connection") or b"").lower()
    if version == b"HTTP/1.0":
        keep_alive = connection_header == b"keep-alive"
    else:
        keep_alive = connection_header != b"close"
    length = _header(headers, b"content-length")
    if method == "HEAD" or status in _NO_BODY_STATUSES:
        content = b""
    elif (_header(headers, b"transfer-encoding") or b"").lower().endswith(b"chunked"):
        content = await _read_chunked(reader)
    elif length is not None:
        if not length.isdigit():
            raise ValueError(f"bad Content-Length {length!r}")
        content = await reader.readexactly(int(length))
    else:
        content = await reader.read()  # delimited by the end of the connection
        keep_alive = False
    return Answer(status, reason, headers, content), keep_alive


class LeanAsyncTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over asyncio streams, with a pool of keep-alive connections.

    Only `http://` URLs; an https base URL keeps httpx's own transport.
    """

    def __init__(
        self,
        *,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_idle_connections: int = DEFAULT_MAX_IDLE_CONNECTIONS,
    ) -> None:
        self._idle: list[_Connection] = []
        self._max_idle = max_idle_connections
        self._slots = asyncio.Semaphore(max_connections)
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            raise httpx.UnsupportedProtocol(
                "the lean transport speaks plain http only", request=request
            )
        body = await request.aread()
        if "transfer-encoding" in request.headers:  # a streamed body, sent whole
            body = (b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)) if body else b"0\r\n\r\n"
        answer = await self.exchange(
            Origin(request.url.host, request.url.port or 80),
            request.method,
            _request_head(request) + body,
            # httpx hands each request its timeouts: connect, read, write, pool.
            request.extensions.get("timeout", {}),
            request,
        )
        return httpx.Response(
            answer.status,
            headers=answer.headers,
            stream=httpx.ByteStream(answer.content),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": answer.reason},
            request=request,
        )

    async def exchange(
        self,
        origin: "Origin",
        method: str,
        message: bytes,
        timeouts: Mapping[str, float | None],
        request: httpx.Request | None = None,
    ) -> "Answer":
        """Sends `message` (request head and body) on a pooled connection and
        reads the answer. Raises httpx's transport errors; `request`, when
        given, is attached to them."""
        # A timer costs as much as the rest of the wait: arm one only for a
        # wait that can take time.
        if self._slots.locked():
            try:
                async with asyncio.timeout(timeouts.get("pool")):
                    await self._slots.acquire()
            except TimeoutError as error:
                raise httpx.PoolTimeout("no connection free in time", request=request) from error
        else:
            await self._slots.acquire()
        try:
            connection = await self._connection(origin, timeouts.get("connect"), request)
            try:
                answer = await self._exchange(connection, method, message, timeouts, request)
            except BaseException:
                # Cancelled or failed half way: the connection's state is unknown.
                connection.close()
                raise
        finally:
            self._slots.release()
        return answer

    async def _connection(
        self, origin: "Origin", connect_timeout: float | None, request: httpx.Request | None
    ) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if connection.is_reusable():
                return connection
            connection.close()
        try:
            async with asyncio.timeout(connect_timeout):
                reader, writer = await asyncio.open_connection(
                    origin.host, origin.port, limit=MAX_HEADER_BYTES
                )
        except TimeoutError as error:
            raise httpx.ConnectTimeout("connect timed out", request=request) from error
        except OSError as error:
            raise httpx.ConnectError(str(error), request=request) from error
        return _Connection(reader, writer)

    async def _exchange(
        self,
        connection: _Connection,
        method: str,
        message: bytes,
        timeouts: Mapping[str, float | None],
        request: httpx.Request | None,
    ) -> "Answer":
        writer, reader = connection.writer, connection.reader
        try:
            writer.write(message)
            if writer.transport.get_write_buffer_size():  # the socket took only part of it
                async with asyncio.timeout(timeouts.get("write")):
                    await writer.drain()
        except TimeoutError as error:
            raise httpx.WriteTimeout("write timed out", request=request) from error
        except OSError as error:
            raise httpx.WriteError(str(error), request=request) from error
        try:
            async with asyncio.timeout(timeouts.get("read")):
                answer, keep_alive = await _read_answer(reader, method)
        except TimeoutError as error:
            raise httpx.ReadTimeout("read timed out", request=request) from error
        except asyncio.IncompleteReadError as error:
            raise httpx.RemoteProtocolError(
                "the server closed the connection before the response ended", request=request
            ) from error
        except asyncio.LimitOverrunError as error:
            raise httpx.RemoteProtocolError("headers too large", request=request) from error
        except ValueError as error:  # a malformed status line, header or chunk size
            raise httpx.RemoteProtocolError(str(error), request=request) from error
        except OSError as error:
            raise httpx.ReadError(str(error), request=request) from error
        if keep_alive and not self._closed and len(self._idle) < self._max_idle:
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            connection.close()
        return answer

    def abandon(self) -> None:
        """Closes the idle connections without awaiting anything: their event
        loop may be closed (a connection whose loop is gone is left to the
        garbage collector, which closes its socket)."""
        idle, self._idle = self._idle, []
        for connection in idle:
            with contextlib.suppress(RuntimeError):  # raised when its event loop is closed
                connection.writer.transport.abort()

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.aclose()
