"""The SQL of sessions, events and state on SQLite (`SqliteSessions`,
`sqlite_sessions.py`), as SQLAlchemy Core (PostgreSQL's is in
`postgresql_statements.py`; the rules both share are in `state_sizes.py`,
`session_listing.py` and `event_windows.py`). The other features' SQLite
SQL on these tables is theirs (app.streams, app.lifecycle), built from the
conditions and change numbers here. Functions run on a connection inside a
transaction that the caller owns; none of them commits."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Double,
    LargeBinary,
    String,
    cast,
    column,
    delete,
    func,
    literal,
    null,
    select,
    text,
)
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.selectable import TextualSelect

from ..core import json_codec
from . import liveness_sql
from .directory_listing import apps_sql, apps_variants, directory_parameters, users_sql
from .domain import (
    ALL_SESSIONS,
    ChangeHorizon,
    EventsRemoved,
    Expiry,
    ListedApp,
    ListedUser,
    SessionKey,
    SessionPosition,
    SessionQuery,
    SessionRow,
    SessionSnapshot,
    SortOrder,
    StoredEvent,
)
from .event_windows import events_within
from .labels import Labels
from .session_listing import (
    ListingDialect,
    driving_label,
    listing_key,
    listing_parameters,
    listing_sql,
    listing_variants,
    parse_horizon,
)
from .state import StateDict
from .state_sizes import session_state_bytes
from .tables import (
    JsonDocument,
    app_states,
    event_removals,
    events,
    session_change_floor,
    sessions,
    user_states,
)


def _byte_length(column: Any) -> ColumnElement[int]:
    """Bytes of a text column."""
    return func.length(cast(column, LargeBinary))


# -- state -----------------------------------------------------------------


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


def session_is(key: SessionKey) -> list[Any]:
    return [
        sessions.c.app_name == key.app_name,
        sessions.c.user_id == key.user_id,
        sessions.c.id == key.session_id,
    ]


def events_of(key: SessionKey) -> list[Any]:
    return [
        events.c.app_name == key.app_name,
        events.c.user_id == key.user_id,
        events.c.session_id == key.session_id,
    ]


# -- change numbers: the user stream's order (app.streams.live) ------------------

_numbered = sessions.alias("numbered")


def next_change_number() -> ColumnElement[int]:
    """The number a write of a session row gives it: the newest of any
    session plus one, past every deleted session's (the floor). One writer at
    a time (BEGIN IMMEDIATE): the numbers grow in commit order, across every
    app and user, so that a walk of an app's list is pinned by one number
    (session_listing). A column of the write, not a statement more; the
    newest is read from ix_sessions_change_number (migration 0019)."""
    newest = select(func.coalesce(func.max(_numbered.c.change_number), 0)).scalar_subquery()
    floor = select(
        func.coalesce(func.max(session_change_floor.c.change_number), 0)
    ).scalar_subquery()
    return func.max(newest, floor) + 1


# next_change_number, as plain SQL (the append's, `sqlite_append.py`, and
# a walk's horizon: every number below it is committed).
NEXT_CHANGE_NUMBER_SQL = (
    "max((SELECT coalesce(max(numbered.change_number), 0) FROM sessions AS numbered),"
    " (SELECT coalesce(max(change_number), 0) FROM session_change_floor)) + 1"
)


async def keep_change_numbers(connection: AsyncConnection, *conditions: Any) -> None:
    """Before sessions are deleted: the floor rises to their newest number,
    so that no later write is numbered as one of them was (a stream past it
    would skip that write)."""
    deleted = (
        select(func.coalesce(func.max(sessions.c.change_number), 0))
        .where(*conditions)
        .scalar_subquery()
    )
    statement = sqlite_insert(session_change_floor).values(id=1, change_number=deleted)
    await connection.execute(
        statement.on_conflict_do_update(
            index_elements=["id"],
            set_={
                "change_number": func.max(
                    session_change_floor.c.change_number, statement.excluded.change_number
                )
            },
        )
    )


# -- expiry: a session expires at its expire_time (NULL: never) ------------


def expired(now: float) -> ColumnElement[bool]:
    """A session that has expired at `now` (absent everywhere once it has)."""
    return liveness_sql.expired(sessions.c.expire_time, now)


def not_expired(now: float) -> ColumnElement[bool]:
    """A session every reader and writer finds at `now`."""
    return liveness_sql.live(sessions.c.expire_time, now)


# not_expired, as the append's plain SQL writes it (`sqlite_append.py`).
NOT_EXPIRED_SQL = liveness_sql.live_sql(":now")
# The expire_time a write at :now leaves when it carries no expiry of its
# own: an idle timeout restarts, a fixed expiry time stays.
RESTARTED_EXPIRY_SQL = "CASE WHEN ttl_seconds IS NULL THEN expire_time ELSE :now + ttl_seconds END"


def expiry_columns(expiry: Expiry, now: float) -> dict[str, Any]:
    """The expiry of a session created at `now`, or whose expiry is replaced."""
    return {"ttl_seconds": expiry.ttl_seconds, "expire_time": expiry.time_after(now)}


def expiry_after_write(now: float, new_expiry: Expiry | None = None) -> dict[str, Any]:
    """The expiry columns a write at `now` sets: `new_expiry` when it carries
    one; otherwise an idle timeout restarts and a fixed expiry time stays."""
    if new_expiry is not None:
        return expiry_columns(new_expiry, now)
    return {"expire_time": text(RESTARTED_EXPIRY_SQL).bindparams(now=now)}


async def insert_session(
    connection: AsyncConnection,
    key: SessionKey,
    state: StateDict,
    now: float,
    expiry: Expiry,
    *,
    revision: int = 0,
    initial_state: StateDict | None = None,
    labels: Labels | None = None,
) -> bool:
    """Inserts the session (a new one, or with `revision` a fork holding
    that many events); False when the id is already taken."""
    statement = (
        sqlite_insert(sessions)
        .values(
            app_name=key.app_name,
            user_id=key.user_id,
            id=key.session_id,
            state=state,
            initial_state=state if revision == 0 else initial_state,
            state_bytes=session_state_bytes(state),
            revision=revision,
            create_time=now,
            update_time=now,
            # SQL NULL, not JSON null, for none (the filters test IS NOT NULL).
            labels=labels or null(),
            change_number=next_change_number(),
            **expiry_columns(expiry, now),
        )
        .on_conflict_do_nothing()
        .returning(sessions.c.revision)
    )
    result = await connection.execute(statement)
    return result.first() is not None


async def read_session(
    connection: AsyncConnection, key: SessionKey, now: float
) -> SessionRow | None:
    """The session row; None when it is missing or expired at `now`."""
    statement = select(
        sessions.c.state,
        sessions.c.revision,
        sessions.c.update_time,
        sessions.c.expire_time,
        sessions.c.labels,
    ).where(*session_is(key), not_expired(now))
    result = await connection.execute(statement)
    row = result.first()
    if row is None:
        return None
    return SessionRow(key.app_name, key.user_id, key.session_id, *row[:4], row[4] or {})


async def delete_session(connection: AsyncConnection, key: SessionKey, now: float) -> bool | None:
    """Deletes the session with its events: None when there was none, False
    when it was expired (deleted all the same)."""
    found = await connection.execute(select(not_expired(now)).where(*session_is(key)))
    alive = found.scalar_one_or_none()
    if alive is None:
        return None
    # SQLite writers hold the database's write lock: no append can interleave.
    await _delete_session_rows(connection, key)
    return bool(alive)


async def _delete_session_rows(connection: AsyncConnection, key: SessionKey) -> None:
    await keep_change_numbers(connection, *session_is(key))
    await connection.execute(delete(events).where(*events_of(key)))
    await connection.execute(delete(sessions).where(*session_is(key)))


async def delete_if_expired(connection: AsyncConnection, key: SessionKey, now: float) -> bool:
    """Deletes the session with its events if it is expired at `now` (inside
    the caller's transaction, which takes its id); False if it is not."""
    found = await connection.execute(
        select(sessions.c.revision).where(*session_is(key), expired(now))
    )
    if found.first() is None:
        return False
    await _delete_session_rows(connection, key)
    return True


async def set_expiry(
    connection: AsyncConnection,
    key: SessionKey,
    expiry: Expiry,
    expected_revision: int | None,
    now: float,
) -> int | None:
    """Replaces the session's expiry; its revision, or None when it is
    missing, expired or not at `expected_revision`."""
    conditions = [*session_is(key), not_expired(now)]
    if expected_revision is not None:
        conditions.append(sessions.c.revision == expected_revision)
    result = await connection.execute(
        sessions.update()
        .where(*conditions)
        .values(
            **expiry_columns(expiry, now),
            change_number=next_change_number(),
        )
        .returning(sessions.c.revision)
    )
    row = result.first()
    return None if row is None else int(row[0])


async def set_labels(
    connection: AsyncConnection,
    key: SessionKey,
    labels: Labels,
    expiry: Expiry | None,
    expected_revision: int | None,
    now: float,
) -> int | None:
    """Replaces the session's labels (and, when given, its expiry); as
    set_expiry otherwise."""
    conditions = [*session_is(key), not_expired(now)]
    if expected_revision is not None:
        conditions.append(sessions.c.revision == expected_revision)
    columns: dict[str, Any] = {
        "labels": labels or null(),
        "change_number": next_change_number(),
    }
    if expiry is not None:
        columns.update(expiry_columns(expiry, now))
    result = await connection.execute(
        sessions.update().where(*conditions).values(**columns).returning(sessions.c.revision)
    )
    row = result.first()
    return None if row is None else int(row[0])


# SQLite has no containment operator: every pair asked for must be the
# session's, every key asked for present. Keys are checked label keys
# (app.sessions.labels), so they are safe inside a JSON path's quotes.
_LISTING_DIALECT = ListingDialect(
    has_labels="s.labels IS NOT NULL"
    " AND NOT EXISTS (SELECT 1 FROM json_each(:label_equal) AS f"
    " WHERE json_extract(s.labels, '$.\"' || f.key || '\"') IS NOT f.value)"
    " AND NOT EXISTS (SELECT 1 FROM json_each(:label_keys) AS k"
    " WHERE json_type(s.labels, '$.\"' || k.value || '\"') IS NULL)",
    labels_bytes="coalesce(length(s.labels), 0)",
    # As PostgreSQL writes a snapshot with nothing in flight: one writer.
    horizon=f"(SELECT n || ':' || n || ':' FROM (SELECT {NEXT_CHANGE_NUMBER_SQL} AS n))",
    not_running="{0} NOT IN (SELECT value FROM json_each(:walk_running))",
    label_rows=True,
)


def _listing_statement(
    variant: tuple[bool, bool, bool, bool], driven_by_value: bool
) -> TextualSelect:
    one_user, after_cursor, descending, labelled = variant
    sql = listing_sql(
        _LISTING_DIALECT,
        one_user=one_user,
        after_cursor=after_cursor,
        descending=descending,
        labelled=labelled,
        driven_by_value=driven_by_value,
    )
    return text(sql).columns(
        column("user_id", String),
        column("id", String),
        column("state", JsonDocument),
        column("revision", BigInteger),
        column("update_time", Double),
        column("expire_time", Double),
        column("labels", JsonDocument),
        column("fetched", BigInteger),
        *([] if after_cursor else [column("horizon", String)]),
    )


# By variant and whether the label rows are walked by a label's value.
_LISTINGS = {
    (variant, by_value): _listing_statement(variant, by_value)
    for variant in listing_variants()
    for by_value in (False, True)
}


async def page_sessions(
    connection: AsyncConnection,
    app_name: str,
    user_id: str | None,
    after: SessionPosition | None,
    limit: int,
    max_bytes: int,
    now: float,
    query: SessionQuery = ALL_SESSIONS,
) -> tuple[list[SessionRow], bool, ChangeHorizon | None]:
    """A page in ADK's order (lastUpdateTime, userId, id), read from an index,
    of at most `limit` sessions whose merged state (each session's size
    bound, the app's and the user's sizes) comes to at most `max_bytes`
    (always at least one session); whether more follow; and the walk's
    horizon (a first page's is read with its rows). One statement: the
    database cuts the page before any state leaves it."""
    parameters = listing_parameters(app_name, user_id, after, query, limit, max_bytes, now)
    if "walk_running" in parameters:
        parameters["walk_running"] = json_codec.dumps_text(parameters["walk_running"])
    if "label_equal" in parameters:
        parameters["label_equal"] = json_codec.dumps_text(parameters["label_equal"])
        parameters["label_keys"] = json_codec.dumps_text(parameters["label_keys"])
    if user_id is None and not query.labels.empty:
        # A user's list walks its own index; an app's, the label rows.
        parameters.update(driving_label(query.labels))
    statement = _LISTINGS[listing_key(user_id, after, query), "drive_value" in parameters]
    result = await connection.execute(statement, parameters)
    rows: list[SessionRow] = []
    fetched = 0
    horizon = None if after is None else after.horizon
    for row in result:
        user, session_id, state, revision, update_time, expire_time, labels = row[:7]
        rows.append(
            SessionRow(
                app_name, user, session_id, state, revision, update_time, expire_time, labels or {}
            )
        )
        fetched = row[7]
        if after is None:
            horizon = parse_horizon(row[8])
    if len(rows) > limit:
        return rows[:limit], True, horizon
    # Fewer rows than candidates: the budget cut the page.
    return rows, fetched > len(rows), horizon


_APPS = {
    (restricted, after_cursor): text(
        apps_sql(
            "s.app_name IN (SELECT value FROM json_each(:allowed))" if restricted else None,
            after_cursor=after_cursor,
        )
    )
    for restricted, after_cursor in apps_variants()
}
_USERS = {after: text(users_sql(after_cursor=after)) for after in (False, True)}


async def page_apps(
    connection: AsyncConnection,
    allowed: frozenset[str] | None,
    after: str | None,
    limit: int,
    now: float,
) -> tuple[list[ListedApp], bool]:
    parameters = directory_parameters(now, limit, after_app=after)
    if allowed is not None:
        parameters["allowed"] = json_codec.dumps_text(sorted(allowed))
    result = await connection.execute(_APPS[(allowed is not None, after is not None)], parameters)
    apps = [ListedApp(row[0], int(row[1])) for row in result]
    return apps[:limit], len(apps) > limit


async def page_users(
    connection: AsyncConnection, app_name: str, after: str | None, limit: int, now: float
) -> tuple[list[ListedUser], bool]:
    parameters = directory_parameters(now, limit, app_name=app_name, after_user=after)
    result = await connection.execute(_USERS[after is not None], parameters)
    users = [ListedUser(row[0], int(row[1]), float(row[2])) for row in result]
    return users[:limit], len(users) > limit


# -- events ----------------------------------------------------------------


async def read_snapshot(
    connection: AsyncConnection,
    key: SessionKey,
    limit: int | None,
    after_timestamp: float | None,
    max_events_bytes: int,
    now: float,
) -> SessionSnapshot | None:
    """Everything a session read returns. Events are those up to the
    revision read with the session row, so events, state and ETag describe one
    moment; they are read only if they fit in `max_events_bytes`."""
    found = await read_session(connection, key, now)
    if found is None:
        return None
    selection = _recent_events(connection, key, found.revision, limit, after_timestamp)
    size = await connection.execute(select(func.coalesce(func.sum(selection.c.size), 0)))
    events_bytes = int(size.scalar_one())
    events_json = None
    if events_bytes <= max_events_bytes:
        result = await connection.execute(
            select(events.c.data)
            .where(*events_of(key), events.c.seq.in_(select(selection.c.seq)))
            .order_by(events.c.seq)
        )
        events_json = ",".join(result.scalars())
    return SessionSnapshot(
        found,
        await read_app_state(connection, key.app_name),
        await read_user_state(connection, key.app_name, key.user_id),
        events_json,
        events_bytes,
    )


def _recent_events(
    connection: AsyncConnection,
    key: SessionKey,
    up_to_seq: int,
    limit: int | None,
    after_timestamp: float | None,
) -> Any:
    """The last `limit` events at or after the time: seq and size."""
    statement = select(events.c.seq, _byte_length(events.c.data).label("size")).where(
        *events_of(key), events.c.seq <= up_to_seq
    )
    if after_timestamp is not None:
        statement = statement.where(events.c.timestamp >= after_timestamp)
    if limit is not None:
        statement = statement.order_by(events.c.seq.desc()).limit(limit)
    return statement.subquery()


async def page_events(
    connection: AsyncConnection,
    key: SessionKey,
    order: SortOrder,
    after_seq: int | None,
    after_timestamp: float | None,
    limit: int,
    max_bytes: int,
) -> tuple[list[StoredEvent], bool]:
    """A page of at most `limit` events and `max_bytes` of event JSON, and
    whether more follow. Sizes are read first, so no event is read that the
    page will not carry. ResponseTooLarge if the first event alone is larger."""
    statement = select(events.c.seq, _byte_length(events.c.data)).where(*events_of(key))
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
    sizes = [(seq, size) for seq, size in await connection.execute(statement.limit(limit + 1))]
    chosen, more = events_within(sizes, limit, max_bytes)
    if not chosen:
        return [], more
    result = await connection.execute(
        select(events.c.seq, events.c.data).where(*events_of(key), events.c.seq.in_(chosen))
    )
    data = dict(result.all())
    return [StoredEvent(seq, data[seq]) for seq in chosen if seq in data], more


async def find_event(
    connection: AsyncConnection, key: SessionKey, event_id: str
) -> StoredEvent | None:
    result = await connection.execute(
        select(events.c.seq, events.c.data).where(*events_of(key), events.c.id == event_id)
    )
    row = result.first()
    return None if row is None else StoredEvent(row[0], row[1])


async def find_events(
    connection: AsyncConnection, key: SessionKey, event_ids: Sequence[str]
) -> dict[str, StoredEvent]:
    result = await connection.execute(
        select(events.c.id, events.c.seq, events.c.data).where(
            *events_of(key), events.c.id.in_(list(event_ids))
        )
    )
    return {row[0]: StoredEvent(row[1], row[2]) for row in result}


async def count_events(
    connection: AsyncConnection, key: SessionKey, up_to_seq: int | None = None
) -> int:
    """The session's events (those at most `up_to_seq`, when given)."""
    statement = select(func.count()).where(*events_of(key))
    if up_to_seq is not None:
        statement = statement.where(events.c.seq <= up_to_seq)
    result = await connection.execute(statement)
    return int(result.scalar_one())


# -- removing events -------------------------------------------------------


async def newest_kept_seq(
    connection: AsyncConnection, key: SessionKey, remove_count: int, now: float
) -> tuple[int, int] | None:
    """The session's revision and the seq that is newest once its newest
    `remove_count` events go (0 when none is left); None if it is missing."""
    session = await read_session(connection, key, now)
    if session is None:
        return None
    result = await connection.execute(
        select(events.c.seq)
        .where(*events_of(key))
        .order_by(events.c.seq.desc())
        .offset(remove_count)
        .limit(1)
    )
    return session.revision, int(result.scalar_one_or_none() or 0)


async def newest_events(
    connection: AsyncConnection, key: SessionKey, count: int, now: float
) -> tuple[int, list[StoredEvent]] | None:
    """The session's revision and its newest `count` events, oldest first;
    None if it is missing."""
    session = await read_session(connection, key, now)
    if session is None:
        return None
    result = await connection.execute(
        select(events.c.seq, events.c.data)
        .where(*events_of(key))
        .order_by(events.c.seq.desc())
        .limit(count)
    )
    return session.revision, [StoredEvent(seq, data) for seq, data in reversed(result.all())]


async def remove_events(
    connection: AsyncConnection,
    key: SessionKey,
    after_seq: int,
    expected_revision: int,
    state: StateDict | None,
    now: float,
) -> EventsRemoved | None:
    """Deletes the events after `after_seq` (and replaces the session-scope
    state when `state` is given) if the session is still at
    `expected_revision`, as one change; None when missing or moved on."""
    changes = expiry_after_write(now)
    if state is not None:
        changes.update(state=state, state_bytes=session_state_bytes(state))
    bumped = await connection.execute(
        sessions.update()
        .where(*session_is(key), not_expired(now), sessions.c.revision == expected_revision)
        .values(
            **changes,
            revision=sessions.c.revision + 1,
            update_time=now,
            change_number=next_change_number(),
        )
        .returning(sessions.c.revision)
    )
    revision = bumped.scalar_one_or_none()
    if revision is None:
        return None
    removed = await connection.execute(
        select(events.c.id).where(*events_of(key), events.c.seq > after_seq).order_by(events.c.seq)
    )
    await connection.execute(
        event_removals.insert().values(
            app_name=key.app_name,
            user_id=key.user_id,
            session_id=key.session_id,
            revision=revision,
            event_ids=json_codec.dumps_text([row[0] for row in removed]),
        )
    )
    deleted = await connection.execute(
        delete(events).where(*events_of(key), events.c.seq > after_seq)
    )
    return EventsRemoved(revision, deleted.rowcount)


async def event_at_seq(connection: AsyncConnection, key: SessionKey, seq: int) -> bool:
    result = await connection.execute(
        select(events.c.seq).where(*events_of(key), events.c.seq == seq)
    )
    return result.first() is not None


async def read_events_after(
    connection: AsyncConnection,
    key: SessionKey,
    after_seq: int,
    limit: int,
    up_to_seq: int | None = None,
) -> list[StoredEvent]:
    """Up to `limit` events after `after_seq` (and at most `up_to_seq`), in
    append order: for walking a long history in bounded batches."""
    statement = select(events.c.seq, events.c.data).where(*events_of(key), events.c.seq > after_seq)
    if up_to_seq is not None:
        statement = statement.where(events.c.seq <= up_to_seq)
    result = await connection.execute(statement.order_by(events.c.seq).limit(limit))
    return [StoredEvent(seq, data) for seq, data in result]


# -- fork ------------------------------------------------------------------


async def fork_source(
    connection: AsyncConnection, key: SessionKey, now: float
) -> tuple[StateDict, int, StateDict | None, Labels] | None:
    """The source's state, revision, initial state and labels; None if it
    is missing."""
    result = await connection.execute(
        select(
            sessions.c.state, sessions.c.revision, sessions.c.initial_state, sessions.c.labels
        ).where(*session_is(key), not_expired(now))
    )
    row = result.first()
    return None if row is None else (row[0], row[1], row[2], row[3] or {})


async def read_initial_state(
    connection: AsyncConnection, key: SessionKey, now: float
) -> StateDict | None:
    found = await fork_source(connection, key, now)
    if found is None:
        return None
    initial_state: StateDict | None = found[2]
    return initial_state


async def copy_events(
    connection: AsyncConnection, source: SessionKey, session_id: str, after_seq: int, up_to_seq: int
) -> None:
    """Copies the source's events after_seq < seq <= up_to_seq into session
    `session_id` of the same user, in one statement."""
    columns = ["seq", "id", "invocation_id", "author", "timestamp", "data"]
    copied = select(
        events.c.app_name,
        events.c.user_id,
        literal(session_id).label("session_id"),
        *(events.c[name] for name in columns),
    ).where(*events_of(source), events.c.seq > after_seq, events.c.seq <= up_to_seq)
    await connection.execute(
        events.insert().from_select(["app_name", "user_id", "session_id", *columns], copied)
    )
