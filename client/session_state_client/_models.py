"""Typed return values. Events stay ADK Event JSON (`dict`), exactly as stored."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = [
    "AppInfo",
    "AppPage",
    "AppendResult",
    "BatchAppendResult",
    "EventPage",
    "MemoryEntriesResult",
    "MemoryEntry",
    "MemoryEventsResult",
    "MemoryIngestResult",
    "RemovalResult",
    "RewindResult",
    "SearchMemoryResponse",
    "SearchMode",
    "Session",
    "SessionPage",
    "UserInfo",
    "UserPage",
]

EventJSON = dict[str, Any]


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class Session(_Wire):
    """A session with its merged state; `revision` comes from the ETag."""

    id: str
    app_name: str
    user_id: str
    state: dict[str, Any] = Field(default_factory=dict)
    events: list[EventJSON] = Field(default_factory=list)
    last_update_time: float = 0.0
    expire_time: float | None = Field(
        default=None, description="When the session expires (epoch seconds); None: never."
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Empty: none.")
    revision: int | None = None
    events_left_out: int | None = Field(
        default=None,
        description="A compacted read's: how many events it left out (None: not compacted).",
    )
    bytes_left_out: int | None = Field(
        default=None, description="A compacted read's: the bytes of the events it left out."
    )


class SessionPage(_Wire):
    sessions: list[Session]
    next_page_token: str | None = None


class AppInfo(_Wire):
    """An app with live sessions (GET /apps)."""

    app_name: str
    session_count: int


class AppPage(_Wire):
    apps: list[AppInfo]
    next_page_token: str | None = None


class UserInfo(_Wire):
    """A user of an app with live sessions, and the latest update among them."""

    user_id: str
    session_count: int
    last_update_time: float


class UserPage(_Wire):
    users: list[UserInfo]
    next_page_token: str | None = None


class ThreadInfo(_Wire):
    """A live LangGraph thread of an app: its user, when it was made and
    last written (the server's clock), when it expires (None: never), and
    the root graph's latest checkpoint (None: none)."""

    thread_id: str
    user_id: str
    create_time: float
    last_update_time: float
    expire_time: float | None = None
    latest_checkpoint_id: str | None = None


class ThreadPage(_Wire):
    threads: list[ThreadInfo]
    next_page_token: str | None = None


class EventPage(_Wire):
    events: list[EventJSON]
    next_page_token: str | None = None


class AppendResult(_Wire):
    """`event` is the event as stored (or as sent, for a partial event)."""

    event: EventJSON
    revision: int | None
    persisted: bool
    replayed: bool = Field(description="True when the server recognised a retry.")


class BatchAppendResult(_Wire):
    """`events` are the events as stored, in order; `revision` the one the
    last made."""

    events: list[EventJSON]
    revision: int | None
    replayed: bool = Field(description="True when the server recognised a retried batch.")


class RemovalResult(_Wire):
    """The session after a removal (its state, no events) and how many
    events went (0: there was nothing to remove, nothing was written);
    `removed_events`, when asked for (`return_removed`), the events removed,
    oldest first."""

    session: Session
    removed: int
    removed_events: list[EventJSON] | None = None


class RewindResult(_Wire):
    """The session after a rewind (its state, no events) and the event the
    rewind appended (ADK's, with `actions.rewindBeforeInvocationId`)."""

    session: Session
    event: EventJSON


class MemoryContentPart(_Wire):
    """A part of ADK's Content: `text`, or any other kind, kept as sent."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    text: str | None = None


class MemoryContent(_Wire):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    role: str | None = None
    parts: list[MemoryContentPart] = Field(default_factory=list)


class MemoryEntry(_Wire):
    """A memory a search found. `matched_by`: which side of the search found
    it ("keyword", "meaning" or "both"); `score`: its relevance by meaning
    when that side found it, else the share of the question's terms it holds
    (comparable only within one response). Both None from a server that
    does not send them."""

    id: str
    author: str
    timestamp: str
    content: MemoryContent
    custom_metadata: dict[str, Any] = Field(default_factory=dict)
    matched_by: str | None = None
    score: float | None = None


# How a memory search finds: by keywords and meaning fused, or one alone.
SearchMode = Literal["hybrid", "keyword", "semantic"]


class SearchMemoryResponse(_Wire):
    memories: list[MemoryEntry]


class MemoryPage(_Wire):
    """A page of a user's memories, the last added first (`matched_by` and
    `score` are None: no search found them)."""

    memories: list[MemoryEntry]
    next_page_token: str | None = None


class MemoryIngestResult(_Wire):
    session_id: str
    memories_added: int


class MemoryEventsResult(_Wire):
    memories_added: int


class MemoryEntriesResult(_Wire):
    memory_ids: list[str]
