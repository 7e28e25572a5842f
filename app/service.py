"""The rules of the service: scopes, ``temp:``, revisions, preconditions and
idempotent appends. Routes call this; this calls the store."""

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from . import json_codec
from .config import RESPONSE_OVERHEAD_BYTES
from .db.replica import ReadRouting, Replica
from .db.store import Store
from .domain import (
    AppendNotApplied,
    Erased,
    Expiry,
    ForkSource,
    SessionCursor,
    SessionKey,
    SessionRow,
    SessionSnapshot,
    SortOrder,
    StoredEvent,
)
from .errors import (
    BadRequest,
    EventIdConflict,
    FieldError,
    InitialStateUnknown,
    InvalidInput,
    PayloadTooLarge,
    ResponseTooLarge,
    SessionAlreadyExists,
    SessionNotFound,
    StaleSession,
)
from .events import (
    PreparedEvent,
    is_same_event,
    prepare_batch,
    prepare_event,
    session_delta_of,
)
from .expiry import ExpiryDefaults, check_requested
from .identifiers import IDENTIFIER_MAX_LENGTH
from .json_rules import text_problem
from .limits import MAX_INT64, Limits
from .pagination import INVALID_TOKEN, decode_token, encode_token
from .state import (
    StateDict,
    apply_delta,
    find_long_key,
    merge_deltas,
    merge_scopes,
    split_delta,
)

logger = logging.getLogger("session_state")

SESSIONS_TOKEN = "sessions"
EVENTS_TOKEN = "events"
# An append that wrote nothing is explained by a read; if the read finds no
# reason (the session changed in between), the append is tried again.
APPEND_ATTEMPTS = 3
# Events an erasure deletes per transaction (a session with more goes alone).
ERASE_BATCH_EVENTS = 10_000
# What a batch's answer holds besides its events: {"events":[...]}.
BATCH_ANSWER_WRAPPER = b'{"events":[]}'
# Events read per round trip when a fork derives the state after an event.
FORK_READ_BATCH = 1000


@dataclass(frozen=True)
class SessionView:
    """A session as a reader sees it; `events_json` is the stored event JSON
    texts joined by commas (empty for none)."""

    id: str
    app_name: str
    user_id: str
    state: StateDict
    events_json: str
    last_update_time: float
    revision: int
    expire_time: float | None = None


@dataclass(frozen=True)
class SessionPage:
    sessions: list[SessionView]
    next_page_token: str | None


