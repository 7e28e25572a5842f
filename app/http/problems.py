"""Every error leaves as application/problem+json (RFC 9457), mapped here."""

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import iter_route_contexts
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from ..core import json_codec
from ..core.config import ENVIRONMENT_PREFIX
from ..core.errors import (
    DatabaseUnavailable,
    InvalidInput,
    InvalidToken,
    PayloadTooLarge,
    ResponseTooLarge,
    ServiceError,
    StaleSession,
    TokenKeysUnavailable,
    Unauthorized,
)
from ..core.identifiers import IDENTIFIER_MAX_LENGTH
from ..core.metrics import STALE_REJECTIONS
from ..core.observability import current_request_id, trace_without_data

logger = logging.getLogger("session_state")

PROBLEM_MEDIA_TYPE = "application/problem+json"
RETRY_AFTER_SECONDS = "1"
# The framework's own errors; every other error's status and code are on its
# class (app/core/errors.py). docs/api.md lists exactly these (a test checks).
GENERIC_CODES = {404: "not_found", 405: "method_not_allowed", 400: "bad_request"}
OTHER_HTTP_ERROR_CODE = "http_error"


class FieldProblem(BaseModel):
    loc: list[str | int]
    msg: str


class Problem(BaseModel):
    """RFC 9457 problem details with a stable `code`."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    errors: list[FieldProblem] | None = None


def problem_document(
    status: int, code: str, title: str, detail: str, **extra: Any
) -> dict[str, Any]:
    """A problem's body (RFC 9457): an answer's, or one append's among
    several (app.sessions.session_appends)."""
    body = {
        "type": f"urn:session-state:problem:{code}",
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        **extra,
    }
    request_id = current_request_id.get()
    if request_id is not None:
        body["requestId"] = request_id
    return body


def problem_response(
    status: int,
    code: str,
    title: str,
    detail: str,
    *,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Response:
    body = problem_document(status, code, title, detail, **extra)
    return Response(
        json_codec.dumps(body), status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers
    )


RESPONSE_LIMIT_SETTING = f"{ENVIRONMENT_PREFIX}MAX_RESPONSE_BYTES"


def http_detail(error: ServiceError) -> str:
    """The error's detail as an HTTP client reads it: where the rules speak of
    something the client or the operator can change, named as HTTP names it."""
    if isinstance(error, StaleSession) and error.precondition_failed:
        return "the session has been modified since the revision given in If-Match"
    if isinstance(error, ResponseTooLarge) and error.session_read:
        return (
            f"{error.detail} ({RESPONSE_LIMIT_SETTING}): ask for fewer with numRecentEvents "
            "or afterTimestamp, or page through /apps/{app}/users/{user}/sessions/{id}/events"
        )
    if isinstance(error, PayloadTooLarge) and error.answer_limit is not None:
        return f"{error.detail} ({RESPONSE_LIMIT_SETTING}): send fewer at once"
    return error.detail


def service_error_response(error: ServiceError) -> Response:
    """Every domain error's answer, the route's and the append fast path's
    alike."""
    headers = None
    if isinstance(error, DatabaseUnavailable):
        headers = {"Retry-After": RETRY_AFTER_SECONDS}
    if isinstance(error, InvalidToken):
        headers = {"WWW-Authenticate": 'Bearer error="invalid_token"'}
    elif isinstance(error, Unauthorized):
        headers = {"WWW-Authenticate": "Bearer"}
    if isinstance(error, TokenKeysUnavailable):
        headers = {"Retry-After": RETRY_AFTER_SECONDS}
    return Response(
        json_codec.dumps(service_error_document(error)),
        status_code=error.status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=headers,
    )


def service_error_document(error: ServiceError) -> dict[str, Any]:
    """A domain error's problem body: the one place a 412 is counted."""
    extra: dict[str, Any] = {}
    if isinstance(error, InvalidInput):
        extra["errors"] = [{"loc": e.loc, "msg": e.msg} for e in error.errors]
    if isinstance(error, StaleSession):
        STALE_REJECTIONS.inc()
    return problem_document(error.status, error.code, error.title, http_detail(error), **extra)


