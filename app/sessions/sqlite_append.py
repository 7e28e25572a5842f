"""SQLite's append, and the writes of shared state a new session shares
with it, in plain SQL on a DB-API cursor: the append writer's sqlite3 one
(app.db.sqlite_writer), or the pool's inside a SQLAlchemy transaction
(`create_session`). Each rule an append is held to is stated once here,
checked before anything is written:

- the session is live (`liveness_sql.live`) and at the expected
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
from BEGIN IMMEDIATE (app.db.engine, app.db.sqlite_writer), so the checks and
the writes see one state and the session state can be merged in Python.

Values are encoded as the tables' SQLAlchemy types encode them
(`tables.py`): JSON text by `json_codec.dumps_text`, SQL NULL for no labels."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from ..core import json_codec
from .domain import AppendNotApplied, Expiry, NewEvent, SessionKey
from .event_rows import event_row_values
from .labels import Labels
from .sqlite_statements import NEXT_CHANGE_NUMBER_SQL, NOT_EXPIRED_SQL, RESTARTED_EXPIRY_SQL
from .state import ScopedDelta, StateDict, apply_delta
from .state_sizes import encoded_session_state, entry_sizes, state_past_limit


class Cursor(Protocol):
    """A DB-API cursor on SQLite (sqlite3's, or SQLAlchemy's adapter of
    aiosqlite's), with named parameters."""

    def execute(self, sql: str, parameters: Any = ..., /) -> object: ...

    def executemany(self, sql: str, parameters: Sequence[Mapping[str, Any]], /) -> object: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Sequence[Any]: ...


_SESSION_IS = "app_name = :app_name AND user_id = :user_id AND id = :session_id"

_LIVE_SESSION = f"SELECT state, revision FROM sessions WHERE {_SESSION_IS} AND {NOT_EXPIRED_SQL}"

_INSERT_EVENT = (
    "INSERT INTO events"
    " (app_name, user_id, session_id, seq, id, invocation_id, author, timestamp, data)"
    " VALUES (:app_name, :user_id, :session_id, :seq, :id, :invocation_id, :author,"
    " :timestamp, :data)"
)


def _session_parameters(key: SessionKey) -> dict[str, Any]:
    return {"app_name": key.app_name, "user_id": key.user_id, "session_id": key.session_id}


def _in_list(name: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """`(:name_0, :name_1, ...)` and its parameters."""
    names = [f"{name}_{index}" for index in range(len(values))]
    return (
        "(" + ", ".join(f":{each}" for each in names) + ")",
        dict(zip(names, values, strict=True)),
    )


def append_events(
    cursor: Cursor,
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
    session_parameters = _session_parameters(key)
    cursor.execute(_LIVE_SESSION, {**session_parameters, "now": now})
    session = cursor.fetchone()
    if session is None or (expected_revision is not None and session[1] != expected_revision):
        raise AppendNotApplied("session missing or stale")
    stored_state, stored_revision = session
    if _any_stored(cursor, session_parameters, [event.id for event in new_events]):
        raise AppendNotApplied("event id already stored")
    app = _measure(cursor, _app_scope(key), delta.app)
    user = _measure(cursor, _user_scope(key), delta.user)
    state_text, state_bytes = None, None
    if delta.session:
        state = apply_delta(json_codec.loads(stored_state), delta.session)
        state_text, state_bytes = encoded_session_state(state)
    refused = state_past_limit(
        max_state_bytes, app=app.size_after, user=user.size_after, session=state_bytes
    )
    if refused is not None:
        raise AppendNotApplied("state too large", state_error=refused)

    first = int(stored_revision) + 1
    revision = first + len(new_events) - 1
    changes: dict[str, Any] = {
        "revision": revision,
        "update_time": new_events[-1].timestamp,
        "now": now,
    }
    if new_expiry is not None:
        changes.update(ttl_seconds=new_expiry.ttl_seconds, expire_time=new_expiry.time_after(now))
    if state_text is not None:
        changes.update(state=state_text, state_bytes=state_bytes)
    if new_labels is not None:
        # SQL NULL, not JSON null, for none (the filters test IS NOT NULL).
        changes["labels"] = json_codec.dumps_text(new_labels) if new_labels else None
    cursor.execute(
        _session_update(new_expiry is not None, state_text is not None, new_labels is not None),
        {**session_parameters, **changes},
    )
    cursor.executemany(
        _INSERT_EVENT,
        [event_row_values(key, seq, event) for seq, event in enumerate(new_events, start=first)],
    )
    _upsert(cursor, app)
    _upsert(cursor, user)
    return revision


@lru_cache
def _session_update(new_expiry: bool, new_state: bool, new_labels: bool) -> str:
    """The session row's UPDATE for an append: its revision, update time and
    change number (`sqlite_statements.next_change_number`), its expiry
    (`sqlite_statements.expiry_after_write`), and the state and labels when
    they change."""
    columns = [
        "revision = :revision",
        "update_time = :update_time",
        f"change_number = {NEXT_CHANGE_NUMBER_SQL}",
    ]
    if new_expiry:
        columns += ["ttl_seconds = :ttl_seconds", "expire_time = :expire_time"]
    else:
        columns.append(f"expire_time = {RESTARTED_EXPIRY_SQL}")
    if new_state:
        columns += ["state = :state", "state_bytes = :state_bytes"]
    if new_labels:
        columns.append("labels = :labels")
    return f"UPDATE sessions SET {', '.join(columns)} WHERE {_SESSION_IS}"


def write_shared_state(cursor: Cursor, key: SessionKey, delta: ScopedDelta, limit: int) -> None:
    """Upserts the delta's app and user keys (a new session's);
    StateTooLarge, before any write, when either scope would pass `limit`."""
    app = _measure(cursor, _app_scope(key), delta.app)
    user = _measure(cursor, _user_scope(key), delta.user)
    refused = state_past_limit(limit, app=app.size_after, user=user.size_after)
    if refused is not None:
        raise refused
    _upsert(cursor, app)
    _upsert(cursor, user)


def _any_stored(cursor: Cursor, session: dict[str, Any], event_ids: list[str]) -> bool:
    ids, parameters = _in_list("event_id", event_ids)
    cursor.execute(
        "SELECT 1 FROM events WHERE app_name = :app_name AND user_id = :user_id"
        f" AND session_id = :session_id AND id IN {ids} LIMIT 1",
        {**session, **parameters},
    )
    return cursor.fetchone() is not None


# -- app and user scopes ---------------------------------------------------


@dataclass(frozen=True)
class _Scope:
    """A shared scope's table and the columns naming its owner (the app, or
    the app and the user) with their values."""

    table: str
    owner: dict[str, str]

    def condition(self) -> str:
        return " AND ".join(f"{column} = :{column}" for column in self.owner)


def _app_scope(key: SessionKey) -> _Scope:
    return _Scope("app_states", {"app_name": key.app_name})


def _user_scope(key: SessionKey) -> _Scope:
    return _Scope("user_states", {"app_name": key.app_name, "user_id": key.user_id})


@dataclass(frozen=True)
class _ScopeWrite:
    """A delta's keys of one scope, each with its size, and the scope's size
    once they are written (None when the write does not make it grow)."""

    scope: _Scope
    delta: StateDict
    sizes: dict[str, int]
    size_after: int | None


def _measure(cursor: Cursor, scope: _Scope, delta: StateDict) -> _ScopeWrite:
    """Only the keys written are read; the scope is summed only when the
    write makes it grow."""
    sizes = entry_sizes(delta)
    if not sizes:
        return _ScopeWrite(scope, delta, sizes, None)
    keys, parameters = _in_list("key", list(sizes))
    cursor.execute(
        f"SELECT key, size FROM {scope.table} WHERE {scope.condition()} AND key IN {keys}",
        {**scope.owner, **parameters},
    )
    old: dict[str, int] = {key: size for key, size in cursor.fetchall()}
    growth = sum(size - old.get(key, 0) for key, size in sizes.items())
    if growth <= 0:
        return _ScopeWrite(scope, delta, sizes, None)
    cursor.execute(
        f"SELECT coalesce(sum(size), 0) FROM {scope.table} WHERE {scope.condition()}",
        scope.owner,
    )
    return _ScopeWrite(scope, delta, sizes, int(cursor.fetchone()[0]) + growth)


def _upsert(cursor: Cursor, write: _ScopeWrite) -> None:
    if not write.delta:
        return
    scope = write.scope
    owner = ", ".join(scope.owner)
    values = ", ".join(f":{column}" for column in scope.owner)
    cursor.executemany(
        f"INSERT INTO {scope.table} ({owner}, key, value, size)"
        f" VALUES ({values}, :key, :value, :size)"
        f" ON CONFLICT ({owner}, key) DO UPDATE SET value = excluded.value, size = excluded.size",
        [
            {
                **scope.owner,
                "key": key,
                "value": json_codec.dumps_text(value),
                "size": write.sizes[key],
            }
            for key, value in write.delta.items()
        ],
    )
