"""A fork, written once: the steps every store takes, in one transaction the
store opens, against the few statements each backend supplies
(`ForkStatements`)."""

from dataclasses import dataclass
from typing import Protocol

from .domain import Expiry, ForkSource, SessionKey
from .labels import Labels
from .state import StateDict
from .store import ForkOutcome

# Events a fork copies per statement (all in one transaction): small enough
# that one statement stays far inside any statement timeout
# (docs/performance.md, "What expiry costs on the hot path, and what a fork costs").
FORK_BATCH_EVENTS = 10_000


@dataclass(frozen=True)
class LockedSource:
    """The source session as the fork reads it."""

    state: StateDict
    revision: int
    initial_state: StateDict | None
    labels: Labels | None = None


class ForkStatements(Protocol):
    """One backend's statements, all inside the transaction of the fork."""

    async def lock_source(self, key: SessionKey, now: float) -> LockedSource | None:
        """The live source, kept from being deleted and its events from being
        removed until the transaction ends; None when it is missing."""
        ...

    async def event_exists(self, key: SessionKey, seq: int) -> bool: ...

    async def insert_fork(
        self,
        key: SessionKey,
        source: LockedSource,
        state: StateDict,
        revision: int,
        now: float,
        expiry: Expiry,
        labels: Labels,
    ) -> bool:
        """Inserts the new session holding `revision` events, with `state`,
        the source's initial state and `labels`; False when its id is taken."""
        ...

    async def delete_if_expired(self, key: SessionKey, now: float, with_memories: bool) -> bool:
        """Deletes the session with its events (and, if asked, its memories)
        if it has expired; False if it has not."""
        ...

    async def copy_events(
        self, source: SessionKey, session_id: str, after_seq: int, up_to_seq: int
    ) -> None:
        """Copies the source's events after_seq < seq <= up_to_seq into session
        `session_id` of the same user."""
        ...


async def fork_session(
    statements: ForkStatements,
    source: ForkSource,
    session_id: str,
    now: float,
    expiry: Expiry,
    *,
    forget_expired_memories: bool,
) -> ForkOutcome:
    """`Store.fork_session`'s steps; the caller commits on return, and rolls
    back on an error (nothing is written for an outcome but "forked")."""
    origin = source.key
    found = await statements.lock_source(origin, now)
    if found is None:
        return "source_missing"
    # Events are only removed from the end and a seq is never used twice:
    # while the event at the fork point is there, so is every event the
    # fork's state was derived from. A fork of no events (up to seq 0) has
    # the creation state, which no removal changes.
    if source.up_to_seq and not await statements.event_exists(origin, source.up_to_seq):
        return "source_changed"
    up_to = found.revision if source.up_to_seq is None else source.up_to_seq
    state = found.state if source.state is None else source.state
    labels = (found.labels or {}) if source.labels is None else source.labels
    target = SessionKey(origin.app_name, origin.user_id, session_id)
    if not await statements.insert_fork(target, found, state, up_to, now, expiry, labels):
        if not await statements.delete_if_expired(target, now, forget_expired_memories):
            return "id_taken"
        await statements.insert_fork(target, found, state, up_to, now, expiry, labels)
    for start in range(0, up_to, FORK_BATCH_EVENTS):
        await statements.copy_events(
            origin, session_id, start, min(start + FORK_BATCH_EVENTS, up_to)
        )
    return "forked"
