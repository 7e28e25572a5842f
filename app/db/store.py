"""The one interface between the rules and a database.

`SqliteStore` and `PostgresStore` implement it; `open_store` picks one at
start-up. Each method is one transaction (or one statement) that writes all
of its rows or none. Database failures leave a store as domain errors:
`DatabaseUnavailable` when the database cannot serve now, `AppendNotApplied`
when an append wrote nothing; anything else is a bug.
"""

from collections.abc import Callable, Sequence
from typing import Protocol

from ..domain import (
    Erased,
    MemoryRecord,
    NewEvent,
    SessionCursor,
    SessionKey,
    SessionListing,
    SessionRow,
    SessionSnapshot,
    SharedScopes,
    SortOrder,
    StoredEvent,
)
from ..state import ScopedDelta, StateDict

# What memory keeps of a batch of a session's stored events.
MemoriesOf = Callable[[Sequence[StoredEvent]], list[MemoryRecord]]


class Store(Protocol):
    # -- sessions ------------------------------------------------------------

    async def create_session(
        self, key: SessionKey, delta: ScopedDelta, now: float, max_state_bytes: int
    ) -> SharedScopes | None:
        """Creates the session with the delta's three scopes written; None
        (nothing written) when its id is taken. StateTooLarge when a scope
        would pass `max_state_bytes`."""
        ...

    async def read_snapshot(
        self,
        key: SessionKey,
        limit: int | None,
        after_timestamp: float | None,
        max_events_bytes: int,
    ) -> SessionSnapshot | None:
        """The session with its scopes and its last `limit` events at or
        after the time, all as of one revision; None if there is no such
        session."""
        ...

    async def page_sessions(
        self,
        app_name: str,
        user_id: str | None,
        after: SessionCursor | None,
        limit: int,
        max_bytes: int,
    ) -> SessionListing:
        """Sessions in ADK's order (update time, user id, id) after the
        cursor: at most `limit` and, after the first, `max_bytes` of state."""
        ...

    async def delete_session(self, key: SessionKey, *, with_memories: bool) -> bool:
        """False when there was no such session."""
        ...

    async def append_event(
        self, key: SessionKey, event: NewEvent, expected_revision: int | None, max_state_bytes: int
    ) -> int:
        """Stores the event and applies its delta; returns the new revision.
        AppendNotApplied, with nothing written, when the session is missing,
        is not at `expected_revision`, already holds the event's id, or a
        scope would pass `max_state_bytes`."""
        ...

    async def find_event(self, key: SessionKey, event_id: str) -> StoredEvent | None: ...

    async def read_session(self, key: SessionKey) -> SessionRow | None: ...

    async def page_events(
        self,
        key: SessionKey,
        order: SortOrder,
        after_seq: int | None,
        after_timestamp: float | None,
        limit: int,
        max_bytes: int,
    ) -> tuple[list[StoredEvent], bool] | None:
        """At most `limit` events and `max_bytes` of event JSON, and whether
        more follow; None if there is no such session. ResponseTooLarge when
        the first event alone is larger than `max_bytes`."""
        ...

    async def read_app_state(self, app_name: str) -> StateDict: ...

    async def read_user_state(self, app_name: str, user_id: str) -> StateDict: ...

    # -- memory --------------------------------------------------------------
    # Writes of one user's memory are serialised, so that an add racing a
    # delete_memory cannot bring a deleted id back.

    async def ingest_session(self, key: SessionKey, memories_of: MemoriesOf) -> int | None:
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

    # -- operations ----------------------------------------------------------

    async def check_ready(self) -> None:
        """DatabaseUnavailable unless the database answers and its schema is
        current."""
        ...

    async def close(self) -> None: ...
