"""Store contract: a session whose expiry time is at or before `now` is
missing for every reader and writer from that moment, swept or not; a
moment before, every one of them finds it."""

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from session_state.sessions.domain import AppendNotApplied, Expiry, ForkSource, SessionKey
from session_state.sessions.state import ScopedDelta
from session_state.stores import Store

from .scenes import APP, LIMIT, NOW, append, create, event, key, memories_of, outcome_of

EXPIRES = NOW + 10
Call = Callable[[Store, SessionKey, float], Awaitable[Any]]


async def _listed(store: Store, at: SessionKey, now: float) -> bool:
    listing = await store.page_sessions(APP, at.user_id, None, 10, LIMIT, now)
    return any(row.id == at.session_id for row in listing.sessions)


async def _fork(store: Store, at: SessionKey, now: float) -> str:
    return await store.fork_session(
        ForkSource(at, None, None), "fork", now, Expiry(), forget_expired_memories=False
    )


async def _create(store: Store, at: SessionKey, now: float) -> bool:
    """Whether the create took the id (an expired session's is free)."""
    created = await store.create_session(
        at, ScopedDelta(), now, Expiry(), LIMIT, forget_expired_memories=False
    )
    return created is not None


# Each method that finds a session, and what it answers when it is missing.
FINDERS: dict[str, tuple[Call, Any]] = {
    "read_session": (lambda store, at, now: store.read_session(at, now), None),
    "read_snapshot": (lambda store, at, now: store.read_snapshot(at, None, None, LIMIT, now), None),
    "page_sessions": (_listed, False),
    "page_events": (
        lambda store, at, now: store.page_events(at, "asc", None, None, 10, LIMIT, now),
        None,
    ),
    "newest_kept_seq": (lambda store, at, now: store.newest_kept_seq(at, 0, now), None),
    "newest_events": (lambda store, at, now: store.newest_events(at, 1, now), None),
    "read_initial_state": (lambda store, at, now: store.read_initial_state(at, now), None),
    "append_event": (
        lambda store, at, now: store.append_event(at, event("late"), None, LIMIT, now),
        AppendNotApplied,
    ),
    "append_events": (
        lambda store, at, now: store.append_events(
            at, [event("late")], ScopedDelta(), None, LIMIT, now
        ),
        AppendNotApplied,
    ),
    "remove_events": (lambda store, at, now: store.remove_events(at, 0, 1, None, now), None),
    "set_expiry": (lambda store, at, now: store.set_expiry(at, Expiry(), None, now), None),
    "fork_session": (_fork, "source_missing"),
    "ingest_session": (
        lambda store, at, now: store.ingest_session(at, memories_of(at.session_id), now),
        None,
    ),
    "delete_session": (
        lambda store, at, now: store.delete_session(at, with_memories=False, now=now),
        False,
    ),
    "create_session": (_create, True),
}


def _answers_missing(outcome: Any, missing: Any) -> bool:
    if isinstance(missing, type):
        return isinstance(outcome, missing)
    return bool(outcome == missing)


@pytest.mark.parametrize("method", list(FINDERS))
async def test_an_expired_session_is_missing_from_the_moment_it_expires(store: Store, method: str):
    # Two sessions alike: one asked for at its expiry time, one just before.
    for session_key in (key("due"), key("live")):
        await create(store, session_key, expiry=Expiry(expire_time=EXPIRES))
        await append(store, session_key, event("e1"))
    call, missing = FINDERS[method]

    gone = await outcome_of(call(store, key("due"), EXPIRES))
    found = await outcome_of(call(store, key("live"), EXPIRES - 0.001))

    assert _answers_missing(gone, missing), f"{method} found an expired session: {gone!r}"
    assert not _answers_missing(found, missing), f"{method} missed a live session: {found!r}"
