"""Requests of the async client written straight to its lean transport.

httpx builds every request through URL parsing, header merging, cookies, auth
and redirect handling: measured at about a third of the client's CPU per
append. A client that owns its lean transport (plain http, no proxy: see
_client._default_async_transport) knows none of that applies: its base URL
and headers are fixed, the API sets no cookies and sends no redirects. This
module writes the request bytes itself; answers still come back as
httpx.Response, so reading them is unchanged.
"""

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

import httpx

from session_state_client._transport import LeanAsyncTransport, Origin

# Set per request here, or not sent: no compressed answers, so the body needs
# no decoding.
_PER_REQUEST_HEADERS = {b"host", b"content-length", b"transfer-encoding", b"accept-encoding"}
_BODY_METHODS = {"POST", "PUT", "PATCH"}


def _query_value(value: Any) -> str:
    # As httpx renders query values.
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "" if value is None else str(value)


class DirectSender:
    def __init__(self, transport: LeanAsyncTransport, client: httpx.AsyncClient) -> None:
        base_url = client.base_url
        self._transport = transport
        self._base_url = base_url
        self._origin = Origin(base_url.host, base_url.port or 80)
        self._base_path = base_url.raw_path.split(b"?", 1)[0].rstrip(b"/")
        lines = [b"Host: " + base_url.netloc]
        lines += [
            name + b": " + value
            for name, value in client.headers.raw
            if name.lower() not in _PER_REQUEST_HEADERS
        ]
        self._common_headers = b"\r\n".join(lines)
        self._timeouts = client.timeout.as_dict()

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
        answer = await self._transport.exchange(self._origin, method, message, self._timeouts)
        response = httpx.Response(
            answer.status,
            headers=answer.headers,
            content=answer.content,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": answer.reason},
        )
        if answer.status >= 400:
            # Errors carry the response; give it its request, as httpx would.
            response.request = httpx.Request(method, self._base_url.copy_with(raw_path=target))
        return response
