"""All SQL of the service. Functions run on a connection inside a transaction
that the caller owns; none of them commits."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import delete, func, select, tuple_
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.tables import app_states, events, sessions, user_states
from app.state import ScopedDelta, StateDict, apply_delta

SortOrder = Literal["asc", "desc"]


@dataclass(frozen=True)
class SessionRow:
    app_name: str
    user_id: str
    id: str
    state: StateDict
    revision: int
    update_time: float


@dataclass(frozen=True)
class SessionKey:
    app_name: str
    user_id: str
    session_id: str


@dataclass(frozen=True)
class NewEvent:
    """An event ready to store: validated, ``temp:`` keys removed, JSON encoded."""

    id: str
    invocation_id: str
    author: str
    timestamp: float
    data: str
    delta: ScopedDelta


@dataclass(frozen=True)
class StoredEvent:
    seq: int
    data: str


class AppendNotApplied(Exception):
    """The append changed nothing: the session is missing, stale, or the event
    id is taken. The caller finds out which with a read."""


def _is_postgresql(connection: AsyncConnection) -> bool:
    return connection.dialect.name == "postgresql"


def _insert(connection: AsyncConnection, table: Any) -> Any:
    if _is_postgresql(connection):
        return postgresql_insert(table)
    return sqlite_insert(table)


# -- state -----------------------------------------------------------------


async def upsert_app_state(connection: AsyncConnection, app_name: str, delta: StateDict) -> None:
    if not delta:
        return
    # Sorted keys: every writer locks the rows of shared keys in one order, so
    # two transactions writing overlapping keys cannot deadlock.
    rows = [{"app_name": app_name, "key": key, "value": delta[key]} for key in sorted(delta)]
    statement = _insert(connection, app_states)
    await connection.execute(
        statement.on_conflict_do_update(
            index_elements=["app_name", "key"], set_={"value": statement.excluded.value}
        ),
        rows,
    )


async def upsert_user_state(
    connection: AsyncConnection, app_name: str, user_id: str, delta: StateDict
) -> None:
    if not delta:
        return
    rows = [
        {"app_name": app_name, "user_id": user_id, "key": key, "value": delta[key]}
        for key in sorted(delta)
    ]
    statement = _insert(connection, user_states)
    await connection.execute(
        statement.on_conflict_do_update(
            index_elements=["app_name", "user_id", "key"],
            set_={"value": statement.excluded.value},
        ),
        rows,
    )


async def read_app_state(connection: AsyncConnection, app_name: str) -> StateDict:
    result = await connection.execute(
        select(app_states.c.key, app_states.c.value).where(app_states.c.app_name == app_name)
    )
    return {key: value for key, value in result}


async def read_user_state(connection: AsyncConnection, app_name: str, user_id: str) -> StateDict:
    result = await connection.execute(
        select(user_states.c.key, user_states.c.value).where(
            user_states.c.app_name == app_name, user_states.c.user_id == user_id
        )
    )
    return {key: value for key, value in result}


async def read_user_states(
    connection: AsyncConnection, app_name: str, user_ids: Sequence[str]
) -> dict[str, StateDict]:
    states: dict[str, StateDict] = {user_id: {} for user_id in user_ids}
    if not user_ids:
        return states
    result = await connection.execute(
        select(user_states.c.user_id, user_states.c.key, user_states.c.value).where(
            user_states.c.app_name == app_name, user_states.c.user_id.in_(list(user_ids))
        )
    )
    for user_id, key, value in result:
        states[user_id][key] = value
    return states


# -- sessions --------------------------------------------------------------


async def insert_session(
    connection: AsyncConnection, key: SessionKey, state: StateDict, now: float
) -> bool:
    """Inserts the session; False when the id is already taken."""
    statement = (
        _insert(connection, sessions)
        .values(
            app_name=key.app_name,
            user_id=key.user_id,
            id=key.session_id,
            state=state,
            revision=0,
            create_time=now,
            update_time=now,
        )
        .on_conflict_do_nothing()
        .returning(sessions.c.revision)
    )
    result = await connection.execute(statement)
    return result.first() is not None


async def read_session(connection: AsyncConnection, key: SessionKey) -> SessionRow | None:
    result = await connection.execute(
        select(sessions.c.state, sessions.c.revision, sessions.c.update_time).where(
            sessions.c.app_name == key.app_name,
            sessions.c.user_id == key.user_id,
            sessions.c.id == key.session_id,
        )
    )
    row = result.first()
    if row is None:
        return None
    return SessionRow(key.app_name, key.user_id, key.session_id, row[0], row[1], row[2])


async def delete_session(connection: AsyncConnection, key: SessionKey) -> bool:
    await connection.execute(
        delete(events).where(
            events.c.app_name == key.app_name,
            events.c.user_id == key.user_id,
            events.c.session_id == key.session_id,
        )
    )
    result = await connection.execute(
        delete(sessions).where(
            sessions.c.app_name == key.app_name,
            sessions.c.user_id == key.user_id,
            sessions.c.id == key.session_id,
        )
    )
    return result.rowcount > 0


SessionCursor = tuple[float, str, str]


async def page_sessions(
    connection: AsyncConnection,
    app_name: str,
    user_id: str | None,
    after: SessionCursor | None,
    limit: int,
) -> list[SessionRow]:
    """A page in ADK's order (lastUpdateTime, userId, id), read from an index."""
    statement = select(
        sessions.c.user_id,
        sessions.c.id,
        sessions.c.state,
        sessions.c.revision,
        sessions.c.update_time,
    ).where(sessions.c.app_name == app_name)
    if user_id is not None:
        statement = statement.where(sessions.c.user_id == user_id)
    if after is not None:
        statement = statement.where(
            tuple_(sessions.c.update_time, sessions.c.user_id, sessions.c.id) > tuple_(*after)
        )
    statement = statement.order_by(sessions.c.update_time, sessions.c.user_id, sessions.c.id).limit(
        limit
    )
    result = await connection.execute(statement)
    return [
        SessionRow(app_name, row_user_id, session_id, state, revision, update_time)
        for row_user_id, session_id, state, revision, update_time in result
    ]


