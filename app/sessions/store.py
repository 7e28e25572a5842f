"""The one interface between the rules and a database.

`SqliteStore` and `PostgresStore` implement it; `open_store` picks one at
start-up. Each method is one transaction (or one statement) that writes all
of its rows or none. Database failures leave a store as domain errors:
`DatabaseUnavailable` when the database cannot serve now, `AppendNotApplied`
when an append wrote nothing; anything else is a bug.
"""

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from ..memory.embedding import StoredVector
from .domain import (
    ALL_SESSIONS,
    ChangeCursor,
    EmbeddingBacklogCount,
    Erased,
    EventsRemoved,
    Expiry,
    ForkSource,
    ListedApp,
    ListedUser,
    MemoryCandidates,
    MemoryRecord,
    NewEvent,
    Popped,
    SessionChanges,
    SessionKey,
    SessionListing,
    SessionPosition,
    SessionQuery,
    SessionRow,
    SessionSnapshot,
    SharedScopes,
    SortOrder,
    StoredEvent,
    Swept,
    UserChanges,
    VectorQuery,
)
from .labels import Labels
from .state import ScopedDelta, StateDict

# What memory keeps of a batch of a session's stored events.
MemoriesOf = Callable[[Sequence[StoredEvent]], list[MemoryRecord]]
ForkOutcome = Literal["forked", "source_missing", "source_changed", "id_taken"]


