"""The values the layers pass each other: routes to rules, rules to the
store. Plain data, no behaviour; the rules are in `service.py`, `events.py`
and `state.py`, the SQL in `db/`."""

from dataclasses import dataclass, field, fields, is_dataclass
from typing import Literal, Self

from ..core.errors import StateTooLarge
from ..core.identifiers import SessionKey as SessionKey
from .labels import LabelFilter, Labels
from .state import ScopedDelta, StateDict

SortOrder = Literal["asc", "desc"]
# Where a page of sessions ends: (update time, user id, session id).
SessionCursor = tuple[float, str, str]


@dataclass(frozen=True)
class ChangeHorizon:
    """The session writes committed before a walk of a list began, by their
    change numbers (never by a clock): those below `bound` but none of
    `running` (PostgreSQL's transactions still in flight then; SQLite has
    none). docs/api.md, "Walking a list"."""

    bound: int
    running: tuple[int, ...] = ()


@dataclass(frozen=True)
class SessionPosition:
    """Where a page of a walk starts: after `cursor`, among the sessions
    last written before `horizon`."""

    cursor: SessionCursor
    horizon: ChangeHorizon


@dataclass(frozen=True)
class NewEvent:
    """An event ready to store: validated, ``temp:`` keys removed, JSON encoded."""

    id: str
    invocation_id: str
    author: str
    timestamp: float
    data: str
    delta: ScopedDelta


@dataclass(frozen=True)
class StoredEvent:
    """An event as stored: its position in the session (the revision its
    append made) and its JSON text."""

    seq: int
    data: str


@dataclass(frozen=True)
class Expiry:
    """When a session expires: `ttl_seconds` after its last stored append
    (an idle timeout), or at `expire_time` (epoch seconds); neither: never."""

    ttl_seconds: float | None = None
    expire_time: float | None = None

    def time_after(self, now: float) -> float | None:
        """The expiry time of a session written at `now`."""
        if self.ttl_seconds is not None:
            return now + self.ttl_seconds
        return self.expire_time


NEVER_EXPIRES = Expiry()


@dataclass(frozen=True)
class SessionRow:
    """A session's own part: its state without the app and user scopes."""

    app_name: str
    user_id: str
    id: str
    state: StateDict
    revision: int
    update_time: float
    expire_time: float | None = None
    labels: Labels = field(default_factory=dict)


@dataclass(frozen=True)
class SessionQuery:
    """Which sessions a list gives and in which order: those holding the
    labels, last updated at or after `updated_after` and before
    `updated_before`, by last update time (then user id, then id)."""

    labels: LabelFilter = field(default_factory=LabelFilter)
    updated_after: float | None = None
    updated_before: float | None = None
    order: SortOrder = "asc"
    # False: the sessions' own rows only, state left out (and not read).
    include_state: bool = True


ALL_SESSIONS = SessionQuery()


@dataclass(frozen=True)
class ListedApp:
    """An app with live sessions (GET /apps)."""

    app_name: str
    session_count: int


@dataclass(frozen=True)
class ListedUser:
    """A user of an app with live sessions, and the latest update among them."""

    user_id: str
    session_count: int
    last_update_time: float


@dataclass(frozen=True)
class SessionSnapshot:
    """A session, its scopes' state and its events (JSON texts joined by
    commas), or None for the events when they are `events_bytes` long, more
    than the reader would take."""

    session: SessionRow
    app_state: StateDict
    user_state: StateDict
    events_json: str | None
    events_bytes: int


@dataclass(frozen=True)
class SessionListing:
    """A page of sessions with what merging their state needs, and whether
    more sessions follow."""

    sessions: list[SessionRow]
    app_state: StateDict
    user_states: dict[str, StateDict]
    more: bool
    # The walk's horizon: the one given, or, on a first page, read with it.
    horizon: ChangeHorizon | None = None


@dataclass(frozen=True)
class ForkSource:
    """What a fork copies: the source session's events up to `up_to_seq`
    (all of them when None), with the session-scope `state` they leave (None:
    the source's stored state, when its whole history is copied)."""

    key: SessionKey
    up_to_seq: int | None
    state: StateDict | None
    # The fork's labels; None: the source's, read with it.
    labels: Labels | None = None


@dataclass(frozen=True)
class EventsRemoved:
    """A removal of a session's newest events: the revision it made and how
    many events went."""

    revision: int
    count: int


@dataclass(frozen=True)
class Popped:
    """A pop (Store.pop_newest): the revision and the newest events read
    together (oldest first); how many of them it removed (None: it wrote
    nothing); the session after it, without events (as read, when nothing
    was written; None when the store could not read it); and whether an
    event to remove changed session-scope state, which the store leaves
    to the service to derive (nothing is written then)."""

    revision: int
    events: list[StoredEvent]
    removed: int | None
    session: SessionSnapshot | None
    changes_state: bool


@dataclass(frozen=True)
class Removal:
    """A stored removal of events: the revision it made and the ids of the
    events it removed, oldest first."""

    revision: int
    event_ids: list[str]


@dataclass(frozen=True)
class SessionChanges:
    """What changed in a session after a revision, read in one snapshot: its
    revision and expiry time, its events after that revision (in order, a
    bounded batch: `more` when more follow) and its removals up to `up_to`,
    the revision the reader has then seen all changes of."""

    revision: int
    expire_time: float | None
    events: list[StoredEvent]
    removals: list[Removal]
    more: bool

    @property
    def up_to(self) -> int:
        return self.events[-1].seq if self.more else max(self.revision, self._last_seq)

    @property
    def _last_seq(self) -> int:
        return self.events[-1].seq if self.events else 0