@dataclass(frozen=True)
class EventPage:
    events: list[str]
    next_page_token: str | None


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
    was there to remove, and nothing was written)."""

    session: SessionView
    removed: int


def new_uuid() -> str:
    return str(uuid.uuid4())


class SessionService:
    def __init__(
        self,
        store: Store,
        limits: Limits | None = None,
        *,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = new_uuid,
        erase_batch_events: int = ERASE_BATCH_EVENTS,
        expiry_defaults: ExpiryDefaults | None = None,
        forget_expired_memories: bool = False,
        replica: Replica | None = None,
    ) -> None:
        """Writes, and reads that need the latest truth, go to `store`;
        session reads, lists and event pages to `replica` when it may
        answer them (app.db.replica)."""
        self.store = store
        self.reads = ReadRouting(store, replica)
        self.erase_batch_events = erase_batch_events
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
    ) -> SessionView:
        """`expiry` None: the app's default expiry, else the deployment's."""
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
        )
        if shared is None:
            raise SessionAlreadyExists(f"session {key.session_id!r} already exists")
        return SessionView(
            id=key.session_id,
            app_name=app_name,
            user_id=user_id,
            state=merge_scopes(delta.session, shared.app_state, shared.user_state),
            events_json="",
            last_update_time=now,
            revision=0,
            expire_time=expiry.time_after(now),
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
            raise SessionNotFound(f"session {key.session_id!r} not found")
        if snapshot.events_json is None:
            raise ResponseTooLarge(
                f"the events asked for are {snapshot.events_bytes} bytes, above the {budget} "
                "a session read may carry (SESSION_STATE_MAX_RESPONSE_BYTES): ask for fewer "
                "with numRecentEvents or afterTimestamp, or page through "
                f"/apps/{{app}}/users/{{user}}/sessions/{{id}}/events"
            )
        session = snapshot.session
        return SessionView(
            id=key.session_id,
            app_name=key.app_name,
            user_id=key.user_id,
            state=merge_scopes(session.state, snapshot.app_state, snapshot.user_state),
            events_json=snapshot.events_json,
            last_update_time=session.update_time,
            revision=session.revision,
            expire_time=session.expire_time,
        )

    async def list_sessions(
        self, app_name: str, user_id: str | None, page_size: int, page_token: str | None
    ) -> SessionPage:
        after: SessionCursor | None = None
        list_identity = (app_name, user_id or "")
        if page_token is not None:
            after = _session_cursor(decode_token(page_token, SESSIONS_TOKEN, list_identity))
        max_bytes = self.limits.max_response_bytes - RESPONSE_OVERHEAD_BYTES
        now = self.clock()
        listing = await self.reads.read(
            lambda store: store.page_sessions(app_name, user_id, after, page_size, max_bytes, now)
        )
        page = listing.sessions
        sessions = [
            SessionView(
                id=row.id,
                app_name=app_name,
                user_id=row.user_id,
                state=merge_scopes(row.state, listing.app_state, listing.user_states[row.user_id]),
                events_json="",
                last_update_time=row.update_time,
                revision=row.revision,
                expire_time=row.expire_time,
            )
            for row in page
        ]
        token = None
        if listing.more and page:
            last = page[-1]
            token = encode_token(
                SESSIONS_TOKEN, list_identity, [last.update_time, last.user_id, last.id]
            )
        return SessionPage(sessions, token)

    async def delete_session(self, key: SessionKey, *, delete_memories: bool = False) -> None:
        if not await self.store.delete_session(
            key, with_memories=delete_memories, now=self.clock()
        ):
            raise SessionNotFound(f"session {key.session_id!r} not found")

    async def append_event(
        self,
        key: SessionKey,
        document: Any,
        expected_revision: int | None,
        new_expiry: Expiry | None = None,
    ) -> AppendOutcome:
        """`new_expiry` replaces the session's expiry with the event, atomically."""
        prepared = prepare_event(document, self.limits, now=self.clock, new_id=self.new_id)
        if prepared.partial:
            return AppendOutcome(json_codec.dumps_text(document), None, created=False)
        for _ in range(APPEND_ATTEMPTS):
            try:
                revision = await self.store.append_event(
                    key,
                    prepared.record,
                    expected_revision,
                    self.limits.max_state_bytes,
                    self.clock(),
                    new_expiry,
                )
            except AppendNotApplied as not_applied:
                explained = await self._explain_unapplied_append(
                    key, prepared, expected_revision, not_applied
                )
                if explained is not None:
                    return explained
                continue
            return AppendOutcome(prepared.record.data, revision, created=True)
        raise StaleSession("the session kept changing while the event was appended; try again")

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
        budget = self.limits.max_response_bytes
        if answer_bytes > budget:
            raise PayloadTooLarge(
                f"the batch's events are {answer_bytes} bytes as stored, above the {budget} "
                "its answer may carry (SESSION_STATE_MAX_RESPONSE_BYTES): send fewer at once"
            )
        delta = merge_deltas(record.delta for record in records)
        for _ in range(APPEND_ATTEMPTS):
            try:
                revision = await self.store.append_events(
                    key,
                    records,
                    delta,
                    expected_revision,
                    self.limits.max_state_bytes,
                    self.clock(),
                )
            except AppendNotApplied as not_applied:
                explained = await self._explain_unapplied_batch(
                    key, prepared, expected_revision, not_applied
                )
                if explained is not None:
                    return explained
                continue
            return BatchOutcome([record.data for record in records], revision, created=True)
        raise StaleSession("the session kept changing while the events were appended; try again")

    async def _explain_unapplied_batch(
        self,
        key: SessionKey,
        prepared: list[PreparedEvent],
        expected_revision: int | None,
        not_applied: AppendNotApplied,
    ) -> BatchOutcome | None:
        """As _explain_unapplied_append, for a batch: a retry only when every
        event is stored with the same content."""
        session = await self.store.read_session(key, self.clock())
        if session is None:
            raise SessionNotFound(f"session {key.session_id!r} not found")
        stored = await self.store.find_events(key, [event.record.id for event in prepared])
        for event in prepared:
            found = stored.get(event.record.id)
            if found is not None and not is_same_event(json_codec.loads(found.data), event):
                raise EventIdConflict(
                    f"event {event.record.id!r} is already stored with other content"
                )
        if stored and len(stored) < len(prepared):
            missing = next(event.record.id for event in prepared if event.record.id not in stored)
            raise EventIdConflict(
                f"some events of the batch are stored and others (such as {missing!r}) are "
                "not: a batch is stored whole or not at all, so this is not a retry of one"
            )
        if stored:
            ordered = [stored[event.record.id] for event in prepared]
            return BatchOutcome(
                [event.data for event in ordered], max(e.seq for e in ordered), created=False
            )
        if expected_revision is not None and session.revision != expected_revision:
            raise StaleSession("the session has been modified since the revision given in If-Match")
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
    ) -> RemovalOutcome:
        """Removes the newest `last` events, or those after `after_event_id`,
        or (neither) all of them, in one change; the session-scope state
        becomes the one the remaining events leave (app and user state are
        shared: not rolled back). Nothing to remove writes nothing."""
        for _ in range(APPEND_ATTEMPTS):
            now = self.clock()
            revision, cut = await self._removal_point(key, after_event_id, last, now)
            if expected_revision is not None and revision != expected_revision:
                raise StaleSession(
                    "the session has been modified since the revision given in If-Match"
                )
            state_changed = await self._touches_session_state(key, cut, revision)
            if state_changed is None:  # no event after the cut
                session = await self._latest_session(key, num_recent_events=0)
                # Revisions only go up: still at the one read first, nothing
                # happened in between, so there was nothing to remove.
                if session.revision == revision:
                    return RemovalOutcome(session, 0)
                continue
            state = await self._state_after(key, cut, now) if state_changed else None
            removed = await self.store.remove_events(key, cut, revision, state, now)
            if removed is not None:
                return RemovalOutcome(
                    await self._latest_session(key, num_recent_events=0), removed.count
                )
            if expected_revision is not None:
                if await self.store.read_session(key, self.clock()) is None:
                    raise SessionNotFound(f"session {key.session_id!r} not found")
                raise StaleSession(
                    "the session has been modified since the revision given in If-Match"
                )
        raise StaleSession("the session kept changing while its events were removed; try again")

    async def _removal_point(
        self, key: SessionKey, after_event_id: str | None, last: int | None, now: float
    ) -> tuple[int, int]:
        """The session's revision and the seq after which its events go."""
        if last is not None:
            found = await self.store.newest_kept_seq(key, last, now)
            if found is None:
                raise SessionNotFound(f"session {key.session_id!r} not found")
            return found
        session = await self.store.read_session(key, now)
        if session is None:
            raise SessionNotFound(f"session {key.session_id!r} not found")
        if after_event_id is None:
            return session.revision, 0
        stored = await self.store.find_event(key, after_event_id)
        if stored is None:
            raise InvalidInput(
                [FieldError(["query", "after"], f"session {key.session_id!r} has no such event")]
            )
        return session.revision, stored.seq

    async def _touches_session_state(self, key: SessionKey, cut: int, revision: int) -> bool | None:
        """Whether any event after `cut` changed session-scope state; None
        when there is no such event. Reads them in batches, stopping at the
        first that did."""
        after_seq = cut
        seen = False
        while batch := await self.store.read_events(key, after_seq, revision, FORK_READ_BATCH):
            seen = True
            if any(session_delta_of(json_codec.loads(event.data)) for event in batch):
                return True
            after_seq = batch[-1].seq
        return False if seen else None

    async def _explain_unapplied_append(
        self,
        key: SessionKey,
        prepared: PreparedEvent,
        expected_revision: int | None,
        not_applied: AppendNotApplied,
    ) -> AppendOutcome | None:
        """Why an append wrote nothing, as the outcome or error to answer with;
        None when the reason is gone and the append should be tried again."""
        # The session first: an expired one's events are not there any more.
        session = await self.store.read_session(key, self.clock())
        if session is None:
            raise SessionNotFound(f"session {key.session_id!r} not found")
        # A retry is recognised before the precondition: the first attempt
        # may have moved the revision the client still holds.
        stored = await self.store.find_event(key, prepared.record.id)
        if stored is not None:
            if is_same_event(json_codec.loads(stored.data), prepared):
                return AppendOutcome(stored.data, stored.seq, created=False)
            raise EventIdConflict(
                f"event {prepared.record.id!r} is already stored with other content"
            )
        if expected_revision is not None and session.revision != expected_revision:
            raise StaleSession("the session has been modified since the revision given in If-Match")
        if not_applied.state_error is not None:
            raise not_applied.state_error
        return None

    async def patch_session(
        self,
        key: SessionKey,
        state_delta: StateDict | None,
        new_expiry: Expiry | None,
        expected_revision: int | None,
    ) -> SessionView:
        """Changes the state (recorded as an event, as ADK's own PATCH
        endpoint does) and/or the expiry, all or nothing."""
        if new_expiry is not None:
            check_requested(new_expiry, self.clock())
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
            await self.append_event(key, event, expected_revision, new_expiry)
        elif new_expiry is not None:
            await self._set_expiry(key, new_expiry, expected_revision)
        return await self._latest_session(key)

    async def _set_expiry(
        self, key: SessionKey, expiry: Expiry, expected_revision: int | None
    ) -> None:
        now = self.clock()
        if await self.store.set_expiry(key, expiry, expected_revision, now) is not None:
            return
        if await self.store.read_session(key, now) is None:
            raise SessionNotFound(f"session {key.session_id!r} not found")
        raise StaleSession("the session has been modified since the revision given in If-Match")

    async def fork_session(
        self,
        key: SessionKey,
        new_session_id: str | None,
        up_to_event_id: str | None,
        expiry: Expiry | None,
    ) -> SessionView:
        """A new session of the same user with copies of the events up to and
        including `up_to_event_id` (all when None) and the session state they
        leave; app and user state are shared. `expiry` None: the defaults."""
        now = self.clock()
        source = await self.store.read_session(key, now)
        if source is None:
            raise SessionNotFound(f"session {key.session_id!r} not found")
        fork = ForkSource(key, None, None)
        if up_to_event_id is not None:
            fork = await self._fork_point(source, up_to_event_id, now)
        new_key = SessionKey(key.app_name, key.user_id, new_session_id or self.new_id())
        outcome = await self.store.fork_session(
            fork,
            new_key.session_id,
            now,
            self._expiry(expiry, key.app_name, now),
            forget_expired_memories=self.forget_expired_memories,
        )
        if outcome == "source_missing":
            raise SessionNotFound(f"session {key.session_id!r} not found")
        if outcome == "source_changed":
            # Its up-to event was removed after the state was derived.
            no_event = f"session {key.session_id!r} has no such event"
            raise InvalidInput([FieldError(["body", "upToEventId"], no_event)])
        if outcome == "id_taken":
            raise SessionAlreadyExists(f"session {new_key.session_id!r} already exists")
        return await self._latest_session(new_key, num_recent_events=0)

    async def _fork_point(self, source: SessionRow, event_id: str, now: float) -> ForkSource:
        """Where a fork up to `event_id` stops, and the session state there:
        the creation state with the deltas of the events up to it applied,
        read in batches."""
        key = SessionKey(source.app_name, source.user_id, source.id)
        stored = await self.store.find_event(key, event_id)
        if stored is None:
            raise InvalidInput(
                [FieldError(["body", "upToEventId"], f"session {source.id!r} has no such event")]
            )
        try:
            state = await self._state_after(key, stored.seq, now)
        except InitialStateUnknown:
            raise InitialStateUnknown(
                f"session {source.id!r} was created before this service recorded the state "
                "sessions are created with, so the state after one of its events cannot be "
                "derived: fork its whole history (omit upToEventId)"
            ) from None
        return ForkSource(key, stored.seq, state)

    async def _state_after(self, key: SessionKey, seq: int, now: float) -> StateDict:
        """The session-scope state right after event `seq` (0: before any):
        the creation state with the deltas of the events up to it applied,
        read in batches. InitialStateUnknown for a session created before
        the creation state was recorded."""
        state = await self.store.read_initial_state(key, now)
        if state is None:
            raise InitialStateUnknown(
                f"session {key.session_id!r} was created before this service recorded the "
                "state sessions are created with, so the state after one of its events "
                "cannot be derived"
            )
        after_seq = 0
        while batch := await self.store.read_events(key, after_seq, seq, FORK_READ_BATCH):
            state = _apply_events(state, batch)
            after_seq = batch[-1].seq
        return state

    async def list_events(
        self,
        key: SessionKey,
        order: SortOrder,
        page_size: int,
        page_token: str | None,
        after_timestamp: float | None,
        min_revision: int | None = None,
    ) -> EventPage:
        """`min_revision` as get_session takes it."""
        after_seq: int | None = None
        list_identity = (key.app_name, key.user_id, key.session_id, order)
        if page_token is not None:
            position = decode_token(page_token, EVENTS_TOKEN, list_identity)
            if not (len(position) == 2 and position[0] == order and _is_int64(position[1])):
                raise BadRequest(INVALID_TOKEN)
            after_seq = position[1]
        max_bytes = self.limits.max_response_bytes - RESPONSE_OVERHEAD_BYTES
        now = self.clock()
        found = await self.reads.read(
            lambda store: store.page_events(
                key, order, after_seq, after_timestamp, page_size, max_bytes, now
            ),
            lambda found: found is not None and _reached(found[2], min_revision),
        )
        if found is None:
            raise SessionNotFound(f"session {key.session_id!r} not found")
        page, more, _revision = found
        token = None
        if more and page:
            token = encode_token(EVENTS_TOKEN, list_identity, [order, page[-1].seq])
        return EventPage([row.data for row in page], token)

    async def erase_user(self, app_name: str, user_id: str) -> Erased:
        """Everything of the user in the app; nothing when there is nothing."""
        erased = await self.store.erase_user(app_name, user_id, self.erase_batch_events)
        _log_erasure(erased, app=app_name, user=user_id)
        return erased

    async def erase_app(self, app_name: str) -> Erased:
        """Everything of the app, every user's included."""
        erased = await self.store.erase_app(app_name, self.erase_batch_events)
        _log_erasure(erased, app=app_name)
        return erased

    async def get_user_state(self, app_name: str, user_id: str) -> StateDict:
        return await self.store.read_user_state(app_name, user_id)

    async def get_app_state(self, app_name: str) -> StateDict:
        return await self.store.read_app_state(app_name)


