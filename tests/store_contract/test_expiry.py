"""Store contract: a session whose expiry time is at or before `now` is
missing for every reader and writer from that moment, swept or not; a
moment before, every one of them finds it. The operator's readers (the
`sessions` commands, export) keep the same rule."""

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from session_state.admin.sql_store import SqlOperatorStore
from session_state.core.config import Settings
from session_state.db.engine import create_engine
from session_state.sessions.domain import (
    AppendNotApplied,
    Expiry,
    ForkSource,
    SessionKey,
    SessionQuery,
)
from session_state.sessions.labels import LabelFilter
from session_state.sessions.state import ScopedDelta
from session_state.stores import Store

from .scenes import APP, LIMIT, NOW, append, create, event, key, memories_of, outcome_of

EXPIRES = NOW + 10
Call = Callable[[Store, SessionKey, float], Awaitable[Any]]


LABELS = {"env": "prod"}


def _listed(*, of_user: bool, labels: LabelFilter | None = None) -> Call:
    """Whether the user's (else the app's) list holds the session; with
    `labels`, a list filtered by them (each store walks those its own way)."""

    async def listed(store: Store, at: SessionKey, now: float) -> bool:
        query = SessionQuery(labels or LabelFilter())
        user_id = at.user_id if of_user else None
        listing = await store.page_sessions(APP, user_id, None, 10, LIMIT, now, query)
        return any(row.id == at.session_id for row in listing.sessions)

    return listed


async def _app_listed(store: Store, at: SessionKey, now: float) -> bool:
    apps, _ = await store.page_apps(None, None, 10, now)
    return any(app.app_name == at.app_name for app in apps)


# How often a user stream's read that says changes are pending is repeated.
PENDING_READS = 200


async def _user_listed(store: Store, at: SessionKey, now: float) -> bool:
    users, _ = await store.page_users(at.app_name, None, 10, now)
    return any(user.user_id == at.user_id for user in users)


async def _changed(store: Store, at: SessionKey, now: float) -> bool:
    """Whether the user stream's read holds the session. A read that says
    changes are pending (on PostgreSQL, a transaction of any other client of
    the server, such as another test's, was in flight when the change was
    numbered) is read again, as a stream does."""
    for _ in range(PENDING_READS):
        changes = await store.read_user_changes(at.app_name, at.user_id, 0, (0, ""), 10, now)
        if any(session.id == at.session_id for session in changes.sessions):
            return True
        if not changes.pending:
            return False
        await asyncio.sleep(0.05)
    return False


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
    "page_sessions of a user": (_listed(of_user=True), False),
    "page_sessions of an app": (_listed(of_user=False), False),
    "page_sessions of a user by label": (_listed(of_user=True, labels=LabelFilter(LABELS)), False),
    "page_sessions of an app by label": (_listed(of_user=False, labels=LabelFilter(LABELS)), False),
    "page_sessions of an app by label key": (
        _listed(of_user=False, labels=LabelFilter({}, ("env",))),
        False,
    ),
    "page_apps": (_app_listed, False),
    "page_users": (_user_listed, False),
    "read_user_changes": (_changed, False),
    "read_changes": (lambda store, at, now: store.read_changes(at, 0, 10, LIMIT, now), None),
    "pop_newest": (lambda store, at, now: store.pop_newest(at, 1, None, LIMIT, now), None),
    "set_labels": (lambda store, at, now: store.set_labels(at, {}, None, None, now), None),
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
        assert await store.set_labels(session_key, LABELS, None, None, NOW) is not None
    call, missing = FINDERS[method]

    gone = await outcome_of(call(store, key("due"), EXPIRES))
    found = await outcome_of(call(store, key("live"), EXPIRES - 0.001))

    assert _answers_missing(gone, missing), f"{method} found an expired session: {gone!r}"
    assert not _answers_missing(found, missing), f"{method} missed a live session: {found!r}"


async def _operator_finds(operator: SqlOperatorStore, now: float) -> dict[str, int]:
    """How many sessions each of the operator's readers finds."""
    summaries = await operator.app_summaries(now)
    listed, _ = await operator.page_sessions(
        app_name=APP, user_id=None, newest_first=False, after=None, limit=10, now=now
    )
    keys = await operator.keys_of_session_id("due", app_name=None, user_id=None, now=now, limit=10)
    exported = [session async for session in operator.live_sessions(APP, None, now)]
    return {
        "app_summaries": sum(summary.sessions for summary in summaries),
        "page_sessions": len(listed),
        "keys_of_session_id": len(keys),
        "live_sessions (export)": len(exported),
    }


async def test_an_operator_misses_an_expired_session_from_the_moment_it_expires(
    store: Store, database_url: str
):
    await create(store, key("due"), expiry=Expiry(expire_time=EXPIRES))
    operator = SqlOperatorStore(create_engine(Settings(database_url=database_url)))
    try:
        before = await _operator_finds(operator, EXPIRES - 0.001)
        at_expiry = await _operator_finds(operator, EXPIRES)
    finally:
        await operator.engine.dispose()

    assert before == dict.fromkeys(before, 1)
    assert at_expiry == dict.fromkeys(before, 0)