TombstoneKind = Literal["deleted", "expired", "erased"]


@dataclass(frozen=True)
class Tombstone:
    """A session that left a user's sessions: `seq` counts per user, in
    commit order; `session_id` None for an erasure (every session)."""

    seq: int
    session_id: str | None
    kind: TombstoneKind
    time: float


# Where a user stream is among its user's sessions: every change numbered
# (change number, session id) up to this one sent (app.streams.live).
ChangeCursor = tuple[int, str]


@dataclass(frozen=True)
class ChangedSession:
    """A session as a user stream summarises it, with its change number;
    `removed`: its revision is a removal's."""

    id: str
    revision: int
    update_time: float
    change_number: int
    removed: bool = False


@dataclass(frozen=True)
class UserChanges:
    """What a user stream reads in one snapshot: the tombstones after its
    sequence number (at most a batch, in order), the user's newest sequence
    number, and a page of the user's sessions changed after its cursor in
    change order, all numbered below `horizon` (every change numbered below
    it is committed: none can come later). `pending`: a change is numbered
    at or past the horizon (committed, or not yet), read again soon.
    `next_change`: no cursor a stream sent is past it."""

    tombstones: list[Tombstone]
    newest_seq: int
    sessions: list[ChangedSession]
    more_sessions: bool
    horizon: int
    next_change: int
    pending: bool = False


class _Counts:
    """Counts that add up field by field (a sweep's or an erasure's batches)."""

    def __add__(self, other: Self) -> Self:
        assert is_dataclass(self)
        return type(self)(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


@dataclass(frozen=True)
class Swept(_Counts):
    """What one sweep deleted: counts only."""

    sessions: int = 0
    events: int = 0
    memories: int = 0
    # LangGraph's expired threads (with their checkpoints and writes) and
    # store items, swept after the sessions (app.lifecycle.sweeper).
    threads: int = 0
    store_items: int = 0


@dataclass(frozen=True)
class SharedScopes:
    """The app's and the user's state, as a write left them."""

    app_state: StateDict
    user_state: StateDict


@dataclass(frozen=True)
class Erased(_Counts):
    """What an erasure deleted: counts only (a log line records them)."""

    sessions: int = 0
    events: int = 0
    state_keys: int = 0
    memories: int = 0
    # LangGraph's threads (with their checkpoints and writes) and store items.
    threads: int = 0
    store_items: int = 0


@dataclass(frozen=True)
class MemoryRecord:
    session_id: str
    event_id: str
    author: str
    role: str | None
    timestamp: float
    text: str
    # JSON texts of the content and custom metadata as added; None for rows
    # stored before migration 0005 (and no metadata for event memories).
    content: str | None = None
    custom_metadata: str | None = None
    # Its vector (app.memory.embedding.StoredVector) and the model that made it;
    # None: waiting to be embedded.
    embedding_model: str | None = None
    embedding: bytes | None = None
    embedding_bits: bytes | None = None
    # What the keyword index is built from when it is not `text`: with
    # encryption on, `text` is sealed and this is its plaintext, or "" when
    # the index is not kept (SESSION_STATE_MEMORY_SEARCH_WHEN_ENCRYPTED).
    indexed_text: str | None = None


@dataclass(frozen=True)
class EmbeddingBacklogCount:
    """Memories waiting for the current model's vector, and those given up
    on (their text refused by the embedder too many times; still found by
    keywords)."""

    waiting: int
    given_up: int


@dataclass(frozen=True)
class SessionView:
    """A session as a reader sees it, scopes merged; `events_json` is the
    stored event JSON texts joined by commas (empty for none). `state` None:
    not read (a list without state); `events_json` None: not read (a fork's
    answer); either is then left out of the answer, not shown empty."""

    id: str
    app_name: str
    user_id: str
    state: StateDict | None
    events_json: str | None
    last_update_time: float
    revision: int
    expire_time: float | None = None
    labels: Labels = field(default_factory=dict)


@dataclass(frozen=True)
class SessionPage:
    """`next_after`: where the next page starts, None on the last."""

    sessions: list[SessionView]
    next_after: SessionPosition | None


@dataclass(frozen=True)
class EventPage:
    """Event JSON texts; `next_after_seq`: where the next page starts, None
    on the last."""

    events: list[str]
    next_after_seq: int | None


@dataclass(frozen=True)
class AppendOutcome:
    """`revision` is None when the event was partial and not stored."""

    event: str
    revision: int | None
    created: bool


@dataclass(frozen=True)
class BatchOutcome:
    """`events` are the stored JSON texts, in order; `revision` the one the
    last made; `created` False for a retry of a stored batch."""

    events: list[str]
    revision: int
    created: bool


@dataclass(frozen=True)
class RemovalOutcome:
    """The session after a removal and how many events went (0: nothing
    was there to remove, and nothing was written); `removed_events`, when
    asked for, the JSON texts of those events, oldest first."""

    session: SessionView
    removed: int
    removed_events: list[str] | None = None


class AppendNotApplied(Exception):
    """The append changed nothing: the session is missing, stale, or the event
    id is taken, or (`state_error`) a scope would pass its size limit. The
    service finds out which with a read: a retry of a stored event is still a
    retry, whatever the state's size now."""

    def __init__(self, reason: str, *, state_error: StateTooLarge | None = None) -> None:
        super().__init__(reason)
        self.state_error = state_error