def _reached(revision: int, min_revision: int | None) -> bool:
    return min_revision is None or revision >= min_revision


def _apply_events(state: StateDict, events: list[StoredEvent]) -> StateDict:
    for event in events:
        if delta := session_delta_of(json_codec.loads(event.data)):
            state = apply_delta(state, delta)
    return state


def _log_erasure(erased: Erased, **whose: str) -> None:
    # Who and how much, never what: counts only.
    logger.info("erased", extra={**whose, **asdict(erased)})


def _is_int64(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_INT64


def _is_identifier(value: Any) -> bool:
    return (
        isinstance(value, str)
        and 1 <= len(value) <= IDENTIFIER_MAX_LENGTH
        and text_problem(value) is None
    )


def _session_cursor(position: list[Any]) -> SessionCursor:
    """A sessions page token's position, checked in full: a finite time and
    two identifiers."""
    if len(position) != 3:
        raise BadRequest(INVALID_TOKEN)
    update_time, user_id, session_id = position
    if not (
        type(update_time) in (int, float)
        and abs(update_time) <= 1e300
        and update_time == update_time  # not NaN
        and _is_identifier(user_id)
        and _is_identifier(session_id)
    ):
        raise BadRequest(INVALID_TOKEN)
    return (float(update_time), user_id, session_id)
