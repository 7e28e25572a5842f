"""The store as the services see it when content is encrypted at rest: each
method that writes what people said seals it on the way in, each that reads
it opens it on the way out; everything else goes to the backend's store as
it is (`__getattr__`).

The backends store sealed values as they store plaintext ones, so every
rule of theirs holds unchanged: appends still merge state in SQL key by key
(each value sealed, the delta passed beside the event as before), revisions,
ETags and locks are untouched, a fork copies sealed rows as they are. Size
limits and response budgets count what is stored (docs/security.md).
Everything that reaches the store goes through here, the fast paths'
appends and reads included, since they call the same services."""

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..core.encryption import ValueCipher
from ..memory.store import SessionIngestion
from ..sessions.domain import (
    ALL_SESSIONS,
    EventsRemoved,
    Expiry,
    ForkSource,
    MemoryRecord,
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
from ..sessions.history import changes_session_state
from ..sessions.labels import Labels
from ..sessions.state import ScopedDelta, StateDict
from ..sessions.store import ForkOutcome
from .sealing import Sealer


class SealedStore:
    def __init__(self, inner: Any, sealer: Sealer) -> None:
        self._inner = inner
        self.sealer = sealer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def inner(self) -> Any:
        """The backend's store behind this one."""
        return self._inner

    # LangGraph's storage seals its own values (app.langgraph.sealing), with
    # this store's cipher unless given another.
    def checkpoint_store(self, cipher: ValueCipher | None = None) -> Any:
        return self._inner.checkpoint_store(cipher or self.sealer.cipher)

    def item_storage(self, cipher: ValueCipher | None = None) -> Any:
        return self._inner.item_storage(cipher or self.sealer.cipher)

    # -- opening what is read ----------------------------------------------------

    def _row(self, row: SessionRow) -> SessionRow:
        return replace(row, state=self.sealer.open_state(row.state))

    def _snapshot(self, snapshot: SessionSnapshot) -> SessionSnapshot:
        opened = self.sealer
        return replace(
            snapshot,
            session=self._row(snapshot.session),
            app_state=opened.open_state(snapshot.app_state),
            user_state=opened.open_state(snapshot.user_state),
            events_json=None
            if snapshot.events_json is None
            else opened.open_events_json(snapshot.events_json),
        )

    # -- sessions --------------------------------------------------------------------

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
        scopes = await self._inner.create_session(
            key,
            self.sealer.seal_delta(delta),
            now,
            expiry,
            max_state_bytes,
            forget_expired_memories=forget_expired_memories,
            labels=labels,
        )
        if scopes is None:
            return None
        return SharedScopes(
            self.sealer.open_state(scopes.app_state), self.sealer.open_state(scopes.user_state)
        )

    async def read_snapshot(
        self,
        key: SessionKey,
        limit: int | None,
        after_timestamp: float | None,
        max_events_bytes: int,
        now: float,
    ) -> SessionSnapshot | None:
        snapshot = await self._inner.read_snapshot(
            key, limit, after_timestamp, max_events_bytes, now
        )
        return None if snapshot is None else self._snapshot(snapshot)

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
        listing: SessionListing = await self._inner.page_sessions(
            app_name, user_id, after, limit, max_bytes, now, query
        )
        opened = self.sealer.open_state
        return replace(
            listing,
            sessions=[self._row(row) for row in listing.sessions],
            app_state=opened(listing.app_state),
            user_states={user: opened(state) for user, state in listing.user_states.items()},
        )

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
        revision: int = await self._inner.append_event(
            key,
            self.sealer.seal_event(event),
            expected_revision,
            max_state_bytes,
            now,
            new_expiry,
            new_labels,
        )
        return revision

    async def append_events(
        self,
        key: SessionKey,
        events: Sequence[NewEvent],
        delta: ScopedDelta,
        expected_revision: int | None,
        max_state_bytes: int,
        now: float,
    ) -> int:
        sealer = self.sealer
        revision: int = await self._inner.append_events(
            key,
            # Each event's own delta is not used by a batch: `delta` is theirs merged.
            [replace(sealer.seal_event(event), delta=ScopedDelta()) for event in events],
            sealer.seal_delta(delta),
            expected_revision,
            max_state_bytes,
            now,
        )
        return revision

    async def newest_events(
        self, key: SessionKey, count: int, now: float
    ) -> tuple[int, list[StoredEvent]] | None:
        found = await self._inner.newest_events(key, count, now)
        if found is None:
            return None
        revision, events = found
        return revision, self.sealer.open_events(events)

    async def remove_events(
        self,
        key: SessionKey,
        after_seq: int,
        expected_revision: int,
        state: StateDict | None,
        now: float,
    ) -> EventsRemoved | None:
        sealed = None if state is None else self.sealer.seal_state(state)
        removed: EventsRemoved | None = await self._inner.remove_events(
            key, after_seq, expected_revision, sealed, now
        )
        return removed

    async def pop_newest(
        self,
        key: SessionKey,
        count: int,
        expected_revision: int | None,
        max_bytes: int,
        now: float,
    ) -> Popped | None:
        popped: Popped | None = await self._inner.pop_newest(
            key, count, expected_revision, max_bytes, now
        )
        if popped is None:
            return None
        events = self.sealer.open_events(popped.events)
        # The store takes sealed events for ones that changed state: opened,
        # they say.
        changes_state = popped.changes_state and changes_session_state(events)
        if (
            popped.changes_state
            and not changes_state
            and popped.removed is None
            and events
            and expected_revision in (None, popped.revision)
            and sum(len(event.data.encode()) for event in events) <= max_bytes
        ):
            # The store took the sealed events for ones that changed state;
            # opened, they did not: removed as the store would have, at the
            # revision read (a session that moved on since is left alone).
            return await self._pop_opened(key, popped.revision, events, max_bytes, now)
        return replace(
            popped,
            events=events,
            session=None if popped.session is None else self._snapshot(popped.session),
            changes_state=changes_state,
        )

    async def _pop_opened(
        self, key: SessionKey, revision: int, events: list[StoredEvent], max_bytes: int, now: float
    ) -> Popped | None:
        done = await self._inner.remove_events(key, events[0].seq - 1, revision, None, now)
        after = await self.read_snapshot(key, 0, None, max_bytes, now)
        return Popped(revision, events, None if done is None else done.count, after, False)

    async def find_event(self, key: SessionKey, event_id: str) -> StoredEvent | None:
        found = await self._inner.find_event(key, event_id)
        return None if found is None else self.sealer.open_event(found)

    async def find_events(
        self, key: SessionKey, event_ids: Sequence[str]
    ) -> dict[str, StoredEvent]:
        found = await self._inner.find_events(key, event_ids)
        return {event_id: self.sealer.open_event(event) for event_id, event in found.items()}

    async def read_session(self, key: SessionKey, now: float) -> SessionRow | None:
        row = await self._inner.read_session(key, now)
        return None if row is None else self._row(row)

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
        page = await self._inner.page_events(
            key, order, after_seq, after_timestamp, limit, max_bytes, now
        )
        if page is None:
            return None
        events, more, revision = page
        return self.sealer.open_events(events), more, revision

    async def read_app_state(self, app_name: str) -> StateDict:
        return self.sealer.open_state(await self._inner.read_app_state(app_name))

    async def read_user_state(self, app_name: str, user_id: str) -> StateDict:
        return self.sealer.open_state(await self._inner.read_user_state(app_name, user_id))

    async def read_initial_state(self, key: SessionKey, now: float) -> StateDict | None:
        state = await self._inner.read_initial_state(key, now)
        return None if state is None else self.sealer.open_state(state)

    async def read_events(
        self, key: SessionKey, after_seq: int, up_to_seq: int, limit: int
    ) -> list[StoredEvent]:
        events = await self._inner.read_events(key, after_seq, up_to_seq, limit)
        return self.sealer.open_events(events)

    async def fork_session(
        self,
        source: ForkSource,
        session_id: str,
        now: float,
        expiry: Expiry,
        *,
        forget_expired_memories: bool,
    ) -> ForkOutcome:
        if source.state is not None:
            source = replace(source, state=self.sealer.seal_state(source.state))
        outcome: ForkOutcome = await self._inner.fork_session(
            source, session_id, now, expiry, forget_expired_memories=forget_expired_memories
        )
        return outcome

    # -- streams ---------------------------------------------------------------------

    async def read_changes(
        self, key: SessionKey, after_revision: int, limit: int, max_bytes: int, now: float
    ) -> Any:
        changes = await self._inner.read_changes(key, after_revision, limit, max_bytes, now)
        if changes is None:
            return None
        return replace(changes, events=self.sealer.open_events(changes.events))

    # -- memory ----------------------------------------------------------------------

    async def ingest_session(
        self, key: SessionKey, ingestion: SessionIngestion, now: float
    ) -> int | None:
        added: int | None = await self._inner.ingest_session(
            key, self.sealer.sealing(ingestion), now
        )
        return added

    async def remove_session_memories(
        self, app_name: str, user_id: str, session_id: str, event_ids: Sequence[str]
    ) -> None:
        await self._inner.remove_session_memories(app_name, user_id, session_id, event_ids)

    async def add_memories(
        self, app_name: str, user_id: str, records: Sequence[MemoryRecord]
    ) -> int:
        sealed = [self.sealer.seal_memory(record) for record in records]
        added: int = await self._inner.add_memories(app_name, user_id, sealed)
        return added

    async def replace_memories(
        self, app_name: str, user_id: str, records: Sequence[MemoryRecord]
    ) -> None:
        sealed = [self.sealer.seal_memory(record) for record in records]
        await self._inner.replace_memories(app_name, user_id, sealed)

    async def search_memories(
        self, app_name: str, user_id: str, question: str, limit: int, budget: int
    ) -> list[tuple[MemoryRecord, float]]:
        found = await self._inner.search_memories(app_name, user_id, question, limit, budget)
        return [(self.sealer.open_memory(record), share) for record, share in found]

    async def read_memories(
        self, app_name: str, user_id: str, ids: Sequence[int], budget: int
    ) -> list[tuple[int, MemoryRecord]]:
        found = await self._inner.read_memories(app_name, user_id, ids, budget)
        return [(row, self.sealer.open_memory(record)) for row, record in found]

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
        if self.sealer.cipher is not None and self.sealer.memory_search == "off":
            return []  # no vector is kept of a sealed text
        claimed = await self._inner.claim_memories_to_embed(
            model, limit, app_name, user_id, now=now, until=until, max_tries=max_tries
        )
        return [(row, self.sealer.open_memory_text(text)) for row, text in claimed]
