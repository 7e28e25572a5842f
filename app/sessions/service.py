"""The rules of the service: scopes, ``temp:``, revisions, preconditions and
idempotent appends. Routes call this; this calls the store. It takes and
gives domain values (keys, cursors, revisions) and raises domain errors:
HTTP's names for them are the routes'. Removals and forks are its parts
(event_removal, session_forking), on what they share (service_base)."""

from collections.abc import Awaitable, Callable
from typing import Any

from ..core import json_codec
from ..core.config import RESPONSE_OVERHEAD_BYTES
from ..core.end_user_tokens import refuse_app_state_writes
from ..core.errors import (
    EventIdConflict,
    InvalidInput,
    PayloadTooLarge,
    SessionAlreadyExists,
    SessionNotFound,
    StaleSession,
)
from ..core.metrics import EVENTS_STORED
from .domain import (
    ALL_SESSIONS,
    AppendNotApplied,
    AppendOutcome,
    BatchOutcome,
    EventPage,
    Expiry,
    ListedApp,
    ListedUser,
    SessionKey,
    SessionPage,
    SessionPosition,
    SessionQuery,
    SessionView,
    SortOrder,
)
from .event_removal import EventRemoval
from .events import PreparedEvent, is_same_event, prepare_batch, prepare_event
from .expiry import check_requested
from .labels import Labels
from .service_base import WRITE_ATTEMPTS, SessionServiceBase, check_expected, reached, session_view
from .session_forking import SessionForking
from .state import StateDict, find_refused_entry, merge_deltas, merge_scopes, split_delta

# What a batch's answer holds besides its events: {"events":[...]}.
BATCH_ANSWER_WRAPPER = b'{"events":[]}'


class SessionService(EventRemoval, SessionForking, SessionServiceBase):
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
        if (long_key := find_refused_entry(state or {}, self.limits)) is not None:
            raise InvalidInput([long_key.under("body", "state")])
        delta = split_delta(state or {})
        refuse_app_state_writes(delta.app)
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
            lambda found: found is not None and reached(found.session.revision, min_revision),
        )
        return self._session_view(key, snapshot)

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
            session_view(
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
        check_expected(session.revision, expected_revision)
        if not_applied.state_error is not None:
            raise not_applied.state_error
        return None

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
            if (long_key := find_refused_entry(state_delta, self.limits)) is not None:
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
            lambda found: found is not None and reached(found[2], min_revision),
        )
        if found is None:
            raise SessionNotFound.of(key)
        page, more, _revision = found
        return EventPage([row.data for row in page], page[-1].seq if more and page else None)

    async def get_user_state(self, app_name: str, user_id: str) -> StateDict:
        return await self.store.read_user_state(app_name, user_id)

    async def get_app_state(self, app_name: str) -> StateDict:
        return await self.store.read_app_state(app_name)
