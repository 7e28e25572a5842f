"""How each client reaches the server: the sync client through httpx, the
async client through aiohttp, both with one `send`, one meaning of `timeout`
and one reading of failures (which ones mean the request never reached the
server).

aiohttp for the async client: an HTTP/1.1 client that checks the headers it
writes and parses answers strictly, at little more client CPU than a
hand-written one and far less than a shared httpx.AsyncClient (its connection
pool); docs/performance.md, "Where the time goes", and the README give the
figures. Most of its extra cost is two more event-loop turns per request with
a body: aiohttp writes it in a task of its own, started eagerly only from
Python 3.12.
"""

import asyncio
import atexit
import contextlib
import io
import os
import re
import threading
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import httpx
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from session_state_client._exceptions import (
    APIConnectionError,
    APITimeoutError,
    error_from_response,
)
from session_state_client._requests import WireAnswer
from session_state_client._streams import STREAM_CONNECT_TIMEOUT, STREAM_READ_TIMEOUT

MAX_CONNECTIONS = 100  # as httpx's default pool
# Below uvicorn's default keep-alive of 5 s, so that a connection is not reused
# just as the server closes it.
KEEPALIVE_SECONDS = 4.0
# Larger bodies go as a stream, written in chunks that let other tasks run
# (aiohttp warns about bytes above 1 MiB).
STREAMED_BODY_BYTES = 1024 * 1024

# A header value as RFC 9110 allows it and httpx sends it: visible ASCII,
# spaces and tabs; CR and LF above all never (they would start a new header).
_HEADER_VALUE = re.compile(r"[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?")


def checked_api_key(api_key: str, given_as: str = "api_key") -> str:
    """The key (or token), refused before anything is sent if it cannot be a
    header value."""
    if not isinstance(api_key, str) or not _HEADER_VALUE.fullmatch(api_key):
        raise ValueError(
            f"{given_as} must be a string of printable ASCII without surrounding whitespace "
            "(a CR or LF would start a new header)"
        )
    return api_key


def checked_base_url(base_url: object, given_as: str = "base_url") -> str:
    """The server's URL without its trailing slash, refused at construction
    unless it is an http(s) URL with a host: "127.0.0.1:8000" would
    otherwise fail only at the first request, each client in its own way."""
    example = "e.g. http://127.0.0.1:8000"
    if not isinstance(base_url, str):
        raise TypeError(f"{given_as} must be a string ({example}), not {type(base_url).__name__}")
    parts = urlsplit(base_url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"{given_as} must start with http:// or https:// and name a host ({example}): "
            f"{base_url!r}"
        )
    try:
        parts.port  # noqa: B018  (urllib checks the port only when it is read)
    except ValueError:
        raise ValueError(f"{given_as} has a bad port ({example}): {base_url!r}") from None
    if not parts.hostname:
        raise ValueError(f"{given_as} names no host ({example}): {base_url!r}")
    if parts.query or parts.fragment:
        raise ValueError(
            f"{given_as} must not have a query or fragment (a base path is kept): {base_url!r}"
        )
    return base_url.strip().rstrip("/")


# -- timeouts: a bound on getting a connection and on each read ----------------


def client_timeout(timeout: float | httpx.Timeout) -> aiohttp.ClientTimeout:
    """httpx's timeout as aiohttp's, with the same meaning: `connect` bounds
    opening a connection (TCP and TLS), `read` each wait for data from the
    server (not the whole answer), `pool` the wait for a free connection.
    aiohttp has no write bound: its read timer runs from the moment the
    request is written, so a stalled write ends with the read bound."""
    bounds = httpx.Timeout(timeout)
    acquire = None  # aiohttp's `connect`: waiting for a free connection, then connecting
    if bounds.pool is not None and bounds.connect is not None:
        acquire = bounds.pool + bounds.connect
    return aiohttp.ClientTimeout(
        total=None, connect=acquire, sock_connect=bounds.connect, sock_read=bounds.read
    )


# -- failures ------------------------------------------------------------------


# What each library raises when a request got no answer.
HTTPX_ERRORS = (httpx.TransportError,)
AIOHTTP_ERRORS = (aiohttp.ClientError, TimeoutError)


