"""Domain errors raised by the service and mapped to problem+json in one place."""

from dataclasses import dataclass


class ServiceError(Exception):
    """Base of every error the API reports with a stable code."""

    status = 500
    code = "internal_error"
    title = "Internal server error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class BadRequest(ServiceError):
    status = 400
    code = "bad_request"
    title = "Bad request"


class SessionNotFound(ServiceError):
    status = 404
    code = "session_not_found"
    title = "Session not found"


class SessionAlreadyExists(ServiceError):
    status = 409
    code = "session_already_exists"
    title = "Session already exists"


class InitialStateUnknown(ServiceError):
    """A partial fork of a session whose creation state was never recorded."""

    status = 409
    code = "initial_state_unknown"
    title = "The session's initial state is unknown"


class EventIdConflict(ServiceError):
    status = 409
    code = "event_id_conflict"
    title = "Event id already used with other content"


class StaleSession(ServiceError):
    status = 412
    code = "stale_session"
    title = "Session has been modified"


class PayloadTooLarge(ServiceError):
    status = 413
    code = "payload_too_large"
    title = "Payload too large"


class DatabaseUnavailable(ServiceError):
    status = 503
    code = "database_unavailable"
    title = "Database unavailable"


@dataclass(frozen=True)
class FieldError:
    loc: list[str | int]
    msg: str

    def under(self, *parents: str | int) -> "FieldError":
        """The same error, located inside `parents`."""
        return FieldError([*parents, *self.loc], self.msg)


class InvalidInput(ServiceError):
    """422 for a body that parses as JSON but breaks the contract."""

    status = 422
    code = "validation_error"
    title = "Validation error"

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("; ".join(f"{'.'.join(map(str, e.loc))}: {e.msg}" for e in errors))
        self.errors = errors


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"
    title = "Unauthorized"


class Forbidden(ServiceError):
    status = 403
    code = "forbidden"
    title = "Forbidden"


class EventTooLarge(ServiceError):
    status = 413
    code = "event_too_large"
    title = "Event too large"


class StateTooLarge(ServiceError):
    """The write would take a scope's state past its size limit."""

    status = 422
    code = "state_too_large"
    title = "State too large"


class ResponseTooLarge(ServiceError):
    """What was asked for is larger than one response may carry."""

    status = 413
    code = "response_too_large"
    title = "Response too large"
