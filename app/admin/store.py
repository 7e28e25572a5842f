"""The storage interface of the operator's commands: `apps` and `sessions
list` (reads across apps), `export` (every row, streamed) and `import`
(rows written as they were exported). The API's `Store` serves requests;
this serves an operator's bulk tools, which read and write whole rows
(times, revisions, initial state) that no request may set. Implemented by
`SqlOperatorStore` (`sql_operator_store.py`) on both backends; see
docs/design.md ("The operator's storage interface")."""

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..sessions.domain import ALL_SESSIONS, NewEvent, SessionKey, SessionQuery, StoredEvent
from ..sessions.labels import Labels
from ..sessions.state import StateDict

# Where a page of `sessions list` starts: after this (update_time, app_name,
# user_id, id).
SessionPosition = tuple[float, str, str, str]


@dataclass(frozen=True)
class AppSummary:
    app_name: str
    sessions: int
    users: int
    last_update_time: float


@dataclass(frozen=True)
class ListedSession:
    app_name: str
    user_id: str
    id: str
    last_update_time: float
    revision: int
    expire_time: float | None
    # Keys of the merged state a read returns: session, app: and user: keys.
    state_keys: int
    labels: Labels = field(default_factory=dict)


@dataclass(frozen=True)
class StateEntry:
    """One key of an app's state (`user_id` None) or of a user's."""

    app_name: str
    user_id: str | None
    key: str
    value: Any


@dataclass(frozen=True)
class SessionRecord:
    """A session's whole row but its events, as an export holds it."""

    app_name: str
    user_id: str
    id: str
    state: StateDict
    initial_state: StateDict | None
    revision: int
    create_time: float
    update_time: float
    expire_time: float | None
    ttl_seconds: float | None
    # None: the session has none (the column is NULL).
    labels: Labels | None = None

    @property
    def key(self) -> SessionKey:
        return SessionKey(self.app_name, self.user_id, self.id)


@dataclass(frozen=True)
class StoredMemory:
    """A memory as an export holds it (its searchable text is derived)."""

    app_name: str
    user_id: str
    session_id: str
    event_id: str
    author: str
    role: str | None
    timestamp: float
    text: str
    # None in memories stored before they were kept.
    content: dict[str, Any] | None
    custom_metadata: dict[str, Any] | None
    # What the keyword index is built from when it is not `text` (a sealed
    # memory's: app.sessions.domain.MemoryRecord.indexed_text).
    indexed_text: str | None = None


@dataclass(frozen=True)
class ForgottenMemory:
    app_name: str
    user_id: str
    memory_id: str


@dataclass(frozen=True)
class ThreadRecord:
    """A LangGraph thread's row (app.langgraph.checkpoints)."""

    app_name: str
    thread_id: str
    user_id: str
    create_time: float
    update_time: float
    expire_time: float | None
    ttl_seconds: float | None


@dataclass(frozen=True)
class CheckpointRow:
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    run_id: str | None
    checkpoint_type: str
    checkpoint: bytes
    channel_versions: dict[str, Any]
    metadata: dict[str, Any]


@dataclass(frozen=True)
class ChannelValueRow:
    checkpoint_ns: str
    channel: str
    version: str
    value_type: str
    value: bytes | None


@dataclass(frozen=True)
class WriteRow:
    checkpoint_ns: str
    checkpoint_id: str
    task_id: str
    idx: int
    task_path: str
    channel: str
    value_type: str
    value: bytes


@dataclass(frozen=True)
class ThreadRows:
    """Every row of a thread but its own, each list in primary-key order."""

    checkpoints: list[CheckpointRow]
    channel_values: list[ChannelValueRow]
    writes: list[WriteRow]


@dataclass(frozen=True)
class StoreItemRecord:
    """An item of LangGraph's long-term store (app.langgraph.store)."""

    app_name: str
    namespace: str
    key: str
    user_id: str
    value: dict[str, Any]
    create_time: float
    update_time: float
    expire_time: float | None
    ttl_seconds: float | None


class AlreadyStored(Exception):
    """A row of that key was written since it was looked up (or, for events,
    the rows repeat a key); the transaction is rolled back."""