def httpx_failure(
    error: httpx.TransportError, method: str, url: str
) -> tuple[APIConnectionError, bool]:
    """The error to raise, naming the request, and whether the request may
    have reached the server."""
    sent = not isinstance(error, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
    if isinstance(error, httpx.TimeoutException):
        waiting = _HTTPX_WAITS.get(type(error), "for the server")
        return APITimeoutError(f"{method} {url}: timed out waiting {waiting}"), sent
    reason = _readable(str(error)) or type(error).__name__
    if isinstance(error, httpx.ConnectError):
        return APIConnectionError(f"{method} {url}: could not connect ({reason})"), sent
    return APIConnectionError(f"{method} {url}: connection failed ({reason})"), sent


def _readable(reason: str) -> str:
    """The OS's words without the errno ("[Errno 111] Connection refused")."""
    return _ERRNO.sub("", reason)


_ERRNO = re.compile(r"\[Errno -?\d+\] ")

_HTTPX_WAITS: dict[type[httpx.TimeoutException], str] = {
    httpx.ConnectTimeout: "to connect",
    httpx.PoolTimeout: "for a free connection",
    httpx.ReadTimeout: "for the answer",
    httpx.WriteTimeout: "to send the request",
}

# aiohttp's errors before a request was written: no connection could be had.
_NOT_SENT = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)


def aiohttp_failure(
    error: aiohttp.ClientError | TimeoutError, method: str, url: str
) -> tuple[APIConnectionError, bool]:
    """The error to raise, naming the request, and whether the request may
    have reached the server."""
    sent = not isinstance(error, _NOT_SENT)
    if isinstance(error, TimeoutError):  # aiohttp's ServerTimeoutError is one
        waiting = "to connect" if not sent else "for the answer"
        return APITimeoutError(f"{method} {url}: timed out waiting {waiting}"), sent
    if isinstance(error, aiohttp.ClientConnectorError):
        # Its own text repeats the host and an "ssl:default"; the OS's reason is the news.
        os_error = error.os_error
        reason = os.strerror(os_error.errno) if os_error.errno else _readable(str(os_error))
        return APIConnectionError(f"{method} {url}: could not connect ({reason})"), sent
    reason = str(error) or type(error).__name__
    return APIConnectionError(f"{method} {url}: connection failed ({reason})"), sent


# -- the sync client's connections ----------------------------------------------


class HttpxTransport:
    """Requests to one base URL through an httpx.Client: one of its own, or
    the caller's (`http_client=`), whose base URL, if it has one, and
    timeout are kept, and which is left open."""

    def __init__(
        self,
        base_url: str,
        headers: Mapping[str, str],
        timeout: float | httpx.Timeout,
        client: httpx.Client | None,
    ) -> None:
        self._owns_client = client is None
        self._client = client or httpx.Client(base_url=base_url, timeout=timeout)
        if client is not None and not str(client.base_url):
            self._client.base_url = httpx.URL(base_url)
        self._client.headers.update(headers)

    def send(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any],
        body: bytes | None,
        headers: Mapping[str, str],
    ) -> httpx.Response:
        return self._client.request(method, path, params=params, content=body, headers=headers)

    def url_of(self, path: str) -> str:
        return str(self._client.base_url).rstrip("/") + path

    def stream_lines(self, path: str, headers: Mapping[str, str]) -> Iterator[str]:
        """The lines of a text/event-stream answer; the error of any other.
        Closing the iterator closes the connection."""
        timeout = httpx.Timeout(STREAM_READ_TIMEOUT, connect=STREAM_CONNECT_TIMEOUT)
        with self._client.stream("GET", path, headers=headers, timeout=timeout) as response:
            if response.status_code != 200:
                response.read()
                raise error_from_response(response)
            yield from response.iter_lines()

    def close(self) -> None:
        """Closes the connections of the client made here (not a caller's)."""
        if self._owns_client:
            self._client.close()


# -- the async client's connections ---------------------------------------------


