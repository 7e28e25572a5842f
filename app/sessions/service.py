"""The rules of the service: scopes, ``temp:``, revisions, preconditions and
idempotent appends. Routes call this; this calls the store. It takes and
gives domain values (keys, cursors, revisions) and raises domain errors:
HTTP's names for them are the routes'."""

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from ..core import json_codec
from ..core.config import RESPONSE_OVERHEAD_BYTES
from ..core.errors import (
    EventIdConflict,
    InvalidInput,
    InvocationNotFound,
    PayloadTooLarge,
    ResponseTooLarge,
    SessionAlreadyExists,
    SessionNotFound,
    StaleSession,
)
from ..core.limits import Limits
from ..core.metrics import EVENTS_STORED
from . import fork_points, history
from .changes import Change, ChangeKind, ChangePublisher, NoFollowers
from .domain import (
    ALL_SESSIONS,
    AppendNotApplied,
    AppendOutcome,
    BatchOutcome,
    EventPage,
    Expiry,
    ForkSource,
    ListedApp,
    ListedUser,
    RemovalOutcome,
    SessionKey,
    SessionPage,
    SessionPosition,
    SessionQuery,
    SessionRow,
    SessionSnapshot,
    SessionView,
    SortOrder,
    StoredEvent,
)
from .events import PreparedEvent, is_same_event, prepare_batch, prepare_event
from .expiry import ExpiryDefaults, check_requested
from .labels import Labels
from .replica import ReadRouting, Replica
from .state import StateDict, find_long_key, merge_deltas, merge_scopes, split_delta
from .store import SessionStore

logger = logging.getLogger("session_state")

# A write that wrote nothing is explained by a read; if the read finds no
# reason (the session changed in between), the write is tried again.
WRITE_ATTEMPTS = 3
# What a batch's answer holds besides its events: {"events":[...]}.
BATCH_ANSWER_WRAPPER = b'{"events":[]}'


def new_uuid() -> str:
    return str(uuid.uuid4())