class Store(Protocol):
    # Every method that finds a session takes `now`: a session whose expiry
    # time is at or before it is missing for every reader and writer, from
    # that moment, whether or not the sweeper has deleted it yet.

    # -- sessions ------------------------------------------------------------

    async def create_session(
        self,
        key: SessionKey,
        delta: ScopedDelta,
        now: float,
        expiry: Expiry,
        max_state_bytes: int,
        *,
        forget_expired_memories: bool,
        labels: Labels | None = None,
    ) -> SharedScopes | None:
        """Creates the session with the delta's three scopes written (and
        its labels, checked by the caller); None
        (nothing written) when its id is taken. An expired session of that id
        is deleted first, with its events (and, if asked, its memories).
        StateTooLarge when a scope would pass `max_state_bytes`."""
        ...

    async def read_snapshot(
        self,
        key: SessionKey,
        limit: int | None,
        after_timestamp: float | None,
        max_events_bytes: int,
        now: float,
    ) -> SessionSnapshot | None:
        """The session with its scopes and its last `limit` events at or
        after the time, all as of one revision; None if there is no such
        session."""
        ...

    async def page_sessions(
        self,
        app_name: str,
        user_id: str | None,
        after: SessionPosition | None,
        limit: int,
        max_bytes: int,
        now: float,
        query: SessionQuery = ALL_SESSIONS,
    ) -> SessionListing:
        """The sessions `query` selects, in its order (update time, user id,
        id; ADK's when ascending) after the position (only those last
        written before its horizon): at most `limit` and, after the first,
        `max_bytes` of state and labels; with the walk's horizon (a first
        page's, read with its rows). Without `query.include_state` the
        app's and users' state are not read."""
        ...

    async def page_apps(
        self, allowed: frozenset[str] | None, after: str | None, limit: int, now: float
    ) -> tuple[list[ListedApp], bool]:
        """The apps with live sessions (of `allowed` only, unless None) named
        after `after`, by name: at most `limit`, and whether more follow."""
        ...

    async def page_users(
        self, app_name: str, after: str | None, limit: int, now: float
    ) -> tuple[list[ListedUser], bool]:
        """The app's users with live sessions after `after`, by id."""
        ...

    async def delete_session(self, key: SessionKey, *, with_memories: bool, now: float) -> bool:
        """False when there was no such session (an expired one is deleted
        all the same). Leaves a tombstone (`deleted`, or `expired`) in the
        same transaction, as every write that deletes a session does."""
        ...

    async def read_user_changes(
        self,
        app_name: str,
        user_id: str,
        after_seq: int,
        after: ChangeCursor,
        limit: int,
        now: float,
    ) -> UserChanges:
        """In one snapshot: the user's tombstones after `after_seq` (at most
        `limit`, in order), the user's newest tombstone number (0: none),
        and at most `limit` of the user's live sessions changed after the
        cursor, in change order, below the horizon (UserChanges)."""
        ...

    async def prune_tombstones(self, before: float) -> int:
        """Deletes tombstones written before the time, except each user's
        newest; how many."""
        ...

    async def append_event(
        self,
        key: SessionKey,
        event: NewEvent,
        expected_revision: int | None,
        max_state_bytes: int,
        now: float,
        new_expiry: Expiry | None = None,
        new_labels: Labels | None = None,
    ) -> int:
        """Stores the event and applies its delta; returns the new revision.
        An idle timeout restarts at `now`; `new_expiry` replaces the expiry,
        `new_labels` the labels ({}: none), in the same transaction.
        AppendNotApplied, with nothing written, when the session is missing,
        is not at `expected_revision`, already holds the event's id, or a
        scope would pass `max_state_bytes`."""
        ...

    async def append_events(
        self,
        key: SessionKey,
        events: Sequence[NewEvent],
        delta: ScopedDelta,
        expected_revision: int | None,
        max_state_bytes: int,
        now: float,
    ) -> int:
        """Stores the events in order and applies `delta` (their deltas
        merged), all or nothing; returns the revision after the last. An idle
        timeout restarts at `now`. AppendNotApplied, with nothing written,
        for the reasons append_event gives one (any event's id stored)."""
        ...

    async def newest_kept_seq(
        self, key: SessionKey, remove_count: int, now: float
    ) -> tuple[int, int] | None:
        """The session's revision and, read with it, the seq of the event
        that is newest once its newest `remove_count` events go (0 when none
        is left); None if there is no such session."""
        ...

    async def newest_events(
        self, key: SessionKey, count: int, now: float
    ) -> tuple[int, list[StoredEvent]] | None:
        """The session's revision and, read with it, its newest `count`
        events, oldest first; None if there is no such session."""
        ...

    async def remove_events(
        self,
        key: SessionKey,
        after_seq: int,
        expected_revision: int,
        state: StateDict | None,
        now: float,
    ) -> EventsRemoved | None:
        """Deletes the events after `after_seq` and, when `state` is given,
        makes it the session-scope state, if the session is still at
        `expected_revision`: one transaction, counted as one change (revision
        one up, update time `now`, an idle timeout restarted). None, with
        nothing written, when the session is missing or has moved on."""
        ...

    async def pop_newest(
        self,
        key: SessionKey,
        count: int,
        expected_revision: int | None,
        max_bytes: int,
        now: float,
    ) -> Popped | None:
        """Reads the session's newest `count` events with its revision and,
        in the same transaction, removes them as remove_events does (one
        change, recorded alike) unless: there are none, the revision is not
        `expected_revision` (when given), their JSON passes `max_bytes`, or
        one changed session-scope state (`changes_state`: the state after
        must be derived first). The session after it comes back for the
        answer. None, with nothing written, when there is no such session."""
        ...

    async def read_changes(
        self, key: SessionKey, after_revision: int, limit: int, max_bytes: int, now: float
    ) -> SessionChanges | None:
        """The session's changes after `after_revision`, in one snapshot: at
        most `limit` events and, after the first, `max_bytes` of event JSON,
        and the removals of events (stored with their ids by remove_events)
        up to the last event read or, when no more follow, the revision;
        None when there is no such session."""
        ...

    async def set_expiry(
        self, key: SessionKey, expiry: Expiry, expected_revision: int | None, now: float
    ) -> int | None:
        """Replaces the session's expiry; its revision, or None (nothing
        written) when it is missing or not at `expected_revision`."""
        ...

    async def set_labels(
        self,
        key: SessionKey,
        labels: Labels,
        expiry: Expiry | None,
        expected_revision: int | None,
        now: float,
    ) -> int | None:
        """Replaces the session's labels ({}: none) and, when `expiry` is
        given, its expiry, in one write that moves neither its revision nor
        its update time; as set_expiry otherwise."""
        ...

    async def find_event(self, key: SessionKey, event_id: str) -> StoredEvent | None: ...

    async def find_events(
        self, key: SessionKey, event_ids: Sequence[str]
    ) -> dict[str, StoredEvent]:
        """The stored events of these ids, by id (absent ids left out)."""
        ...

    async def read_session(self, key: SessionKey, now: float) -> SessionRow | None: ...

    async def page_events(
        self,
        key: SessionKey,
        order: SortOrder,
        after_seq: int | None,
        after_timestamp: float | None,
        limit: int,
        max_bytes: int,
        now: float,
    ) -> tuple[list[StoredEvent], bool, int] | None:
        """At most `limit` events and `max_bytes` of event JSON, whether
        more follow, and the session's revision, read before them; None if
        there is no such session. ResponseTooLarge when the first event alone
        is larger than `max_bytes`."""
        ...

    async def read_app_state(self, app_name: str) -> StateDict: ...

    async def read_user_state(self, app_name: str, user_id: str) -> StateDict: ...

    # -- fork ----------------------------------------------------------------

    async def read_initial_state(self, key: SessionKey, now: float) -> StateDict | None:
        """The session-scope state the session was created with; None when
        the session is missing or was created before it was recorded."""
        ...

    async def read_events(
        self, key: SessionKey, after_seq: int, up_to_seq: int, limit: int
    ) -> list[StoredEvent]:
        """At most `limit` events with after_seq < seq <= up_to_seq, in order."""
        ...

    async def fork_session(
        self,
        source: ForkSource,
        session_id: str,
        now: float,
        expiry: Expiry,
        *,
        forget_expired_memories: bool,
    ) -> ForkOutcome:
        """Creates session `session_id` of the source's user holding copies of
        its events up to `source.up_to_seq`, copied in batches inside one
        transaction, with `source.state` (or the source's state). The source
        is kept from being deleted, and its events from being removed, until
        the copy commits; "source_changed" (nothing written) when the event
        at `source.up_to_seq` has been removed since the state was derived."""
        ...

    # -- memory --------------------------------------------------------------
    # Writes of one user's memory are serialised, so that an add racing a
    # delete_memory cannot bring a deleted id back.

    async def ingest_session(
        self, key: SessionKey, memories_of: MemoriesOf, now: float
    ) -> int | None:
        """Stores the memories of the session's events not stored yet, read
        in bounded batches; returns how many were added, None if there is no
        such session."""
        ...

    async def add_memories(
        self, app_name: str, user_id: str, records: Sequence[MemoryRecord]
    ) -> int:
        """Stores the memories not stored yet and not forgotten; returns how
        many were added."""
        ...

    async def replace_memories(
        self, app_name: str, user_id: str, records: Sequence[MemoryRecord]
    ) -> None:
        """Stores memories written directly: an id given again replaces its
        memory, and a forgotten id may be written again."""
        ...

    async def forget_memory(self, app_name: str, user_id: str, memory_id: str) -> None:
        """Deletes the memories of that id and remembers it as forgotten; an
        unknown id is a no-op."""
        ...

    async def search_memories(
        self, app_name: str, user_id: str, question: str, limit: int, budget: int
    ) -> list[MemoryRecord]: ...

    async def forget_user_memories(self, app_name: str, user_id: str) -> None: ...

    # -- search by meaning (app.memory.embedding) -------------------------------------

    async def memory_candidates(
        self,
        app_name: str,
        user_id: str,
        question: str,
        keyword_limit: int,
        query: VectorQuery | None,
    ) -> MemoryCandidates:
        """The best keyword matches' row ids (at most `keyword_limit`) and,
        for a vector query, the memories nearest it; each side reads a
        snapshot of its own (`memory_candidates.py`)."""
        ...

    async def read_memories(
        self, app_name: str, user_id: str, ids: Sequence[int], budget: int
    ) -> list[MemoryRecord]:
        """The user's memories of these row ids in that order, as many as fit
        in `budget` bytes (always the first); ids gone meanwhile are skipped."""
        ...

    async def claim_memories_to_embed(
        self,
        model: str,
        limit: int,
        app_name: str | None,
        user_id: str | None,
        *,
        now: float,
        until: float,
        max_tries: int,
    ) -> list[tuple[int, str]]:
        """(row id, text) of at most `limit` memories not embedded by `model`
        (of one app, or one user, when given), refused fewer than `max_tries`
        times, not claimed at `now`, in id order: each claimed until `until`,
        so that no other process takes it meanwhile (one claim per row, also
        when several processes claim at once)."""
        ...

    async def release_memories_to_embed(self, ids: Sequence[int]) -> None:
        """Ends these rows' claims (the embedder failed: others may try)."""
        ...

    async def refuse_memories_to_embed(self, ids: Sequence[int], retry_at: float) -> None:
        """The embedder refused these rows' texts alone: one more refusal
        each, and not claimed again before `retry_at`."""
        ...

    async def retry_refused_embeddings(
        self, model: str, app_name: str | None, user_id: str | None
    ) -> int:
        """Forgets the refusals of the memories waiting for `model`, so that
        they are tried again; returns how many had any."""
        ...

    async def count_memories_to_embed(
        self, model: str, app_name: str | None, user_id: str | None, max_tries: int
    ) -> EmbeddingBacklogCount: ...

    async def store_embeddings(
        self, model: str, vectors: Sequence[tuple[int, StoredVector]]
    ) -> None:
        """Sets these rows' vectors, ending their claims and refusals (rows
        deleted meanwhile are skipped)."""
        ...

    # -- erasure -------------------------------------------------------------
    # Sessions go with their events in transactions of at most `batch_events`
    # events (a bigger session alone in its own), so an erasure never holds
    # many rows locked and a session is never left with part of its events;
    # the scope's state and memories go last, in one transaction.

    async def erase_user(self, app_name: str, user_id: str, batch_events: int) -> Erased:
        """Everything of the user in the app: sessions, events, user state,
        memories (forgotten ids included)."""
        ...

    async def erase_app(self, app_name: str, batch_events: int) -> Erased:
        """Everything of the app: every user's sessions, events, user state and
        memories, and the app state."""
        ...

    # -- the sweeper ---------------------------------------------------------

    async def sweep_expired(
        self,
        now: float,
        batch_events: int,
        *,
        with_memories: bool,
        expired: list[SessionKey] | None = None,
    ) -> Swept | None:
        """Deletes the sessions expired at `now` with their events (and, if
        asked, their memories), a transaction per batch as an erasure does,
        each leaving an `expired` tombstone (and added to `expired` once
        committed); None when another process is sweeping this database."""
        ...

    async def count_expired(self, now: float) -> int:
        """Expired sessions not deleted yet."""
        ...

    # -- operations ----------------------------------------------------------

    async def check_ready(self) -> None:
        """DatabaseUnavailable unless the database answers and its schema is
        current."""
        ...

    async def close(self) -> None: ...
