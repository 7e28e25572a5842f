"""The reads of the operator commands (`session-state apps`, `sessions
list`) for `SqlOperatorStore`: across apps, in either order, on both
backends through SQLAlchemy. Expired sessions are left out, as the API's
lists leave them out.

Not the API's hot path: sessions across apps, newest first, are read without
an index in that order (each page sorts the live sessions; an index on
update_time alone would be rewritten by every append to save an operator's
page a scan). One app, or one user of an app, is read in the API's indexes."""

from typing import Any

from sqlalchemy import ColumnElement, ScalarSelect, distinct, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from ..sessions.domain import ALL_SESSIONS, SessionQuery
from ..sessions.sqlite_statements import not_expired
from ..sessions.tables import app_states, sessions, user_states
from .store import AppSummary, ListedSession, SessionPosition


def _session_key_count(dialect: str) -> ScalarSelect[int]:
    """The number of keys of a session's state, counted where it is stored."""
    keys = (
        func.jsonb_object_keys(sessions.c.state)
        if dialect == "postgresql"
        else func.json_each(sessions.c.state)
    )
    return select(func.count()).select_from(keys.table_valued()).scalar_subquery()


async def app_summaries(connection: AsyncConnection, now: float) -> list[AppSummary]:
    """Every app with a live session, by name."""
    statement = (
        select(
            sessions.c.app_name,
            func.count(),
            func.count(distinct(sessions.c.user_id)),
            func.max(sessions.c.update_time),
        )
        .where(not_expired(now))
        .group_by(sessions.c.app_name)
        .order_by(sessions.c.app_name)
    )
    return [AppSummary(*row) for row in await connection.execute(statement)]


async def page_sessions(
    connection: AsyncConnection,
    *,
    app_name: str | None,
    user_id: str | None,
    newest_first: bool,
    after: SessionPosition | None,
    limit: int,
    now: float,
    where: SessionQuery = ALL_SESSIONS,
) -> tuple[list[ListedSession], bool]:
    """A page of live sessions by last update (then app, user, id), and
    whether more follow; of those `where` selects (labels, update times)."""
    order = (sessions.c.update_time, sessions.c.app_name, sessions.c.user_id, sessions.c.id)
    conditions: list[ColumnElement[bool]] = [not_expired(now), *_selected_by(where)]
    if app_name is not None:
        conditions.append(sessions.c.app_name == app_name)
    if user_id is not None:
        conditions.append(sessions.c.user_id == user_id)
    if after is not None:
        position = tuple_(*order)
        conditions.append(position < tuple_(*after) if newest_first else position > tuple_(*after))
    statement = (
        select(
            *order,
            sessions.c.revision,
            sessions.c.expire_time,
            sessions.c.labels,
            _session_key_count(connection.dialect.name).label("session_keys"),
        )
        .where(*conditions)
        .order_by(*(column.desc() if newest_first else column for column in order))
        .limit(limit + 1)
    )
    rows = list(await connection.execute(statement))
    more = len(rows) > limit
    rows = rows[:limit]
    app_keys = await _app_key_counts(connection, {row.app_name for row in rows})
    user_keys = await _user_key_counts(connection, rows)
    page = [
        ListedSession(
            app_name=row.app_name,
            user_id=row.user_id,
            id=row.id,
            last_update_time=row.update_time,
            revision=row.revision,
            expire_time=row.expire_time,
            state_keys=row.session_keys
            + app_keys.get(row.app_name, 0)
            + user_keys.get((row.app_name, row.user_id), 0),
            labels=row.labels or {},
        )
        for row in rows
    ]
    return page, more


def _selected_by(where: SessionQuery) -> list[ColumnElement[bool]]:
    """`where`'s conditions, the same SQL on both backends (`->>` on
    PostgreSQL, json_extract on SQLite): the operator's list is not the API's
    hot path, whose filters use the labels index."""
    conditions: list[ColumnElement[bool]] = []
    for key, value in where.labels.equal.items():
        conditions.append(sessions.c.labels[key].as_string() == value)
    for key in where.labels.present:
        conditions.append(sessions.c.labels[key].as_string().is_not(None))
    if where.updated_after is not None:
        conditions.append(sessions.c.update_time >= where.updated_after)
    if where.updated_before is not None:
        conditions.append(sessions.c.update_time < where.updated_before)
    return conditions


async def _app_key_counts(connection: AsyncConnection, apps: set[str]) -> dict[str, int]:
    if not apps:
        return {}
    statement = (
        select(app_states.c.app_name, func.count())
        .where(app_states.c.app_name.in_(sorted(apps)))
        .group_by(app_states.c.app_name)
    )
    return {app: count for app, count in await connection.execute(statement)}


async def _user_key_counts(
    connection: AsyncConnection, rows: list[Any]
) -> dict[tuple[str, str], int]:
    pairs = {(row.app_name, row.user_id) for row in rows}
    if not pairs:
        return {}
    statement = (
        select(user_states.c.app_name, user_states.c.user_id, func.count())
        .where(
            user_states.c.app_name.in_(sorted({app for app, _ in pairs})),
            user_states.c.user_id.in_(sorted({user for _, user in pairs})),
        )
        .group_by(user_states.c.app_name, user_states.c.user_id)
    )
    counts = await connection.execute(statement)
    return {(app, user): count for app, user, count in counts if (app, user) in pairs}


async def keys_of_session_id(
    connection: AsyncConnection,
    session_id: str,
    *,
    app_name: str | None,
    user_id: str | None,
    now: float,
    limit: int,
) -> list[tuple[str, str]]:
    """(app, user) of up to `limit` live sessions with this id, in order."""
    conditions: list[ColumnElement[bool]] = [sessions.c.id == session_id, not_expired(now)]
    if app_name is not None:
        conditions.append(sessions.c.app_name == app_name)
    if user_id is not None:
        conditions.append(sessions.c.user_id == user_id)
    statement = (
        select(sessions.c.app_name, sessions.c.user_id)
        .where(*conditions)
        .order_by(sessions.c.app_name, sessions.c.user_id)
        .limit(limit)
    )
    return [(row.app_name, row.user_id) for row in await connection.execute(statement)]