# -- events ----------------------------------------------------------------


def _events_of(key: SessionKey) -> list[Any]:
    return [
        events.c.app_name == key.app_name,
        events.c.user_id == key.user_id,
        events.c.session_id == key.session_id,
    ]


@dataclass(frozen=True)
class SessionSnapshot:
    """A session, its scopes' state and its events (JSON texts joined by commas)."""

    session: SessionRow
    app_state: StateDict
    user_state: StateDict
    events_json: str


async def read_snapshot(
    connection: AsyncConnection,
    key: SessionKey,
    limit: int | None,
    after_timestamp: float | None,
) -> SessionSnapshot | None:
    """Everything a session read returns (the SQLAlchemy path, used on SQLite;
    PostgreSQL reads through `PostgresHotPath`). Events are those up to the
    revision read with the session row, so events, state and ETag describe one
    moment."""
    found = await read_session(connection, key)
    if found is None:
        return None
    events = await read_recent_events(connection, key, found.revision, limit, after_timestamp)
    return SessionSnapshot(
        found,
        await read_app_state(connection, key.app_name),
        await read_user_state(connection, key.app_name, key.user_id),
        ",".join(events),
    )


async def read_recent_events(
    connection: AsyncConnection,
    key: SessionKey,
    up_to_seq: int,
    limit: int | None,
    after_timestamp: float | None,
) -> list[str]:
    """Events in append order: the last `limit` of those at or after the time."""
    if limit == 0:
        return []
    statement = select(events.c.data).where(*_events_of(key), events.c.seq <= up_to_seq)
    if after_timestamp is not None:
        statement = statement.where(events.c.timestamp >= after_timestamp)
    if limit is None:
        statement = statement.order_by(events.c.seq)
        result = await connection.execute(statement)
        return list(result.scalars())
    statement = statement.order_by(events.c.seq.desc()).limit(limit)
    result = await connection.execute(statement)
    newest_first = list(result.scalars())
    newest_first.reverse()
    return newest_first


async def page_events(
    connection: AsyncConnection,
    key: SessionKey,
    order: SortOrder,
    after_seq: int | None,
    after_timestamp: float | None,
    limit: int,
) -> list[StoredEvent]:
    statement = select(events.c.seq, events.c.data).where(*_events_of(key))
    if after_timestamp is not None:
        statement = statement.where(events.c.timestamp >= after_timestamp)
    if order == "asc":
        if after_seq is not None:
            statement = statement.where(events.c.seq > after_seq)
        statement = statement.order_by(events.c.seq)
    else:
        if after_seq is not None:
            statement = statement.where(events.c.seq < after_seq)
        statement = statement.order_by(events.c.seq.desc())
    result = await connection.execute(statement.limit(limit))
    return [StoredEvent(seq, data) for seq, data in result]


async def find_event(
    connection: AsyncConnection, key: SessionKey, event_id: str
) -> StoredEvent | None:
    result = await connection.execute(
        select(events.c.seq, events.c.data).where(*_events_of(key), events.c.id == event_id)
    )
    row = result.first()
    return None if row is None else StoredEvent(row[0], row[1])


async def count_events(connection: AsyncConnection, key: SessionKey) -> int:
    result = await connection.execute(select(func.count()).where(*_events_of(key)))
    return int(result.scalar_one())


# -- append ----------------------------------------------------------------


async def append_event(
    connection: AsyncConnection, key: SessionKey, event: NewEvent, expected_revision: int | None
) -> int:
    """Stores the event and applies its delta; returns the new revision. The
    SQLAlchemy path, used on SQLite (PostgreSQL appends through
    `PostgresHotPath`).

    Raises AppendNotApplied, with nothing written, when the session is missing,
    is not at `expected_revision`, or already holds an event with this id.
    """
    # The transaction began with BEGIN IMMEDIATE: this connection holds the
    # database's write lock, so reading and writing back the session state in
    # Python cannot lose a concurrent update.
    session = await read_session(connection, key)
    if session is None or (expected_revision is not None and session.revision != expected_revision):
        raise AppendNotApplied("session missing or stale")
    if await find_event(connection, key, event.id) is not None:
        raise AppendNotApplied("event id already stored")
    revision = session.revision + 1
    await connection.execute(
        sessions.update()
        .where(
            sessions.c.app_name == key.app_name,
            sessions.c.user_id == key.user_id,
            sessions.c.id == key.session_id,
        )
        .values(
            state=apply_delta(session.state, event.delta.session),
            revision=revision,
            update_time=event.timestamp,
        )
    )
    await connection.execute(
        events.insert().values(
            app_name=key.app_name,
            user_id=key.user_id,
            session_id=key.session_id,
            seq=revision,
            id=event.id,
            invocation_id=event.invocation_id,
            author=event.author,
            timestamp=event.timestamp,
            data=event.data,
        )
    )
    await upsert_app_state(connection, key.app_name, event.delta.app)
    await upsert_user_state(connection, key.app_name, key.user_id, event.delta.user)
    return revision


async def read_all_events(connection: AsyncConnection, key: SessionKey) -> list[StoredEvent]:
    result = await connection.execute(
        select(events.c.seq, events.c.data).where(*_events_of(key)).order_by(events.c.seq)
    )
    return [StoredEvent(seq, data) for seq, data in result]
