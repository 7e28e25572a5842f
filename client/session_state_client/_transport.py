"""How each client reaches the server: the sync client through httpx, the
async client through aiohttp, with one meaning of `timeout` and one reading
of failures (which ones mean the request never reached the server).

aiohttp for the async client (issue 12), in place of a hand-written HTTP/1.1
that wrote headers unchecked and parsed answers leniently. Measured with
bench/client_cpu.py (50 concurrent appends, Python 3.11): 0.44 ms of client
CPU per append against 0.34 ms for the hand-written one and 1.94 ms for one
shared httpx.AsyncClient (its connection pool, httpx issue #3215). Most of
the difference is two more event-loop turns per request with a body: aiohttp
writes it in a task of its own, started eagerly only from Python 3.12.
"""

import asyncio
import contextlib
import io
import re
from collections.abc import Mapping
from typing import Any

import aiohttp
import httpx
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from session_state_client._exceptions import APIConnectionError, APITimeoutError
from session_state_client._requests import WireAnswer

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


def checked_api_key(api_key: str) -> str:
    """The key, refused before anything is sent if it cannot be a header value."""
    if not _HEADER_VALUE.fullmatch(api_key):
        raise ValueError(
            "api_key must be printable ASCII without surrounding whitespace "
            "(a CR or LF would start a new header)"
        )
    return api_key


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


def httpx_failure(error: httpx.TransportError) -> tuple[APIConnectionError, bool]:
    """The error to raise, and whether the request may have reached the server."""
    sent = not isinstance(error, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
    if isinstance(error, httpx.TimeoutException):
        return APITimeoutError(f"request timed out: {error!r}"), sent
    return APIConnectionError(f"connection failed: {error!r}"), sent


# aiohttp's errors before a request was written: no connection could be had.
_NOT_SENT = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)


def aiohttp_failure(error: aiohttp.ClientError | TimeoutError) -> tuple[APIConnectionError, bool]:
    """The error to raise, and whether the request may have reached the server."""
    sent = not isinstance(error, _NOT_SENT)
    if isinstance(error, TimeoutError):  # aiohttp's ServerTimeoutError is one
        return APITimeoutError(f"request timed out: {error!r}"), sent
    return APIConnectionError(f"connection failed: {error!r}"), sent


# -- the async client's connections ---------------------------------------------


class AiohttpTransport:
    """Requests to one base URL through an aiohttp ClientSession.

    A session belongs to the event loop it was made on. ADK's sync
    `Runner.run` runs each call in a new thread on a new loop: a session of
    our own is then replaced by one made on the caller's loop. A caller's
    session (`http_client=`) is used as it is, on its own loop."""

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
        self._owns_session = session is None
        self._session = session
        self._loop: asyncio.AbstractEventLoop | None = None

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

    def _current_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._session
        if loop is self._loop and session is not None:
            return session
        if self._owns_session:
            if session is not None:
                _abandon(session)
            session = self._session = self._new_session()
        elif session is None:  # pragma: no cover - set in __init__ when not ours
            raise RuntimeError("no aiohttp session")
        self._loop = loop
        return session

    async def send(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any],
        body: bytes | None,
        headers: Mapping[str, str],
    ) -> WireAnswer:
        session = self._current_session()
        url = self._base_url + path
        request_headers = headers if self._owns_session else {**self._headers, **headers}
        data: bytes | io.BytesIO | None = body
        if body is not None and len(body) > STREAMED_BODY_BYTES:
            data = io.BytesIO(body)
        async with session.request(
            method,
            URL(url, encoded=True),
            params=params or None,
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

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is None or not self._owns_session:
            return
        if self._loop is asyncio.get_running_loop():
            await session.close()
        else:
            _abandon(session)


def _abandon(session: aiohttp.ClientSession) -> None:
    """Closes a session whose event loop is gone or elsewhere, awaiting
    nothing (aiohttp's connector has no public synchronous close)."""
    connector = session.connector
    session.detach()
    if connector is not None:
        with contextlib.suppress(RuntimeError):  # raised when its event loop is closed
            connector._close()
