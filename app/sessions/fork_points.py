"""Where a fork stops, and the session state there: up to and including an
event, or before an invocation's first event. The state is the creation
state with the deltas of the events up to the point applied, read in
batches (app.sessions.history)."""

from ..core.errors import InitialStateUnknown, InvalidInput, InvocationNotFound
from . import history
from .domain import ForkSource, SessionKey, SessionRow
from .invocations import find_start
from .labels import Labels
from .store import SessionStore


async def up_to_event(
    store: SessionStore, source: SessionRow, event_id: str, now: float, labels: Labels | None
) -> ForkSource:
    """A fork holding the events up to and including `event_id`."""
    key = _key(source)
    stored = await store.find_event(key, event_id)
    if stored is None:
        raise InvalidInput.no_such_event(["body", "upToEventId"], key)
    return await _at(store, key, stored.seq, now, labels, "omit upToEventId")


async def before_invocation(
    store: SessionStore,
    source: SessionRow,
    invocation_id: str,
    now: float,
    labels: Labels | None,
) -> ForkSource:
    """A fork holding the events before the invocation's first event (the
    first carrying its id, as a rewind finds it)."""
    key = _key(source)
    start = await find_start(store, key, source.revision, invocation_id)
    if start is None:
        raise InvocationNotFound.of(key, invocation_id)
    return await _at(store, key, start.seq_before, now, labels, "omit beforeInvocationId")


async def _at(
    store: SessionStore,
    key: SessionKey,
    seq: int,
    now: float,
    labels: Labels | None,
    instead: str,
) -> ForkSource:
    try:
        state = await history.state_after(store, key, seq, now)
    except InitialStateUnknown:
        raise InitialStateUnknown.of(key, remedy=f"fork its whole history ({instead})") from None
    return ForkSource(key, seq, state, labels)


def _key(source: SessionRow) -> SessionKey:
    return SessionKey(source.app_name, source.user_id, source.id)
