"""The SQLite lifecycle's SQL (`sqlite_lifecycle.py`) on the sessions'
tables, as SQLAlchemy Core: which sessions an erasure or a sweep takes next,
and their deletion with their events. What the other features' tables lose
is their own storage's SQL (app.lifecycle.tables says which). Functions run on
a connection inside a transaction that the caller owns; none of them
commits."""

from collections.abc import Sequence

from sqlalchemy import delete, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from ..sessions.domain import SessionKey
from ..sessions.event_windows import ERASE_CANDIDATES
from ..sessions.sqlite_statements import expired, keep_change_numbers
from ..sessions.tables import app_states, events, sessions, user_states

# -- erasure ---------------------------------------------------------------


async def erasable_sessions(
    connection: AsyncConnection, app_name: str, user_id: str | None
) -> list[tuple[tuple[str, str], int]]:
    statement = select(sessions.c.user_id, sessions.c.id, sessions.c.revision).where(
        sessions.c.app_name == app_name
    )
    if user_id is not None:
        statement = statement.where(sessions.c.user_id == user_id)
    result = await connection.execute(
        statement.order_by(sessions.c.user_id, sessions.c.id).limit(ERASE_CANDIDATES)
    )
    return [((row[0], row[1]), row[2]) for row in result]


async def delete_sessions_with_events(
    connection: AsyncConnection, app_name: str, batch: Sequence[tuple[str, str]]
) -> tuple[int, int]:
    """Deletes the sessions and their events; returns (sessions, events)."""
    pairs = list(batch)
    await keep_change_numbers(
        connection,
        sessions.c.app_name == app_name,
        tuple_(sessions.c.user_id, sessions.c.id).in_(pairs),
    )
    deleted_events = await connection.execute(
        delete(events).where(
            events.c.app_name == app_name,
            tuple_(events.c.user_id, events.c.session_id).in_(pairs),
        )
    )
    deleted_sessions = await connection.execute(
        delete(sessions).where(
            sessions.c.app_name == app_name, tuple_(sessions.c.user_id, sessions.c.id).in_(pairs)
        )
    )
    return deleted_sessions.rowcount, deleted_events.rowcount


async def delete_scope_state(
    connection: AsyncConnection, app_name: str, user_id: str | None
) -> int:
    """The user's state keys, or (user_id None) the app's and all its users'."""
    if user_id is not None:
        result = await connection.execute(
            delete(user_states).where(
                user_states.c.app_name == app_name, user_states.c.user_id == user_id
            )
        )
        return result.rowcount
    users = await connection.execute(delete(user_states).where(user_states.c.app_name == app_name))
    app = await connection.execute(delete(app_states).where(app_states.c.app_name == app_name))
    return users.rowcount + app.rowcount


# -- the sweeper -----------------------------------------------------------


async def expired_sessions(connection: AsyncConnection, now: float) -> list[tuple[SessionKey, int]]:
    """The next expired sessions, oldest expiry first, with their event counts."""
    result = await connection.execute(
        select(sessions.c.app_name, sessions.c.user_id, sessions.c.id, sessions.c.revision)
        .where(expired(now))
        .order_by(sessions.c.expire_time)
        .limit(ERASE_CANDIDATES)
    )
    return [(SessionKey(row[0], row[1], row[2]), row[3]) for row in result]


async def delete_any_sessions_with_events(
    connection: AsyncConnection, keys: Sequence[SessionKey]
) -> tuple[int, int]:
    """Deletes the sessions (of any apps and users) and their events; returns
    (sessions, events)."""
    triples = [(key.app_name, key.user_id, key.session_id) for key in keys]
    await keep_change_numbers(
        connection, tuple_(sessions.c.app_name, sessions.c.user_id, sessions.c.id).in_(triples)
    )
    deleted_events = await connection.execute(
        delete(events).where(
            tuple_(events.c.app_name, events.c.user_id, events.c.session_id).in_(triples)
        )
    )
    deleted_sessions = await connection.execute(
        delete(sessions).where(
            tuple_(sessions.c.app_name, sessions.c.user_id, sessions.c.id).in_(triples)
        )
    )
    return deleted_sessions.rowcount, deleted_events.rowcount


async def count_expired(connection: AsyncConnection, now: float) -> int:
    result = await connection.execute(
        select(func.count()).select_from(sessions).where(expired(now))
    )
    return int(result.scalar_one())
