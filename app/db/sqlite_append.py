"""SQLite's append, and the writes of shared state a new session shares
with it. Each rule an append is held to is stated once here, checked before
anything is written:

- the session is live (`sqlite_statements.not_expired`) and at the expected
  revision, and no event id of the append is stored already;
- no scope passes the size limit: app and user keys by their sizes (a scope
  is summed only when the write makes it grow), the session's state
  measured whole; the scope named is the one PostgreSQL names
  (`state_sizes.state_past_limit`);
- the append restarts an idle timeout, or sets the expiry it carries
  (`sqlite_statements.expiry_after_write`).

A refused append is AppendNotApplied with nothing written, as on PostgreSQL
(where the append is one statement, `postgresql_statements.APPEND`); the
service reads which rule refused it. Writers hold the database's write lock
from BEGIN IMMEDIATE (`engine.py`), so the checks and the writes see one
state and the session state can be merged in Python."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, func, null, select
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from ..domain import AppendNotApplied, Expiry, NewEvent, SessionKey
from ..labels import Labels
from ..state import ScopedDelta, StateDict, apply_delta
from .sqlite_statements import (
    events_of,
    expiry_after_write,
    next_change_number,
    not_expired,
    session_is,
)
from .state_sizes import entry_sizes, session_state_bytes, state_past_limit
from .tables import app_states, events, sessions, user_states


async def append_events(
    connection: AsyncConnection,
    key: SessionKey,
    new_events: Sequence[NewEvent],
    delta: ScopedDelta,
    expected_revision: int | None,
    max_state_bytes: int,
    now: float,
    new_expiry: Expiry | None = None,
    new_labels: Labels | None = None,
) -> int:
    """Stores the events in order and applies `delta` (their deltas merged);
    returns the revision after the last. `new_expiry` replaces the expiry,
    `new_labels` the labels ({}: none)."""
    found = await connection.execute(
        select(sessions.c.state, sessions.c.revision).where(*session_is(key), not_expired(now))
    )
    session = found.first()
    if session is None or (expected_revision is not None and session.revision != expected_revision):
        raise AppendNotApplied("session missing or stale")
    if await _any_stored(connection, key, [event.id for event in new_events]):
        raise AppendNotApplied("event id already stored")
    app = await _measure(connection, _app_scope(key), delta.app)
    user = await _measure(connection, _user_scope(key), delta.user)
    state = apply_delta(session.state, delta.session) if delta.session else None
    state_bytes = None if state is None else session_state_bytes(state)
    refused = state_past_limit(
        max_state_bytes, app=app.size_after, user=user.size_after, session=state_bytes
    )
    if refused is not None:
        raise AppendNotApplied("state too large", state_error=refused)

    first = int(session.revision) + 1
    revision = first + len(new_events) - 1
    changes = expiry_after_write(now, new_expiry)
    if state is not None:
        changes.update(state=state, state_bytes=state_bytes)
    if new_labels is not None:
        changes["labels"] = new_labels or null()
    await connection.execute(
        sessions.update()
        .where(*session_is(key))
        .values(
            **changes,
            revision=revision,
            update_time=new_events[-1].timestamp,
            change_number=next_change_number(key.app_name, key.user_id),
        )
    )
    await insert_events(connection, key, enumerate(new_events, start=first))
    await _upsert(connection, app)
    await _upsert(connection, user)
    return revision


async def write_shared_state(
    connection: AsyncConnection, key: SessionKey, delta: ScopedDelta, limit: int
) -> None:
    """Upserts the delta's app and user keys (a new session's);
    StateTooLarge, before any write, when either scope would pass `limit`."""
    app = await _measure(connection, _app_scope(key), delta.app)
    user = await _measure(connection, _user_scope(key), delta.user)
    refused = state_past_limit(limit, app=app.size_after, user=user.size_after)
    if refused is not None:
        raise refused
    await _upsert(connection, app)
    await _upsert(connection, user)


async def insert_events(
    connection: AsyncConnection, key: SessionKey, numbered: Iterable[tuple[int, NewEvent]]
) -> None:
    """Inserts the session's events at the given seqs, in one statement."""
    await connection.execute(
        events.insert(),
        [
            {
                "app_name": key.app_name,
                "user_id": key.user_id,
                "session_id": key.session_id,
                "seq": seq,
                "id": event.id,
                "invocation_id": event.invocation_id,
                "author": event.author,
                "timestamp": event.timestamp,
                "data": event.data,
            }
            for seq, event in numbered
        ],
    )


async def _any_stored(connection: AsyncConnection, key: SessionKey, event_ids: list[str]) -> bool:
    stored = await connection.execute(
        select(events.c.id).where(*events_of(key), events.c.id.in_(event_ids)).limit(1)
    )
    return stored.first() is not None


# -- app and user scopes ---------------------------------------------------


@dataclass(frozen=True)
class _Scope:
    """A shared scope's table and the columns naming its owner (the app, or
    the app and the user)."""

    table: Table
    owner: dict[str, str]

    def conditions(self) -> list[Any]:
        return [self.table.c[name] == value for name, value in self.owner.items()]


def _app_scope(key: SessionKey) -> _Scope:
    return _Scope(app_states, {"app_name": key.app_name})


def _user_scope(key: SessionKey) -> _Scope:
    return _Scope(user_states, {"app_name": key.app_name, "user_id": key.user_id})


@dataclass(frozen=True)
class _ScopeWrite:
    """A delta's keys of one scope, each with its size, and the scope's size
    once they are written (None when the write does not make it grow)."""

    scope: _Scope
    delta: StateDict
    sizes: dict[str, int]
    size_after: int | None


async def _measure(connection: AsyncConnection, scope: _Scope, delta: StateDict) -> _ScopeWrite:
    """Only the keys written are read; the scope is summed only when the
    write makes it grow."""
    sizes = entry_sizes(delta)
    if not sizes:
        return _ScopeWrite(scope, delta, sizes, None)
    table = scope.table
    written = await connection.execute(
        select(table.c.key, table.c.size).where(*scope.conditions(), table.c.key.in_(list(sizes)))
    )
    old: dict[str, int] = {key: size for key, size in written}
    growth = sum(size - old.get(key, 0) for key, size in sizes.items())
    if growth <= 0:
        return _ScopeWrite(scope, delta, sizes, None)
    total = await connection.execute(
        select(func.coalesce(func.sum(table.c.size), 0)).where(*scope.conditions())
    )
    return _ScopeWrite(scope, delta, sizes, int(total.scalar_one()) + growth)


async def _upsert(connection: AsyncConnection, write: _ScopeWrite) -> None:
    if not write.delta:
        return
    scope = write.scope
    rows = [
        {**scope.owner, "key": key, "value": value, "size": write.sizes[key]}
        for key, value in write.delta.items()
    ]
    statement = sqlite_insert(scope.table)
    await connection.execute(
        statement.on_conflict_do_update(
            index_elements=[*scope.owner, "key"],
            set_={"value": statement.excluded.value, "size": statement.excluded.size},
        ),
        rows,
    )
