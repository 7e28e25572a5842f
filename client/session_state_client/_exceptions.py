"""The exceptions of session_state_client.

    SessionStateError                  every error of this library
    ├── APIConnectionError             the request got no HTTP answer
    │   └── APITimeoutError            ... because it timed out
    └── APIStatusError                 the server answered with an error status
        ├── BadRequestError            400 bad_request
        ├── AuthenticationError        401 unauthorized
        ├── PermissionDeniedError      403 forbidden
        ├── NotFoundError              404 session_not_found, not_found
        │   └── InvocationNotFoundError 404 invocation_not_found
        ├── ConflictError              409
        │   ├── AlreadyExistsError     409 session_already_exists
        │   └── EventIdConflictError   409 event_id_conflict
        ├── StaleSessionError          412 stale_session
        ├── PayloadTooLargeError       413 payload_too_large
        ├── ValidationError            422 validation_error
        ├── RateLimitError             429
        ├── ServiceUnavailableError    503 database_unavailable
        └── InternalServerError        other 5xx

Every APIStatusError carries `status_code`, the problem+json `body`, its
`code` and the `request_id` (the X-Request-ID the server answered with). A
404's message names the method and URL requested (a wrong base path shows).
"""

import json
from typing import Any

import httpx

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AlreadyExistsError",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "EventIdConflictError",
    "InternalServerError",
    "InvocationNotFoundError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "ServiceUnavailableError",
    "SessionStateError",
    "StaleSessionError",
    "ValidationError",
]


class SessionStateError(Exception):
    """Base of every error raised by this library."""


class APIConnectionError(SessionStateError):
    """No HTTP answer: the server is unreachable or the connection broke."""


class APITimeoutError(APIConnectionError):
    """The request timed out."""


class APIStatusError(SessionStateError):
    """The server answered with a 4xx or 5xx status."""

    def __init__(self, message: str, *, response: httpx.Response, body: dict[str, Any]) -> None:
        super().__init__(message)
        self.response = response
        self.status_code = response.status_code
        self.body = body
        self.code: str | None = body.get("code")
        self.request_id: str | None = response.headers.get("x-request-id")


class BadRequestError(APIStatusError):
    pass


class AuthenticationError(APIStatusError):
    pass


class PermissionDeniedError(APIStatusError):
    pass


class NotFoundError(APIStatusError):
    pass


class InvocationNotFoundError(NotFoundError):
    """No event of the session carries the invocation id a rewind or a fork named."""


class ConflictError(APIStatusError):
    pass


class AlreadyExistsError(ConflictError):
    pass


class EventIdConflictError(ConflictError):
    pass


class StaleSessionError(APIStatusError):
    pass


class PayloadTooLargeError(APIStatusError):
    pass


class ValidationError(APIStatusError):
    pass


class RateLimitError(APIStatusError):
    pass


class ServiceUnavailableError(APIStatusError):
    pass


class InternalServerError(APIStatusError):
    pass


_BY_CODE: dict[str, type[APIStatusError]] = {
    "session_already_exists": AlreadyExistsError,
    "event_id_conflict": EventIdConflictError,
    "invocation_not_found": InvocationNotFoundError,
}
_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    412: StaleSessionError,
    413: PayloadTooLargeError,
    422: ValidationError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}


# A refusal that says the server has no such route (an older server): the
# framework's own codes, or none at all (a proxy's page). Any other code is
# the request's own problem, whatever its status. A tuple, not a set: a
# proxy's code may be any JSON value, a list or an object too, compared by
# equality and never hashed.
_UNKNOWN_ROUTE_STATUSES = (404, 405)
_UNKNOWN_ROUTE_CODES = (None, "not_found", "method_not_allowed")


def route_unknown(error: APIStatusError) -> bool:
    """Whether `error` says the server does not know the route asked for."""
    return error.status_code in _UNKNOWN_ROUTE_STATUSES and error.code in _UNKNOWN_ROUTE_CODES


def error_from_response(response: httpx.Response) -> APIStatusError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    code = body.get("code")
    error_class = _BY_CODE.get(code) if isinstance(code, str) else None
    if error_class is None:
        error_class = _BY_STATUS.get(response.status_code)
    if error_class is None:
        error_class = InternalServerError if response.status_code >= 500 else APIStatusError
    detail = body.get("detail") or response.reason_phrase
    message = f"{response.status_code} {code or ''}: {detail}".replace("  ", " ")
    if response.status_code == 404:
        # A wrong base path ("/api", "/v1") is a 404 too: the URL shows it.
        message += f" ({_request_line(response)})"
    return error_class(message, response=response, body=body)


def result_error(
    url: str, status: int, problem: Any, request_id: str | None = None
) -> APIStatusError:
    """The exception a single request to `url` would have raised for the
    problem a request of several answered in one of its results."""
    headers = {"content-type": "application/problem+json"}
    if request_id is not None:
        headers["x-request-id"] = request_id
    item = httpx.Response(
        status,
        headers=headers,
        content=json.dumps(problem if isinstance(problem, dict) else {}).encode(),
        request=httpx.Request("POST", url),
    )
    return error_from_response(item)


def _request_line(response: httpx.Response) -> str:
    try:
        request = response.request
    except RuntimeError:  # a response built without its request
        return "request unknown"
    return f"{request.method} {request.url}"
