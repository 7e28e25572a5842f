"""Domain errors raised by the service and mapped to problem+json in one place
(app.http.problems). Each error the rules raise is built by a constructor here,
so its wording is written once; the API adds what only HTTP names (If-Match,
settings, query parameters) where a client needs them. Beside them,
SetupProblem: what a command or the start-up reports before any request."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

from .identifiers import SessionKey


class SetupProblem(Exception):
    """A configuration or connection problem whose message is already the one
    line to show (app.cli.setup_problems explains the others)."""


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

    @classmethod
    def of(cls, key: SessionKey) -> Self:
        return cls(f"session {key.session_id!r} not found")


class InvocationNotFound(ServiceError):
    """No event of the session carries the invocation id a rewind or a fork names."""

    status = 404
    code = "invocation_not_found"
    title = "Invocation not found"

    @classmethod
    def of(cls, key: SessionKey, invocation_id: str) -> Self:
        return cls(f"no event of session {key.session_id!r} has invocation id {invocation_id!r}")


class SessionAlreadyExists(ServiceError):
    status = 409
    code = "session_already_exists"
    title = "Session already exists"

    @classmethod
    def of(cls, key: SessionKey) -> Self:
        return cls(f"session {key.session_id!r} already exists")


class InitialStateUnknown(ServiceError):
    """A partial fork of a session whose creation state was never recorded."""

    status = 409
    code = "initial_state_unknown"
    title = "The session's initial state is unknown"

    @classmethod
    def of(cls, key: SessionKey, *, remedy: str = "") -> Self:
        """`remedy`: what the caller can do instead, appended after a colon."""
        detail = (
            f"session {key.session_id!r} was created before this service recorded the state "
            "sessions are created with, so the state after one of its events cannot be derived"
        )
        return cls(f"{detail}: {remedy}" if remedy else detail)


class EventIdConflict(ServiceError):
    status = 409
    code = "event_id_conflict"
    title = "Event id already used with other content"

    @classmethod
    def of(cls, event_id: str) -> Self:
        return cls(f"event {event_id!r} is already stored with other content")

    @classmethod
    def partly_stored_batch(cls, missing_id: str) -> Self:
        return cls(
            f"some events of the batch are stored and others (such as {missing_id!r}) are "
            "not: a batch is stored whole or not at all, so this is not a retry of one"
        )


class StaleSession(ServiceError):
    """`precondition_failed`: the session moved past the revision the write
    was conditioned on (else it kept changing while the write was retried)."""

    status = 412
    code = "stale_session"
    title = "Session has been modified"

    def __init__(self, detail: str, *, precondition_failed: bool = False) -> None:
        super().__init__(detail)
        self.precondition_failed = precondition_failed

    @classmethod
    def moved_on(cls) -> Self:
        return cls(
            "the session has been modified since the revision the write expected",
            precondition_failed=True,
        )

    @classmethod
    def kept_changing(cls, while_doing: str) -> Self:
        return cls(f"the session kept changing while {while_doing}; try again")


class PayloadTooLarge(ServiceError):
    """`answer_limit`: set when what was sent is refused because its answer
    would pass the response limit (of that many bytes)."""

    status = 413
    code = "payload_too_large"
    title = "Payload too large"

    def __init__(self, detail: str, *, answer_limit: int | None = None) -> None:
        super().__init__(detail)
        self.answer_limit = answer_limit

    @classmethod
    def appends_answer(cls, size: int, limit: int) -> Self:
        return cls(
            f"the appends' answer could be {size} bytes, above the {limit} it may carry",
            answer_limit=limit,
        )

    @classmethod
    def batch_answer(cls, size: int, limit: int) -> Self:
        return cls(
            f"the batch's events are {size} bytes as stored, above the {limit} "
            "its answer may carry",
            answer_limit=limit,
        )


class SemanticSearchOff(ServiceError):
    status = 400
    code = "semantic_search_off"
    title = "Search by meaning is off"

    @classmethod
    def of(cls) -> Self:
        return cls(
            "mode=semantic needs an embedder, and this service has none "
            "(SESSION_STATE_MEMORY_EMBEDDER=none): search with mode=keyword or hybrid"
        )


class EmbedderUnavailable(ServiceError):
    status = 503
    code = "embedder_unavailable"
    title = "The embedder is unavailable"

    @classmethod
    def of(cls) -> Self:
        return cls(
            "the question could not be embedded in time (the embedder is slow, down or answered "
            "what cannot be used): search with mode=hybrid or keyword, or try again later"
        )


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

    @classmethod
    def no_such_event(cls, where: list[str | int], key: SessionKey) -> Self:
        """The event named at `where` is not one of the session's."""
        return cls([FieldError(where, f"session {key.session_id!r} has no such event")])


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"
    title = "Unauthorized"


