"""Python client of the session-state service: sync, async, and (extra `adk`)
drop-in ADK session and memory services in `session_state_client.adk`."""

from session_state_client._client import AsyncSessionStateClient, SessionStateClient
from session_state_client._exceptions import (
    AlreadyExistsError,
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    EventIdConflictError,
    InternalServerError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    SessionStateError,
    StaleSessionError,
    ValidationError,
)
from session_state_client._models import (
    AppendResult,
    EventPage,
    MemoryEntriesResult,
    MemoryEntry,
    MemoryEventsResult,
    MemoryIngestResult,
    SearchMemoryResponse,
    Session,
    SessionPage,
)

__version__ = "0.1.0"

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AlreadyExistsError",
    "AppendResult",
    "AsyncSessionStateClient",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "EventIdConflictError",
    "EventPage",
    "InternalServerError",
    "MemoryEntriesResult",
    "MemoryEntry",
    "MemoryEventsResult",
    "MemoryIngestResult",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "SearchMemoryResponse",
    "ServiceUnavailableError",
    "Session",
    "SessionPage",
    "SessionStateClient",
    "SessionStateError",
    "StaleSessionError",
    "ValidationError",
]
