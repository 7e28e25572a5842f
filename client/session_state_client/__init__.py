"""Python client of the session-state service: sync, async, and (extra `adk`)
drop-in ADK session and memory services in `session_state_client.adk`."""

from session_state_client._async_client import AsyncSessionStateClient
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
    BatchAppendResult,
    EventPage,
    MemoryEntriesResult,
    MemoryEntry,
    MemoryEventsResult,
    MemoryIngestResult,
    RemovalResult,
    SearchMemoryResponse,
    Session,
    SessionPage,
)
from session_state_client._streams import StreamMessage
from session_state_client._sync_client import SessionStateClient

__version__ = "0.1.0"

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AlreadyExistsError",
    "AppInfo",
    "AppPage",
    "AppendResult",
    "AsyncSessionStateClient",
    "AuthenticationError",
    "BadRequestError",
    "BatchAppendResult",
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
    "RemovalResult",
    "SearchMemoryResponse",
    "ServiceUnavailableError",
    "Session",
    "SessionPage",
    "SessionStateClient",
    "SessionStateError",
    "StaleSessionError",
    "StreamMessage",
    "UserInfo",
    "UserPage",
    "ValidationError",
]
