"""What a session's stored events say about its session-scope state: the
state right after one of them, and whether those after one changed it. A
fork and a removal of events derive state this way; both read the events in
batches from the store they then write to."""

from collections.abc import AsyncIterator

from ..core import json_codec
from ..core.encryption import is_sealed_text
from ..core.errors import InitialStateUnknown
from .domain import SessionKey, StoredEvent
from .events import session_delta_of
from .state import StateDict, apply_delta
from .store import SessionStore as Store

# Events read per round trip.
READ_BATCH = 1000


async def state_after(store: Store, key: SessionKey, seq: int, now: float) -> StateDict:
    """The session-scope state right after event `seq` (0: before any): the
    creation state with the deltas of the events up to it applied.
    InitialStateUnknown for a session created before the creation state was
    recorded."""
    state = await store.read_initial_state(key, now)
    if state is None:
        raise InitialStateUnknown.of(key)
    after_seq = 0
    while batch := await store.read_events(key, after_seq, seq, READ_BATCH):
        state = _apply_events(state, batch)
        after_seq = batch[-1].seq
    return state


async def touches_session_state(
    store: Store, key: SessionKey, cut: int, revision: int
) -> bool | None:
    """Whether any event after `cut` (up to `revision`) changed session-scope
    state, stopping at the first that did; None when there is no such event."""
    after_seq = cut
    seen = False
    while batch := await store.read_events(key, after_seq, revision, READ_BATCH):
        seen = True
        if changes_session_state(batch):
            return True
        after_seq = batch[-1].seq
    return False if seen else None


async def batches(
    store: Store, key: SessionKey, up_to_seq: int, after_seq: int = 0
) -> AsyncIterator[list[StoredEvent]]:
    """The session's events after `after_seq` up to `up_to_seq`, in order,
    READ_BATCH at a time."""
    while batch := await store.read_events(key, after_seq, up_to_seq, READ_BATCH):
        yield batch
        after_seq = batch[-1].seq


def changes_session_state(events: list[StoredEvent]) -> bool:
    """Whether any of the events changed session-scope state. A sealed
    event (read inside a store, before it is opened) counts as one that
    did: its state after is then derived from opened events."""
    return any(
        is_sealed_text(event.data) or session_delta_of(json_codec.loads(event.data))
        for event in events
    )


def _apply_events(state: StateDict, events: list[StoredEvent]) -> StateDict:
    for event in events:
        if delta := session_delta_of(json_codec.loads(event.data)):
            state = apply_delta(state, delta)
    return state