def _validation_error_response(error: RequestValidationError) -> Response:
    errors = list(error.errors())
    if any(item.get("type") == "json_invalid" for item in errors):
        return problem_response(400, "bad_request", "Bad request", "the body is not valid JSON")
    details = [{"loc": list(item["loc"]), "msg": item["msg"]} for item in errors]
    summary = "; ".join(f"{'.'.join(map(str, d['loc']))}: {d['msg']}" for d in details)
    return problem_response(422, "validation_error", "Validation error", summary, errors=details)


def _has_empty_identifier(request: Request) -> bool:
    """An /apps/ path that matched no route because a segment of it is empty:
    an identifier missing (422), not a missing page."""
    raw_path: bytes = request.scope.get("raw_path") or request.url.path.encode()
    return raw_path.startswith(b"/apps/") and b"//" in raw_path


def allowed_methods(request: Request, error: StarletteHTTPException) -> list[str]:
    """Every method routed for the path of a 405. FastAPI makes one route per
    method and Starlette's 405 names only the first route matching the path;
    a mount's (the docs assets) names its own, kept here."""
    given = (error.headers or {}).get("Allow", "")
    methods = {method.strip() for method in given.split(",") if method.strip()}
    scope = request.scope
    # Matched from the app's top, as routing did (inside a mount, root_path grew).
    probe = {
        "type": "http",
        "method": scope["method"],
        "path": scope["path"],
        "root_path": scope.get("app_root_path", scope.get("root_path", "")),
    }
    for route in iter_route_contexts(request.app.routes):
        match, _ = route.matches(probe)
        if match is not Match.NONE and route.methods:
            methods |= route.methods
    return sorted(methods)


def _method_not_allowed_response(request: Request, error: StarletteHTTPException) -> Response:
    allowed = allowed_methods(request, error)
    return problem_response(
        405,
        GENERIC_CODES[405],
        "Method not allowed",
        f"{request.method} is not allowed on this path; it allows {', '.join(allowed)}",
        headers={**(error.headers or {}), "Allow": ", ".join(allowed)},
    )


def _http_error_response(request: Request, error: StarletteHTTPException) -> Response:
    if error.status_code == 404 and _has_empty_identifier(request):
        message = (
            "a segment of the path is empty: identifiers are "
            f"1 to {IDENTIFIER_MAX_LENGTH} characters"
        )
        return problem_response(
            422,
            "validation_error",
            "Validation error",
            f"path: {message}",
            errors=[{"loc": ["path"], "msg": message}],
        )
    if error.status_code == 405:
        return _method_not_allowed_response(request, error)
    code = GENERIC_CODES.get(error.status_code, OTHER_HTTP_ERROR_CODE)
    return problem_response(
        error.status_code,
        code,
        str(error.detail),
        str(error.detail),
        headers=dict(error.headers or {}),
    )


def unexpected_error_response(error: BaseException) -> Response:
    # Types and frames only: messages of database errors carry users' data.
    logger.error("unexpected error\n%s", trace_without_data(error))
    return problem_response(
        500, "internal_error", "Internal server error", "the server failed to handle the request"
    )


def error_response(error: Exception) -> Response | None:
    """The problem response for an error the API reports with a code (the
    status and code of each domain error are on its class, `app.core.errors`);
    None for anything else, a bug, which becomes a 500 in
    RequestContextMiddleware (it still knows the request id). Used by the
    exception handlers and by the append fast path alike."""
    if isinstance(error, ServiceError):
        return service_error_response(error)
    if isinstance(error, RequestValidationError):
        return _validation_error_response(error)
    return None


async def _on_error(request: Request, error: Exception) -> Response:
    if isinstance(error, StarletteHTTPException):
        return _http_error_response(request, error)
    response = error_response(error)
    assert response is not None, "handlers are installed for the types error_response maps"
    return response


def install_problem_handlers(app: FastAPI) -> None:
    for error_class in (ServiceError, RequestValidationError, StarletteHTTPException):
        app.add_exception_handler(error_class, _on_error)
