"""Every error leaves as application/problem+json (RFC 9457), mapped here."""

import logging
from typing import Any

import asyncpg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import json_codec
from app.errors import DatabaseUnavailable, InvalidInput, ServiceError, Unauthorized
from app.metrics import DB_ERRORS
from app.observability import current_request_id, trace_without_data

logger = logging.getLogger("session_state")

PROBLEM_MEDIA_TYPE = "application/problem+json"
RETRY_AFTER_SECONDS = "1"
_GENERIC_CODES = {404: "not_found", 405: "method_not_allowed", 400: "bad_request"}


def problem_response(
    status: int,
    code: str,
    title: str,
    detail: str,
    *,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Response:
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
    return Response(
        json_codec.dumps(body), status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers
    )


def service_error_response(error: ServiceError) -> Response:
    extra: dict[str, Any] = {}
    headers = None
    if isinstance(error, InvalidInput):
        extra["errors"] = [{"loc": e.loc, "msg": e.msg} for e in error.errors]
    if isinstance(error, DatabaseUnavailable):
        headers = {"Retry-After": RETRY_AFTER_SECONDS}
    if isinstance(error, Unauthorized):
        headers = {"WWW-Authenticate": "Bearer"}
    return problem_response(
        error.status, error.code, error.title, error.detail, headers=headers, **extra
    )


async def _on_service_error(_request: Request, error: Exception) -> Response:
    assert isinstance(error, ServiceError)
    return service_error_response(error)


async def _on_validation_error(_request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestValidationError)
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


async def _on_http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, StarletteHTTPException)
    if error.status_code == 404 and _has_empty_identifier(request):
        message = "a segment of the path is empty: identifiers are 1 to 128 characters"
        return problem_response(
            422,
            "validation_error",
            "Validation error",
            f"path: {message}",
            errors=[{"loc": ["path"], "msg": message}],
        )
    code = _GENERIC_CODES.get(error.status_code, "http_error")
    return problem_response(
        error.status_code,
        code,
        str(error.detail),
        str(error.detail),
        headers=dict(error.headers or {}),
    )


# SQLSTATE classes that say the database cannot serve now, not that the
# request is wrong: connection exception, insufficient resources (such as too
# many connections), operator intervention (shutting down, starting up).
_UNAVAILABLE_SQLSTATE_CLASSES = ("08", "53", "57")


def is_database_unavailable(error: DBAPIError) -> bool:
    if isinstance(error, OperationalError) or error.connection_invalidated:
        return True
    cause = error.orig.__cause__ if error.orig is not None else None
    sqlstate = getattr(cause, "sqlstate", None) or getattr(error.orig, "sqlstate", None)
    return isinstance(sqlstate, str) and sqlstate.startswith(_UNAVAILABLE_SQLSTATE_CLASSES)


async def _on_database_error(_request: Request, error: Exception) -> Response:
    return database_error_response(error)


def database_error_response(error: Exception) -> Response:
    # The database being away or overloaded is something a client may retry;
    # anything else from the database is our bug.
    if isinstance(error, PoolTimeoutError) or (
        isinstance(error, DBAPIError) and is_database_unavailable(error)
    ):
        logger.warning("database unavailable: %s", type(error).__name__)
        DB_ERRORS.labels("unavailable").inc()
        return service_error_response(DatabaseUnavailable("the database is unreachable"))
    DB_ERRORS.labels("other").inc()
    return unexpected_error_response(error)


async def _on_connection_error(_request: Request, error: Exception) -> Response:
    return connection_error_response(error)


def connection_error_response(error: Exception) -> Response:
    logger.warning("database unavailable: %s", type(error).__name__)
    DB_ERRORS.labels("unavailable").inc()
    return service_error_response(DatabaseUnavailable("the database is unreachable"))


def unexpected_error_response(error: BaseException) -> Response:
    # Types and frames only: messages of database errors carry users' data.
    logger.error("unexpected error\n%s", trace_without_data(error))
    return problem_response(
        500, "internal_error", "Internal server error", "the server failed to handle the request"
    )


# The database cannot be reached or answer now: ours, the OS's and asyncpg's
# own errors from the PostgreSQL hot path (connection lost or refused, the
# server shutting down or starting up, out of connections).
_CONNECTION_ERRORS: tuple[type[Exception], ...] = (
    # ConnectionError and the rest of OSError: refused, reset, unreachable,
    # and a host name that stopped resolving (socket.gaierror: a stopped
    # compose service's name), none of which is a bug of ours.
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.InsufficientResourcesError,
    TimeoutError,
)


def known_error_response(error: Exception) -> Response | None:
    """The response the exception handlers below give for `error`, for code
    that runs outside FastAPI's routing; None for anything else (a bug)."""
    if isinstance(error, ServiceError):
        return service_error_response(error)
    if isinstance(error, DBAPIError | PoolTimeoutError):
        return database_error_response(error)
    if isinstance(error, _CONNECTION_ERRORS):
        return connection_error_response(error)
    return None


def install_problem_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ServiceError, _on_service_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(DBAPIError, _on_database_error)
    app.add_exception_handler(PoolTimeoutError, _on_database_error)
    for error_class in _CONNECTION_ERRORS:
        app.add_exception_handler(error_class, _on_connection_error)
    # Any other exception becomes a 500 in RequestContextMiddleware, which
    # still knows the request id.