class ImportTransaction(Protocol):
    """The reads and writes of one import transaction; committed when the
    `importing()` block ends, rolled back on any error. Every insert raises
    AlreadyStored for a key that is taken."""

    async def find_session(self, key: SessionKey) -> SessionRecord | None:
        """The session, expired or not."""
        ...

    async def insert_session(self, session: SessionRecord) -> None: ...

    async def insert_events(self, key: SessionKey, events: Sequence[tuple[int, NewEvent]]) -> None:
        """Stores the events at their seqs (a session's seqs and event ids
        are unique)."""
        ...

    async def stored_event_data(self, key: SessionKey, seqs: Sequence[int]) -> dict[int, str]:
        """The stored JSON of the session's events at these seqs, by seq."""
        ...

    async def stored_values(
        self, app_name: str, user_id: str | None, keys: Sequence[str]
    ) -> dict[str, Any]:
        """The stored values of these keys of the app's (`user_id` None) or
        the user's state."""
        ...

    async def insert_values(
        self, app_name: str, user_id: str | None, entries: dict[str, Any]
    ) -> None: ...

    async def find_memory(
        self, app_name: str, user_id: str, session_id: str, event_id: str
    ) -> StoredMemory | None: ...

    async def insert_memory(self, memory: StoredMemory) -> None: ...

    async def is_forgotten(self, forgotten: ForgottenMemory) -> bool: ...

    async def insert_forgotten(self, forgotten: ForgottenMemory) -> None: ...

    async def find_thread(self, app_name: str, thread_id: str) -> ThreadRecord | None:
        """The thread, expired or not."""
        ...

    async def thread_rows(self, app_name: str, thread_id: str) -> ThreadRows: ...

    async def insert_thread(self, thread: ThreadRecord, rows: ThreadRows) -> None: ...

    async def find_store_item(
        self, app_name: str, namespace: str, key: str
    ) -> StoreItemRecord | None:
        """The item, expired or not."""
        ...

    async def insert_store_item(self, item: StoreItemRecord) -> None: ...


class OperatorStore(Protocol):
    # Reads skip expired sessions, as the API's do. The iterators read a page
    # per transaction: a dump of any size takes bounded memory, and a dump
    # of a live database is consistent per page, not as a whole.

    # -- across apps (`apps`, `sessions list`) -------------------------------

    async def app_summaries(self, now: float) -> list[AppSummary]:
        """Every app with a live session, by name."""
        ...

    async def page_sessions(
        self,
        *,
        app_name: str | None,
        user_id: str | None,
        newest_first: bool,
        after: SessionPosition | None,
        limit: int,
        now: float,
        where: SessionQuery = ALL_SESSIONS,
    ) -> tuple[list[ListedSession], bool]:
        """A page of live sessions by last update (then app, user, id), and
        whether more follow; of those `where` selects (its order is not
        read: `newest_first` is)."""
        ...

    # -- export: every row of the app (and user) when given, in key order ----

    def app_state_entries(self, app_name: str | None) -> AsyncIterator[StateEntry]: ...

    def user_state_entries(
        self, app_name: str | None, user_id: str | None
    ) -> AsyncIterator[StateEntry]: ...

    def live_sessions(
        self, app_name: str | None, user_id: str | None, now: float
    ) -> AsyncIterator[SessionRecord]: ...

    async def count_events(self, key: SessionKey, up_to_seq: int) -> int:
        """The session's events with seq <= `up_to_seq`."""
        ...

    async def read_events(
        self, key: SessionKey, after_seq: int, up_to_seq: int, limit: int
    ) -> list[StoredEvent]:
        """At most `limit` events with after_seq < seq <= up_to_seq, in order."""
        ...

    def memories(
        self, app_name: str | None, user_id: str | None
    ) -> AsyncIterator[StoredMemory]: ...

    def forgotten_memories(
        self, app_name: str | None, user_id: str | None
    ) -> AsyncIterator[ForgottenMemory]: ...

    def live_threads(
        self, app_name: str | None, user_id: str | None, now: float
    ) -> AsyncIterator[ThreadRecord]: ...

    async def thread_rows(self, app_name: str, thread_id: str) -> ThreadRows:
        """Every row of the thread, read in one transaction: a thread is
        dumped whole, in one line."""
        ...

    def live_store_items(
        self, app_name: str | None, user_id: str | None, now: float
    ) -> AsyncIterator[StoreItemRecord]: ...

    # -- import --------------------------------------------------------------

    def importing(self) -> AbstractAsyncContextManager[ImportTransaction]:
        """One write transaction (on SQLite it holds the write lock from
        BEGIN)."""
        ...
