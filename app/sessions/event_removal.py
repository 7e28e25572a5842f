"""Removing a session's newest events, or those after one, in one change
that also rolls the session-scope state back (`EventRemoval`, a part of
`SessionService`)."""

from ..core.errors import InvalidInput, ResponseTooLarge, SessionNotFound, StaleSession
from . import history
from .domain import RemovalOutcome, SessionKey, StoredEvent
from .service_base import WRITE_ATTEMPTS, SessionServiceBase, check_expected


class EventRemoval(SessionServiceBase):
    async def remove_events(
        self,
        key: SessionKey,
        *,
        after_event_id: str | None = None,
        last: int | None = None,
        expected_revision: int | None = None,
        return_removed: bool = False,
    ) -> RemovalOutcome:
        """Removes the newest `last` events, or those after `after_event_id`,
        or (neither) all of them, in one change; the session-scope state
        becomes the one the remaining events leave (app and user state are
        shared: not rolled back). Nothing to remove writes nothing.
        `return_removed` (with `last` at most MAX_RETURNED_REMOVED_EVENTS):
        the outcome holds the removed events, exactly those the removal took
        (it is guarded by the revision they were read at)."""
        if return_removed and last is not None:
            popped = await self._pop(key, last, expected_revision)
            if popped is not None:
                return popped
        for _ in range(WRITE_ATTEMPTS):
            now = self.clock()
            going: list[StoredEvent] | None = None
            if return_removed and last is not None:
                # The events themselves, read with the revision in one go.
                found = await self.store.newest_events(key, last, now)
                if found is None:
                    raise SessionNotFound.of(key)
                revision, going = found
                # Seqs only grow: every event after the cut is one read.
                cut = going[0].seq - 1 if going else 0
            else:
                revision, cut = await self._removal_point(key, after_event_id, last, now)
            check_expected(revision, expected_revision)
            if going is not None:
                self._check_answerable(going)
                state_changed = history.changes_session_state(going) if going else None
            else:
                state_changed = await history.touches_session_state(self.store, key, cut, revision)
            if state_changed is None:  # no event after the cut
                session = await self._latest_session(key, num_recent_events=0)
                # Revisions only go up: still at the one read first, nothing
                # happened in between, so there was nothing to remove.
                if session.revision == revision:
                    return RemovalOutcome(session, 0, [] if return_removed else None)
                continue
            state = await history.state_after(self.store, key, cut, now) if state_changed else None
            removed = await self.store.remove_events(key, cut, revision, state, now)
            if removed is not None:
                self._published(key, "removed", removed.revision)
                return RemovalOutcome(
                    await self._latest_session(key, num_recent_events=0),
                    removed.count,
                    None if going is None else [event.data for event in going],
                )
            if expected_revision is not None:
                raise await self._why_not_written(key)
        raise StaleSession.kept_changing("its events were removed")

    async def _pop(
        self, key: SessionKey, count: int, expected_revision: int | None
    ) -> RemovalOutcome | None:
        """The newest `count` events removed, read and answered in one
        store call (Store.pop_newest); None when one of them changed
        session-scope state, whose derivation remove_events' general path
        does. The same checks, in the same order, as that path."""
        for _ in range(WRITE_ATTEMPTS):
            now = self.clock()
            budget = self.session_events_budget
            popped = await self.store.pop_newest(key, count, expected_revision, budget, now)
            if popped is None:
                raise SessionNotFound.of(key)
            check_expected(popped.revision, expected_revision)
            self._check_answerable(popped.events)
            if popped.removed is not None and popped.session is not None:
                self._published(key, "removed", popped.session.session.revision)
                session = self._session_view(key, popped.session)
                return RemovalOutcome(
                    session, popped.removed, [event.data for event in popped.events]
                )
            if popped.changes_state or popped.session is None:
                return None
            if not popped.events:
                return RemovalOutcome(self._session_view(key, popped.session), 0, [])
            # The session moved on between the read and the removal.
            if expected_revision is not None:
                raise await self._why_not_written(key)
        raise StaleSession.kept_changing("its events were removed")

    def _check_answerable(self, events: list[StoredEvent]) -> None:
        """Removed events to answer with must fit in the answer: checked
        before anything is removed."""
        size = sum(len(event.data.encode()) for event in events)
        if size > self.session_events_budget:
            raise ResponseTooLarge.removed_events(size, self.session_events_budget)

    async def _removal_point(
        self, key: SessionKey, after_event_id: str | None, last: int | None, now: float
    ) -> tuple[int, int]:
        """The session's revision and the seq after which its events go."""
        if last is not None:
            found = await self.store.newest_kept_seq(key, last, now)
            if found is None:
                raise SessionNotFound.of(key)
            return found
        session = await self.store.read_session(key, now)
        if session is None:
            raise SessionNotFound.of(key)
        if after_event_id is None:
            return session.revision, 0
        stored = await self.store.find_event(key, after_event_id)
        if stored is None:
            raise InvalidInput.no_such_event(["query", "after"], key)
        return session.revision, stored.seq