class _LoopConnections:
    """One event loop's aiohttp session, and the async generator that closes
    it when the loop shuts down: `asyncio.run` (and so ADK's sync
    `Runner.run`, once per call) finalizes every async generator begun on
    its loop while the loop still runs, so the session is closed there,
    awaited, before the loop closes."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        session: aiohttp.ClientSession,
        forget: Callable[["_LoopConnections"], None],
    ) -> None:
        self.loop = loop
        self.session = session
        self._forget = forget
        self.closer = self._close_at_shutdown()

    async def _close_at_shutdown(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            self._forget(self)
            await self.close()

    async def close(self) -> None:
        if self.loop.is_running() and not self.loop.is_closed():
            await self.session.close()
        else:  # finalized by hand after the loop closed (see `finish_closer`)
            _abandon(self.session)

    def finish_closer(self) -> None:
        """Ends the closer without its loop (closed, or never shut down), so
        that the loop's finalizer never runs it on a closed loop."""
        closing = self.closer.aclose()
        with contextlib.suppress(StopIteration, RuntimeError):
            closing.send(None)
        closing.close()


class AiohttpTransport:
    """Requests to one base URL through aiohttp, from any thread and any
    event loop at once.

    An aiohttp session belongs to the loop it was made on, and ADK's sync
    `Runner.run` runs each call in a new thread on a new loop: each loop gets
    a session of its own (its own connection pool), closed when that loop
    shuts down, so nothing is left behind per call. A caller's session
    (`http_client=`) is used as it is, on its own loop only."""

    def __init__(
        self,
        base_url: str,
        headers: Mapping[str, str],
        timeout: float | httpx.Timeout,
        session: aiohttp.ClientSession | None,
    ) -> None:
        # Quoted once here; the paths added to it are already percent-encoded
        # and must reach the wire as they are ("%2F", "%2E" kept).
        self._base_url = str(URL(base_url))
        self._headers = dict(headers)
        self._timeout = client_timeout(timeout)
        self._given_session = session
        self._by_loop: dict[asyncio.AbstractEventLoop, _LoopConnections] = {}
        # Reentrant: a closer finished under it forgets its loop under it too.
        self._lock = threading.RLock()
        _open_transports.add(self)

    def _new_session(self) -> aiohttp.ClientSession:
        # The proxy of HTTP_PROXY / HTTPS_PROXY (less NO_PROXY), as aiohttp
        # reads them for trust_env, looked up once per session: trust_env
        # itself would also read ~/.netrc on every request, in a thread, and
        # refuse our Authorization header for a host listed there.
        proxy: URL | None = None
        proxy_auth: aiohttp.BasicAuth | None = None
        with contextlib.suppress(LookupError):
            proxy, proxy_auth = get_env_proxy_for_url(URL(self._base_url))
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=MAX_CONNECTIONS, keepalive_timeout=KEEPALIVE_SECONDS
            ),
            headers=self._headers,
            timeout=self._timeout,
            # The API sets no cookies: no cookie jar to consult on every request.
            cookie_jar=aiohttp.DummyCookieJar(),
            proxy=proxy,
            proxy_auth=proxy_auth,
        )

    async def _session(self) -> aiohttp.ClientSession:
        if self._given_session is not None:
            return self._given_session
        loop = asyncio.get_running_loop()
        connections = self._by_loop.get(loop)  # a dict read: safe without the lock
        if connections is None:
            connections = await self._open(loop)
        return connections.session

    async def _open(self, loop: asyncio.AbstractEventLoop) -> _LoopConnections:
        with self._lock:
            self._forget_closed_loops()
            connections = self._by_loop.get(loop)
            if connections is not None:
                return connections
            connections = _LoopConnections(loop, self._new_session(), self._forget)
            self._by_loop[loop] = connections
        # Begun here, on its loop, so that the loop's shutdown finalizes it.
        await anext(connections.closer)
        return connections

    def _forget(self, connections: _LoopConnections) -> None:
        with self._lock:
            if self._by_loop.get(connections.loop) is connections:
                del self._by_loop[connections.loop]

    def _forget_closed_loops(self) -> None:
        """Sessions of loops closed without shutting down their async
        generators (a loop closed by hand) are let go here, and at exit."""
        for loop in [loop for loop in self._by_loop if loop.is_closed()]:
            self._by_loop.pop(loop).finish_closer()

    async def send(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any],
        body: bytes | None,
        headers: Mapping[str, str],
    ) -> WireAnswer:
        session = await self._session()
        url = self._base_url + path
        request_headers = headers if self._given_session is None else {**self._headers, **headers}
        data: bytes | io.BytesIO | None = body
        if body is not None and len(body) > STREAMED_BODY_BYTES:
            data = io.BytesIO(body)
        async with session.request(
            method,
            URL(url, encoded=True),
            # Repeated parameters (label=...) as pairs: aiohttp takes no lists.
            params=_query_pairs(params) or None,
            data=data,
            headers=request_headers,
        ) as response:
            content = await response.read()
            return WireAnswer(
                response.status,
                response.headers,
                content,
                reason=response.reason,
                method=method,
                url=response.url,
            )

    def url_of(self, path: str) -> str:
        return self._base_url + path

    async def stream_lines(self, path: str, headers: Mapping[str, str]) -> AsyncIterator[str]:
        """The lines of a text/event-stream answer; the error of any other.
        Closing the iterator closes the connection."""
        session = await self._session()
        request_headers = headers if self._given_session is None else {**self._headers, **headers}
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=STREAM_CONNECT_TIMEOUT, sock_read=STREAM_READ_TIMEOUT
        )
        async with session.get(
            URL(self._base_url + path, encoded=True), headers=request_headers, timeout=timeout
        ) as response:
            if response.status != 200:
                content = await response.read()
                answer = WireAnswer(
                    response.status,
                    response.headers,
                    content,
                    reason=response.reason,
                    method="GET",
                    url=response.url,
                )
                raise error_from_response(answer.to_httpx())
            async for line in response.content:
                yield line.decode()

    async def aclose(self) -> None:
        """Closes the connections of every loop: this loop's awaited, those
        of loops running elsewhere on their own loop, the others at once."""
        with self._lock:
            everything, self._by_loop = list(self._by_loop.values()), {}
        current = asyncio.get_running_loop()
        for connections in everything:
            if connections.loop is current:
                await connections.closer.aclose()
            else:
                _close_elsewhere(connections)

    def close(self) -> None:
        """`aclose` for synchronous code: the loops' sessions are closed on
        their own loops where those still run, at once where not."""
        with self._lock:
            everything, self._by_loop = list(self._by_loop.values()), {}
        for connections in everything:
            _close_elsewhere(connections)