class Forbidden(ServiceError):
    status = 403
    code = "forbidden"
    title = "Forbidden"


class InvalidToken(Unauthorized):
    """An end-user token refused; `reason` is a short stable word or phrase
    (expired, wrong audience, ...), logged in the audit trail. The detail
    never repeats the token."""

    code = "invalid_token"
    title = "Invalid token"

    def __init__(self, reason: str, detail: str | None = None) -> None:
        super().__init__(f"the token is not valid: {detail or reason}")
        self.reason = reason


class TokenKeysUnavailable(ServiceError):
    """The keys that check end-user tokens (the JWKS) could not be read: the
    token may be good, so this is the service's failure, to retry."""

    status = 503
    code = "token_keys_unavailable"
    title = "Token keys unavailable"


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
    """What was asked for is larger than one response may carry;
    `session_read`: a session read's events, which the reader can ask fewer of."""

    status = 413
    code = "response_too_large"
    title = "Response too large"

    def __init__(self, detail: str, *, session_read: bool = False) -> None:
        super().__init__(detail)
        self.session_read = session_read

    @classmethod
    def session_events(cls, size: int, budget: int) -> Self:
        return cls(
            f"the events asked for are {size} bytes, above the {budget} a session read may carry",
            session_read=True,
        )

    @classmethod
    def removed_events(cls, size: int, budget: int) -> Self:
        return cls(
            f"the events to remove are {size} bytes, above the {budget} an answer may carry:"
            " nothing was removed; remove fewer at a time"
        )


# LangGraph's checkpoints (app.langgraph.checkpoints) and long-term store
# (app.langgraph.store).


class ThreadNotFound(ServiceError):
    status = 404
    code = "thread_not_found"
    title = "Thread not found"

    @classmethod
    def of(cls, thread_id: str) -> Self:
        return cls(f"thread {thread_id!r} not found")


class ThreadAlreadyExists(ServiceError):
    status = 409
    code = "thread_already_exists"
    title = "Thread already exists"

    @classmethod
    def of(cls, thread_id: str) -> Self:
        return cls(f"thread {thread_id!r} already exists")


class CheckpointNotFound(ServiceError):
    status = 404
    code = "checkpoint_not_found"
    title = "Checkpoint not found"

    @classmethod
    def of(cls, checkpoint_id: str) -> Self:
        return cls(f"checkpoint {checkpoint_id!r} not found")


class DeltaChannelThread(ServiceError):
    """keep_latest would cut the history a DeltaChannel's value is rebuilt from."""

    status = 409
    code = "delta_channel_thread"
    title = "The thread uses a DeltaChannel"

    @classmethod
    def of(cls, thread_ids: Sequence[str]) -> Self:
        return cls(
            "keep_latest would lose the history a DeltaChannel is rebuilt from; nothing "
            f"was pruned (threads: {', '.join(thread_ids)}); use strategy 'delete' for them"
        )


class ItemNotFound(ServiceError):
    status = 404
    code = "item_not_found"
    title = "Item not found"

    @classmethod
    def of(cls, namespace: Sequence[str], key: str) -> Self:
        return cls(f"no item {key!r} in namespace {namespace!r}")


class ItemTooLarge(ServiceError):
    status = 422
    code = "item_too_large"
    title = "Item too large"

    @classmethod
    def of(cls, operation: int, size: int, limit: int) -> Self:
        """The value of the batch's `operation`-th operation is `size` bytes as JSON."""
        return cls(
            f"operation {operation}: the value is {size} bytes as JSON, more than "
            f"{limit} (MAX_STATE_BYTES)"
        )


class StoreSearchTooBroad(ServiceError):
    """With encryption at rest on, a store search's filter and keywords run on
    opened values: the request read all the items it may before its searches'
    pages were full."""

    status = 400
    code = "store_search_too_broad"
    title = "Store search too broad"

    @classmethod
    def of(cls, rows: int) -> Self:
        return cls(
            f"the searches read {rows} stored items, as many as one request may "
            "(SESSION_STATE_MAX_STORE_SCAN_ROWS), before their pages were full: values are "
            "encrypted at rest, so a filter or a query is applied in the server to each "
            "item under the namespace prefix; search a narrower namespacePrefix, or with "
            "a smaller offset"
        )
