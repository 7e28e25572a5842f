"""The storage of sessions, their events and scoped state: the interface
between the session rules and a database.

Each feature has a store protocol of its own (this one, `memory.store`,
`streams.store`, `lifecycle.store`); each backend implements them all on one
connection pool, and `app.stores.Store` is the whole. Each method is one
transaction (or one statement) that writes all of its rows or none. Database
failures leave a store as domain errors: `DatabaseUnavailable` when the
database cannot serve now, `AppendNotApplied` when an append wrote nothing;
anything else is a bug.
"""

from collections.abc import Sequence
from typing import Literal, Protocol

from .domain import (
    ALL_SESSIONS,
    EventsRemoved,
    Expiry,
    ForkSource,
    ListedApp,
    ListedUser,
    NewEvent,
    Popped,
    SessionKey,
    SessionListing,
    SessionPosition,
    SessionQuery,
    SessionRow,
    SessionSnapshot,
    SharedScopes,
    SortOrder,
    StoredEvent,
)
from .labels import Labels
from .state import ScopedDelta, StateDict

ForkOutcome = Literal["forked", "source_missing", "source_changed", "id_taken"]


class SessionStore(Protocol):
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
