"""What every part of the sessions service shares: its store, read routing,
limits, clock, expiry defaults and change publisher, built once
(`SessionServiceBase`), and the small rules its parts all apply."""

import time
import uuid
from collections.abc import Callable

from ..core.config import RESPONSE_OVERHEAD_BYTES
from ..core.errors import ResponseTooLarge, SessionNotFound, StaleSession
from ..core.limits import Limits
from .changes import Change, ChangeKind, ChangePublisher, NoFollowers
from .domain import Expiry, SessionKey, SessionRow, SessionSnapshot, SessionView
from .expiry import ExpiryDefaults, check_requested
from .replica import ReadRouting, Replica
from .state import StateDict, merge_scopes
from .store import SessionStore

# A write that wrote nothing is explained by a read; if the read finds no
# reason (the session changed in between), the write is tried again.
WRITE_ATTEMPTS = 3


def new_uuid() -> str:
    return str(uuid.uuid4())


class SessionServiceBase:
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

    def _expiry(self, requested: Expiry | None, app_name: str, now: float) -> Expiry:
        """The expiry a new session gets: the one asked for (checked), else
        its app's default, else the deployment's."""
        if requested is None:
            return self.expiry_defaults.for_app(app_name)
        check_requested(requested, now)
        return requested

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
        return session_view(
            key, snapshot.session, snapshot.app_state, snapshot.user_state, snapshot.events_json
        )

    async def _why_not_written(self, key: SessionKey) -> SessionNotFound | StaleSession:
        """Why a conditional write wrote nothing: the session is gone, or it
        moved past the revision the write expected."""
        if await self.store.read_session(key, self.clock()) is None:
            return SessionNotFound.of(key)
        return StaleSession.moved_on()

    def _published(self, key: SessionKey, kind: ChangeKind, revision: int | None) -> None:
        self.changes.publish(Change(key.app_name, key.user_id, key.session_id, kind, revision))


def check_expected(revision: int, expected_revision: int | None) -> None:
    if expected_revision is not None and revision != expected_revision:
        raise StaleSession.moved_on()


def session_view(
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


def reached(revision: int, min_revision: int | None) -> bool:
    return min_revision is None or revision >= min_revision