class SessionService:
    def __init__(
        self,
        store: SessionStore,
        limits: Limits | None = None,
        *,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = new_uuid,
        expiry_defaults: ExpiryDefaults | None = None,
        forget_expired_memories: bool = False,
        replica: Replica[SessionStore] | None = None,
        changes: ChangePublisher | None = None,
    ) -> None:
        """Writes, and reads that need the latest truth, go to `store`;
        session reads, lists and event pages to `replica` when it may
        answer them (app.sessions.replica)."""
        self.store = store
        # Told of each committed change, for live streams (app.streams.live).
        self.changes = changes or NoFollowers()
        self.reads = ReadRouting(store, replica)
        self.expiry_defaults = expiry_defaults or ExpiryDefaults()
        self.forget_expired_memories = forget_expired_memories
        self.limits = limits or Limits()
        self.clock = clock
        self.new_id = new_id
        # What a whole session read may carry in events: the response bound
        # less room for the three scopes' state, each at most its limit.
        self.session_events_budget = (
            self.limits.max_response_bytes
            - 3 * self.limits.max_state_bytes
            - RESPONSE_OVERHEAD_BYTES
        )

    async def create_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None,
        state: StateDict | None,
        expiry: Expiry | None = None,
        labels: Labels | None = None,
    ) -> SessionView:
        """`expiry` None: the app's default expiry, else the deployment's.
        `labels` are checked (schemas.SessionLabels)."""
        key = SessionKey(app_name, user_id, session_id or self.new_id())
        if (long_key := find_long_key(state or {}, self.limits)) is not None:
            raise InvalidInput([long_key.under("body", "state")])
        delta = split_delta(state or {})
        now = self.clock()
        expiry = self._expiry(expiry, app_name, now)
        shared = await self.store.create_session(
            key,
            delta,
            now,
            expiry,
            self.limits.max_state_bytes,
            forget_expired_memories=self.forget_expired_memories,
            labels=labels or {},
        )
        if shared is None:
            raise SessionAlreadyExists.of(key)
        self._published(key, "created", 0)
        return SessionView(
            id=key.session_id,
            app_name=app_name,
            user_id=user_id,
            state=merge_scopes(delta.session, shared.app_state, shared.user_state),
            events_json="",
            last_update_time=now,
            revision=0,
            expire_time=expiry.time_after(now),
            labels=labels or {},
        )

    def _expiry(self, requested: Expiry | None, app_name: str, now: float) -> Expiry:
        """The expiry a new session gets: the one asked for (checked), else
        its app's default, else the deployment's."""
        if requested is None:
            return self.expiry_defaults.for_app(app_name)
        check_requested(requested, now)
        return requested

    async def get_session(
        self,
        key: SessionKey,
        num_recent_events: int | None = None,
        after_timestamp: float | None = None,
        min_revision: int | None = None,
    ) -> SessionView:
        """`min_revision`: the revision the reader last saw; a replica that
        has not reached it does not answer (nor one without the session)."""
        budget = self.session_events_budget
        now = self.clock()
        snapshot = await self.reads.read(
            lambda store: store.read_snapshot(key, num_recent_events, after_timestamp, budget, now),
            lambda found: found is not None and _reached(found.session.revision, min_revision),
        )
        return self._session_view(key, snapshot)

    async def _latest_session(
        self, key: SessionKey, num_recent_events: int | None = None
    ) -> SessionView:
        """The session as the primary has it: what a write answers with."""
        budget = self.session_events_budget
        snapshot = await self.store.read_snapshot(
            key, num_recent_events, None, budget, self.clock()
        )
        return self._session_view(key, snapshot)

    def _session_view(self, key: SessionKey, snapshot: SessionSnapshot | None) -> SessionView:
        budget = self.session_events_budget
        if snapshot is None:
            raise SessionNotFound.of(key)
        if snapshot.events_json is None:
            raise ResponseTooLarge.session_events(snapshot.events_bytes, budget)
        return _view(
            key, snapshot.session, snapshot.app_state, snapshot.user_state, snapshot.events_json
        )

    async def list_sessions(
        self,
        app_name: str,
        user_id: str | None,
        page_size: int,
        after: SessionPosition | None,
        query: SessionQuery = ALL_SESSIONS,
    ) -> SessionPage:
        """The sessions `query` selects after `after` (all users' when
        `user_id` is None); without `query.include_state`, with no state.
        A walk is pinned by its first page's horizon, which every position
        after it carries."""
        max_bytes = self.limits.max_response_bytes - RESPONSE_OVERHEAD_BYTES
        now = self.clock()
        listing = await self.reads.read(
            lambda store: store.page_sessions(
                app_name, user_id, after, page_size, max_bytes, now, query
            )
        )
        page = listing.sessions
        sessions = [
            _view(
                SessionKey(app_name, row.user_id, row.id),
                row,
                listing.app_state,
                listing.user_states.get(row.user_id, {}),
                include_state=query.include_state,
            )
            for row in page
        ]
        if not (listing.more and page) or listing.horizon is None:
            return SessionPage(sessions, None)
        last = page[-1]
        cursor = (last.update_time, last.user_id, last.id)
        return SessionPage(sessions, SessionPosition(cursor, listing.horizon))

    async def list_apps(
        self, allowed: frozenset[str] | None, page_size: int, after: str | None
    ) -> tuple[list[ListedApp], str | None]:
        """The apps with live sessions (of `allowed`, unless None), by name,
        after `after`; and where the next page starts (None: the last)."""
        now = self.clock()
        apps, more = await self.reads.read(
            lambda store: store.page_apps(allowed, after, page_size, now)
        )
        return apps, apps[-1].app_name if more and apps else None

    async def list_users(
        self, app_name: str, page_size: int, after: str | None
    ) -> tuple[list[ListedUser], str | None]:
        """The app's users with live sessions, by id, after `after`."""
        now = self.clock()
        users, more = await self.reads.read(
            lambda store: store.page_users(app_name, after, page_size, now)
        )
        return users, users[-1].user_id if more and users else None

    async def delete_session(self, key: SessionKey, *, delete_memories: bool = False) -> None:
        if not await self.store.delete_session(
            key, with_memories=delete_memories, now=self.clock()
        ):
            raise SessionNotFound.of(key)
        self._published(key, "deleted", None)

    async def append_event(
        self,
        key: SessionKey,
        document: Any,
        expected_revision: int | None,
        new_expiry: Expiry | None = None,
        new_labels: Labels | None = None,
    ) -> AppendOutcome:
        """`new_expiry` replaces the session's expiry with the event, and
        `new_labels` its labels, atomically."""
        prepared = prepare_event(document, self.limits, now=self.clock, new_id=self.new_id)
        if prepared.partial:
            return AppendOutcome(json_codec.dumps_text(document), None, created=False)
        record, max_state_bytes = prepared.record, self.limits.max_state_bytes
        outcome = await self._append(
            key,
            [prepared],
            expected_revision,
            lambda now: self.store.append_event(
                key, record, expected_revision, max_state_bytes, now, new_expiry, new_labels
            ),
            while_doing="the event was appended",
        )
        return AppendOutcome(outcome.events[0], outcome.revision, outcome.created)

    async def append_events(
        self, key: SessionKey, body: Any, expected_revision: int | None
    ) -> BatchOutcome:
        """Appends the batch's events in order, all or none, with one revision
        check; a batch whose events are all stored already (same content) is
        a retry, answered with them."""
        prepared = prepare_batch(body, self.limits, now=self.clock, new_id=self.new_id)
        records = [event.record for event in prepared]
        # The answer carries the stored events: a batch is refused whole,
        # before anything is written, when they would not fit in it.
        answer_bytes = len(BATCH_ANSWER_WRAPPER) + sum(
            len(record.data.encode()) + 1 for record in records
        )
        if answer_bytes > self.limits.max_response_bytes:
            raise PayloadTooLarge.batch_answer(answer_bytes, self.limits.max_response_bytes)
        delta = merge_deltas(record.delta for record in records)
        max_state_bytes = self.limits.max_state_bytes
        return await self._append(
            key,
            prepared,
            expected_revision,
            lambda now: self.store.append_events(
                key, records, delta, expected_revision, max_state_bytes, now
            ),
            while_doing="the events were appended",
        )

    async def _append(
        self,
        key: SessionKey,
        prepared: list[PreparedEvent],
        expected_revision: int | None,
        write: Callable[[float], Awaitable[int]],
        *,
        while_doing: str,
    ) -> BatchOutcome:
        """Stores `prepared` by `write` (all or none, returning the revision
        made); the one place events are counted as stored."""
        for _ in range(WRITE_ATTEMPTS):
            try:
                revision = await write(self.clock())
            except AppendNotApplied as not_applied:
                retried = await self._explain_unapplied(
                    key, prepared, expected_revision, not_applied
                )
                if retried is not None:
                    return retried
                continue
            EVENTS_STORED.inc(len(prepared))
            self._published(key, "appended", revision)
            return BatchOutcome([event.record.data for event in prepared], revision, created=True)
        raise StaleSession.kept_changing(while_doing)

    async def _explain_unapplied(
        self,
        key: SessionKey,
        prepared: list[PreparedEvent],
        expected_revision: int | None,
        not_applied: AppendNotApplied,
    ) -> BatchOutcome | None:
        """Why an append of `prepared` wrote nothing, as the outcome (a retry:
        every event stored with the same content) or error to answer with;
        None when the reason is gone and the append should be tried again."""
        # The session first: an expired one's events are not there any more.
        session = await self.store.read_session(key, self.clock())
        if session is None:
            raise SessionNotFound.of(key)
        # A retry is recognised before the precondition: the first attempt
        # may have moved the revision the client still holds.
        stored = await self.store.find_events(key, [event.record.id for event in prepared])
        for event in prepared:
            found = stored.get(event.record.id)
            if found is not None and not is_same_event(json_codec.loads(found.data), event):
                raise EventIdConflict.of(event.record.id)
        if stored and len(stored) < len(prepared):
            missing = next(event.record.id for event in prepared if event.record.id not in stored)
            raise EventIdConflict.partly_stored_batch(missing)
        if stored:
            ordered = [stored[event.record.id] for event in prepared]
            return BatchOutcome(
                [event.data for event in ordered], max(e.seq for e in ordered), created=False
            )
        _check_expected(session.revision, expected_revision)
        if not_applied.state_error is not None:
            raise not_applied.state_error
        return None

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
            _check_expected(revision, expected_revision)
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
            _check_expected(popped.revision, expected_revision)
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

    async def patch_session(
        self,
        key: SessionKey,
        state_delta: StateDict | None,
        new_expiry: Expiry | None,
        expected_revision: int | None,
        labels: Labels | None = None,
    ) -> SessionView:
        """Changes the state (recorded as an event, as ADK's own PATCH
        endpoint does), the labels (`{}` clears them) and/or the expiry, all
        or nothing. Labels alone move neither the revision nor the update
        time; with a state change they are written with its event."""
        if new_expiry is not None:
            check_requested(new_expiry, self.clock())
        if labels is not None and state_delta is None:
            now = self.clock()
            written = await self.store.set_labels(key, labels, new_expiry, expected_revision, now)
            if written is None:
                raise await self._why_not_written(key)
            # User streams summarise it (session streams send nothing).
            self._published(key, "changed", written)
            return await self._latest_session(key)
        if state_delta is not None:
            if (long_key := find_long_key(state_delta, self.limits)) is not None:
                raise InvalidInput([long_key.under("body", "stateDelta")])
            event = {
                "id": self.new_id(),
                "invocationId": f"p-{self.new_id()}",
                "author": "user",
                "actions": {"stateDelta": state_delta},
                "timestamp": self.clock(),
            }
            await self.append_event(key, event, expected_revision, new_expiry, labels)
        elif new_expiry is not None:
            await self._set_expiry(key, new_expiry, expected_revision)
        return await self._latest_session(key)

    async def _set_expiry(
        self, key: SessionKey, expiry: Expiry, expected_revision: int | None
    ) -> None:
        now = self.clock()
        revision = await self.store.set_expiry(key, expiry, expected_revision, now)
        if revision is None:
            raise await self._why_not_written(key)
        # No message: streams learn the new expiry time.
        self._published(key, "changed", revision)

    async def _why_not_written(self, key: SessionKey) -> SessionNotFound | StaleSession:
        """Why a conditional write wrote nothing: the session is gone, or it
        moved past the revision the write expected."""
        if await self.store.read_session(key, self.clock()) is None:
            return SessionNotFound.of(key)
        return StaleSession.moved_on()

    async def fork_session(
        self,
        key: SessionKey,
        new_session_id: str | None,
        up_to_event_id: str | None,
        expiry: Expiry | None,
        labels: Labels | None = None,
        before_invocation_id: str | None = None,
    ) -> SessionView:
        """A new session of the same user with copies of the events up to and
        including `up_to_event_id`, or those before the first event of the
        invocation `before_invocation_id` (neither: all), and the session
        state they leave; app and user state are shared. `expiry` None: the
        defaults; `labels` None: the source's."""
        now = self.clock()
        source = await self.store.read_session(key, now)
        if source is None:
            raise SessionNotFound.of(key)
        fork = ForkSource(key, None, None, labels)
        if up_to_event_id is not None:
            fork = await fork_points.up_to_event(self.store, source, up_to_event_id, now, labels)
        elif before_invocation_id is not None:
            fork = await fork_points.before_invocation(
                self.store, source, before_invocation_id, now, labels
            )
        new_key = SessionKey(key.app_name, key.user_id, new_session_id or self.new_id())
        outcome = await self.store.fork_session(
            fork,
            new_key.session_id,
            now,
            self._expiry(expiry, key.app_name, now),
            forget_expired_memories=self.forget_expired_memories,
        )
        if outcome == "source_missing":
            raise SessionNotFound.of(key)
        if outcome == "source_changed":
            # The event before the fork point was removed after the state was derived.
            if before_invocation_id is not None:
                raise InvocationNotFound.of(key, before_invocation_id)
            raise InvalidInput.no_such_event(["body", "upToEventId"], key)
        if outcome == "id_taken":
            raise SessionAlreadyExists.of(new_key)
        forked = await self._latest_session(new_key, num_recent_events=0)
        self._published(new_key, "created", forked.revision)
        # The copies may be many: the answer leaves them out rather than
        # showing an empty list that reads as "no events".
        return replace(forked, events_json=None)

    async def list_events(
        self,
        key: SessionKey,
        order: SortOrder,
        page_size: int,
        after_seq: int | None,
        after_timestamp: float | None,
        min_revision: int | None = None,
    ) -> EventPage:
        """The events after `after_seq` in `order`; `min_revision` as
        get_session takes it."""
        max_bytes = self.limits.max_response_bytes - RESPONSE_OVERHEAD_BYTES
        now = self.clock()
        found = await self.reads.read(
            lambda store: store.page_events(
                key, order, after_seq, after_timestamp, page_size, max_bytes, now
            ),
            lambda found: found is not None and _reached(found[2], min_revision),
        )
        if found is None:
            raise SessionNotFound.of(key)
        page, more, _revision = found
        return EventPage([row.data for row in page], page[-1].seq if more and page else None)

    def _published(self, key: SessionKey, kind: ChangeKind, revision: int | None) -> None:
        self.changes.publish(Change(key.app_name, key.user_id, key.session_id, kind, revision))

    async def get_user_state(self, app_name: str, user_id: str) -> StateDict:
        return await self.store.read_user_state(app_name, user_id)

    async def get_app_state(self, app_name: str) -> StateDict:
        return await self.store.read_app_state(app_name)


def _check_expected(revision: int, expected_revision: int | None) -> None:
    if expected_revision is not None and revision != expected_revision:
        raise StaleSession.moved_on()


def _view(
    key: SessionKey,
    row: SessionRow,
    app_state: StateDict,
    user_state: StateDict,
    events_json: str = "",
    *,
    include_state: bool = True,
) -> SessionView:
    return SessionView(
        id=key.session_id,
        app_name=key.app_name,
        user_id=key.user_id,
        state=merge_scopes(row.state, app_state, user_state) if include_state else None,
        events_json=events_json,
        last_update_time=row.update_time,
        revision=row.revision,
        expire_time=row.expire_time,
        labels=row.labels,
    )


def _reached(revision: int, min_revision: int | None) -> bool:
    return min_revision is None or revision >= min_revision
