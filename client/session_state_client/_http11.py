"""HTTP/1.1 of the async client to a plain `http://` server, on asyncio streams.

Profiled under 50 concurrent appends, httpx spent about 0.55 ms of the
client's 0.69 ms of CPU per append: httpcore on anyio (cancel scopes, locks,
socket probes, h11) and its request building (URL parsing, header merging,
cookies, redirects). None of it applies to this client: one base URL, fixed
headers, an API that sets no cookies and sends no redirects. This module
keeps keep-alive connections in a list, writes the request bytes and parses
the answer itself (0.13 ms per append). Answers come back as httpx.Response
and failures as httpx's transport errors, so reading, retries and errors are
the same as on the httpx path (https, proxies, a caller's own http_client).
"""

import asyncio
import contextlib
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

import httpx

MAX_HEADER_BYTES = 64 * 1024
MAX_CONNECTIONS = 100
MAX_IDLE_CONNECTIONS = 20
# Below uvicorn's default keep-alive of 5 s, so that a connection is not reused
# just as the server closes it.
IDLE_EXPIRY_SECONDS = 4.0
_NO_BODY_STATUSES = frozenset({204, 304})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})

Headers = list[tuple[bytes, bytes]]


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


def _query_value(value: Any) -> str:
    # As httpx renders query values.
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "" if value is None else str(value)


def _parse_head(head: bytes) -> tuple[bytes, int, bytes, Headers]:
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


def _header(headers: Headers, name: bytes) -> bytes | None:
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


async def _read_response(
    reader: asyncio.StreamReader, method: str
) -> tuple[int, bytes, Headers, bytes, bool]:
    """Status, reason, headers, body, and whether the connection may be reused."""
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
    return status, reason, headers, content, keep_alive


class Http11Client:
    """Requests to one plain-http base URL over a pool of keep-alive connections."""

    def __init__(
        self, base_url: str, headers: Mapping[str, str], timeout: float | httpx.Timeout
    ) -> None:
        url = httpx.URL(base_url)
        if url.scheme != "http":
            raise ValueError(f"plain http only, not {base_url!r}")
        self._base_url = url
        self._host, self._port = url.host, url.port or 80
        self._base_path = url.raw_path.split(b"?", 1)[0].rstrip(b"/")
        common = {"Host": url.netloc.decode("ascii"), "Accept": "*/*", **headers}
        self._common_headers = b"\r\n".join(
            f"{name}: {value}".encode("latin-1") for name, value in common.items()
        )
        self._timeouts = httpx.Timeout(timeout).as_dict()
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(MAX_CONNECTIONS)
        self._closed = False

    async def send(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any],
        body: bytes | None,
        headers: Mapping[str, str],
    ) -> httpx.Response:
        # `path` comes from _requests, its segments already percent-encoded.
        target = self._base_path + path.encode("ascii")
        if params:
            query = {name: _query_value(value) for name, value in params.items()}
            target += b"?" + urlencode(query, quote_via=quote).encode("ascii")
        lines = [b"%s %s HTTP/1.1" % (method.encode("ascii"), target), self._common_headers]
        lines += [f"{name}: {value}".encode("latin-1") for name, value in headers.items()]
        if body is not None or method in _BODY_METHODS:
            lines.append(b"Content-Length: %d" % len(body or b""))
        message = b"\r\n".join(lines) + b"\r\n\r\n" + (body or b"")
        status, reason, answer_headers, content = await self._exchange(method, message)
        response = httpx.Response(
            status,
            headers=answer_headers,
            content=content,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason},
        )
        if status >= 400:
            # Errors carry the response; give it its request, as httpx would.
            response.request = httpx.Request(method, self._base_url.copy_with(raw_path=target))
        return response

    async def _exchange(self, method: str, message: bytes) -> tuple[int, bytes, Headers, bytes]:
        timeouts = self._timeouts
        # A timer costs as much as the rest of the wait: arm one only for a
        # wait that can take time.
        if self._slots.locked():
            try:
                async with asyncio.timeout(timeouts["pool"]):
                    await self._slots.acquire()
            except TimeoutError as error:
                raise httpx.PoolTimeout("no connection free in time") from error
        else:
            await self._slots.acquire()
        try:
            connection = await self._connection()
            try:
                return await self._exchange_on(connection, method, message)
            except BaseException:
                # Cancelled or failed half way: the connection's state is unknown.
                connection.close()
                raise
        finally:
            self._slots.release()

    async def _connection(self) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if connection.is_reusable():
                return connection
            connection.close()
        try:
            async with asyncio.timeout(self._timeouts["connect"]):
                reader, writer = await asyncio.open_connection(
                    self._host, self._port, limit=MAX_HEADER_BYTES
                )
        except TimeoutError as error:
            raise httpx.ConnectTimeout("connect timed out") from error
        except OSError as error:
            raise httpx.ConnectError(str(error)) from error
        return _Connection(reader, writer)

    async def _exchange_on(
        self, connection: _Connection, method: str, message: bytes
    ) -> tuple[int, bytes, Headers, bytes]:
        writer, reader = connection.writer, connection.reader
        try:
            writer.write(message)
            if writer.transport.get_write_buffer_size():  # the socket took only part of it
                async with asyncio.timeout(self._timeouts["write"]):
                    await writer.drain()
        except TimeoutError as error:
            raise httpx.WriteTimeout("write timed out") from error
        except OSError as error:
            raise httpx.WriteError(str(error)) from error
        try:
            async with asyncio.timeout(self._timeouts["read"]):
                status, reason, headers, content, keep_alive = await _read_response(reader, method)
        except TimeoutError as error:
            raise httpx.ReadTimeout("read timed out") from error
        except asyncio.IncompleteReadError as error:
            raise httpx.RemoteProtocolError(
                "the server closed the connection before the response ended"
            ) from error
        except asyncio.LimitOverrunError as error:
            raise httpx.RemoteProtocolError("headers too large") from error
        except ValueError as error:  # a malformed status line, header or chunk size
            raise httpx.RemoteProtocolError(str(error)) from error
        except OSError as error:
            raise httpx.ReadError(str(error)) from error
        if keep_alive and not self._closed and len(self._idle) < MAX_IDLE_CONNECTIONS:
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            connection.close()
        return status, reason, headers, content

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