def _close_elsewhere(connections: _LoopConnections) -> None:
    loop = connections.loop
    if loop.is_closed():
        connections.finish_closer()
        return
    if loop.is_running():
        try:
            running_here = asyncio.get_running_loop() is loop
        except RuntimeError:
            running_here = False
        if running_here:  # a sync close called from async code on this loop
            loop.create_task(_finalize(connections))
        else:
            asyncio.run_coroutine_threadsafe(_finalize(connections), loop)
        return
    loop.run_until_complete(_finalize(connections))  # a loop that is idle


async def _finalize(connections: _LoopConnections) -> None:
    await connections.closer.aclose()


def _abandon(session: aiohttp.ClientSession) -> None:
    """Closes a session whose event loop is gone, awaiting nothing
    (aiohttp's connector has no public synchronous close)."""
    connector = session.connector
    session.detach()
    if connector is not None:
        with contextlib.suppress(RuntimeError):  # raised when its event loop is closed
            connector._close()


# Transports alive at interpreter exit let go of the sessions of loops that
# have ended, so that nothing warns of unclosed sessions then.
_open_transports: "weakref.WeakSet[AiohttpTransport]" = weakref.WeakSet()


@atexit.register
def _let_go_at_exit() -> None:
    for transport in list(_open_transports):
        with transport._lock:
            transport._forget_closed_loops()


def _query_pairs(params: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The query as (name, value) pairs, a list value giving a pair each."""
    pairs: list[tuple[str, Any]] = []
    for name, value in params.items():
        if isinstance(value, list | tuple):
            pairs.extend((name, item) for item in value)
        else:
            pairs.append((name, value))
    return pairs
