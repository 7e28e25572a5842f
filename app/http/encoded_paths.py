"""Routes under /apps/ match the path as sent, still percent-encoded.

Starlette routes on the decoded path, where the app name 'team/travel' (sent
as team%2Ftravel) would be two segments. For /apps/ paths this middleware puts
the path as sent (scope["raw_path"]) in scope["path"], once it is known to be
well-formed percent-encoded UTF-8 (a 400 otherwise), so that each segment is
one identifier, '/', '%', spaces and any text included. Each identifier is then
decoded from its own segment, exactly once (`decode_segment`): by the path
parameters (app.http.dependencies), by the API key check (the app name) and by
the append fast path, which all run inside this middleware.

The query string of any request must decode to UTF-8 too (a 400 otherwise):
Starlette would read the bytes that are not as U+FFFD, so that a filter
would quietly match a value no one sent.

The access log shows the path as sent, control characters still escaped.
"""

import re
import string
from urllib.parse import quote, quote_from_bytes, unquote, unquote_to_bytes

from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.errors import BadRequest
from .problems import service_error_response

APPS_PREFIX = "/apps/"
MALFORMED_MESSAGE = (
    "the path is not percent-encoded UTF-8: write '%' as %25 and other "
    "characters as the %XX escapes of their UTF-8 bytes"
)
QUERY_NOT_UTF8_MESSAGE = (
    "the query string is not percent-encoded UTF-8: write other characters "
    "as the %XX escapes of their UTF-8 bytes"
)
_MALFORMED_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")


def query_is_utf8(query_string: bytes) -> bool:
    """Whether the query string decodes to UTF-8 (an escape that is not one,
    such as '%zz', stays as it is written, as Starlette reads it)."""
    if b"%" not in query_string and query_string.isascii():
        return True  # the usual query: nothing to check
    try:
        unquote_to_bytes(query_string).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def encoded_path(raw_path: bytes) -> str | None:
    """The path as sent, as ASCII text that decodes to the same characters;
    None when it is not well-formed percent-encoded UTF-8."""
    if b"%" not in raw_path and raw_path.isascii():
        return raw_path.decode("ascii")  # the usual path: nothing to check
    if _MALFORMED_ESCAPE.search(raw_path):
        return None
    try:
        unquote_to_bytes(raw_path).decode("utf-8")
    except UnicodeDecodeError:
        return None
    if raw_path.isascii():
        return raw_path.decode("ascii")
    # Some servers pass on bytes above 0x7F as sent: escaping them changes
    # nothing once decoded.
    return quote_from_bytes(raw_path, safe=string.punctuation)


def decode_segment(segment: str) -> str:
    """The identifier a segment of an `encoded_path` spells."""
    return unquote(segment, errors="strict")


def route_path(scope: Scope) -> str:
    """The path routes match: without the root path the app is mounted at."""
    path: str = scope["path"]
    root_path: str = scope.get("root_path", "")
    if root_path and path.startswith(root_path):
        return path[len(root_path) :]
    return path


class EncodedPathMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not query_is_utf8(scope.get("query_string", b"")):
            await service_error_response(BadRequest(QUERY_NOT_UTF8_MESSAGE))(scope, receive, send)
            return
        if route_path(scope).startswith(APPS_PREFIX):
            raw_path: bytes | None = scope.get("raw_path")
            if raw_path is None:
                # ASGI leaves raw_path optional; without it an encoded '/' is lost.
                raw_path = quote(scope["path"], safe="/").encode("ascii")
            path = encoded_path(raw_path.partition(b"?")[0])
            if path is None:
                await service_error_response(BadRequest(MALFORMED_MESSAGE))(scope, receive, send)
                return
            # Changed in place: the outer middlewares log and label by this scope.
            scope["path"] = path
        await self.app(scope, receive, send)
