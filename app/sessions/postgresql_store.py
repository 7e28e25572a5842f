"""The PostgreSQL store: every request's SQL sent with asyncpg, on one pool
per process (SQLAlchemy is kept for Alembic and the models): asyncpg directly
costs far less client CPU per statement than SQLAlchemy's async layer
(docs/performance.md, "The PostgreSQL store's driver and pool").
"""

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from ..core import json_codec
from ..core.config import Settings
from ..core.errors import DatabaseUnavailable
from ..db import migrations, poolers
from ..db.database_errors import (
    as_domain_error,
    database_errors_as_domain_errors,
    is_database_unavailable,
)
from ..db.migrations import SchemaNotCurrent
from ..db.postgresql_connections import (
    PooledConnection,
    asyncpg_dsn,
    discard,
    skip_session_reset,
    use_json_codecs,
)
from ..db.postgresql_statement import Statement
from ..lifecycle.postgresql_lifecycle import PostgresLifecycle
from ..memory import postgresql_memory as memory
from ..memory.postgresql_memory import PostgresMemory
from ..streams import postgresql_tombstones as tombstones
from ..streams.postgresql_changes import PostgresChangeLog
from . import forking
from . import postgresql_statements as sql
from .append_batches import AppendBatcher
from .directory_listing import directory_parameters
from .domain import (
    ALL_SESSIONS,
    AppendNotApplied,
    EventsRemoved,
    Expiry,
    ForkSource,
    ListedApp,
    ListedUser,
    NewEvent,
    Popped,
    SessionKey,
    SessionListing,
    SessionPosition,
    SessionQuery,
    SessionRow,
    SessionSnapshot,
    SharedScopes,
    SortOrder,
    StoredEvent,
)
from .event_windows import events_within
from .labels import Labels
from .session_listing import label_guard_parameters, listing_key, listing_parameters, parse_horizon
from .state import ScopedDelta, StateDict
from .state_sizes import entry_sizes, session_state_bytes, state_past_limit, state_too_large
from .store import ForkOutcome

# Batch statements at the database at once, per process; appends arriving
# meanwhile wait and form the next batch. (Appends sent by themselves, after
# their session was found held, are not counted: they may wait for a lock.)
APPEND_BATCHES_IN_FLIGHT = 2
# The largest batch sent with the kept (generic) plan. That plan is made
# without the batch's size and runs slower than one made for it from about
# ten appends on, where planning is shared by many appends:
# a larger batch is sent on a connection of the main pool, where PostgreSQL
# chooses. The figures: `python -m bench.append_plans`.
KEPT_PLAN_ITEMS = 8
# Statements a batch connection sends before it is replaced (and its kept
# plans made again): reconnecting costs a few milliseconds per this many.
BATCH_CONNECTION_STATEMENTS = 10_000


def _batches_in_flight(append_batch_size: int, batch_pool: asyncpg.Pool | None) -> int:
    if append_batch_size == 1:
        return sys.maxsize  # without batches nothing waits for one: the pool is the bound
    return APPEND_BATCHES_IN_FLIGHT if batch_pool is None else batch_pool.get_max_size()


async def _plan_appends_once(connection: asyncpg.Connection) -> None:
    """The batch connections' setup. Left to itself, PostgreSQL decides per
    connection from a prepared statement's first runs whether to plan it
    again on every run, and for the batch statement it sometimes does,
    which costs more than the small batch itself (docs/performance.md, "Kept
    plans"). On these connections, which run nothing but the append
    statements of small batches, the generic plan is always kept."""
    await use_json_codecs(connection)
    await connection.execute("SET plan_cache_mode = force_generic_plan")


def _session_growth(delta: StateDict) -> int:
    """The bound a session's state size is raised by: twice the delta's
    compact JSON (JSONB prints more spaces); 0 for no change."""
    return 2 * session_state_bytes(delta) if delta else 0


def _shared_change(
    key: SessionKey, delta: ScopedDelta, max_state_bytes: int, encode_json: Callable[[Any], Any]
) -> dict[str, Any]:
    """The values of a write of app and user state (`encode_json` takes the
    JSON values: as they are for the pool's codec, as texts inside arrays)."""
    return {
        "app_name": key.app_name,
        "user_id": key.user_id,
        "app_delta": encode_json(delta.app),
        "app_sizes": encode_json(entry_sizes(delta.app)),
        "user_delta": encode_json(delta.user),
        "user_sizes": encode_json(entry_sizes(delta.user)),
        "max_bytes": max_state_bytes,
    }


@dataclass(frozen=True)
class _Change:
    """What an append does to its session and the shared state, whatever its
    events (`update_time`: the last event's time)."""

    key: SessionKey
    delta: ScopedDelta
    update_time: float
    expected_revision: int | None
    max_state_bytes: int
    now: float
    new_expiry: Expiry | None

    def values(self, encode_json: Callable[[Any], Any]) -> dict[str, Any]:
        expiry = self.new_expiry
        return {
            **_shared_change(self.key, self.delta, self.max_state_bytes, encode_json),
            "session_id": self.key.session_id,
            "expected": self.expected_revision,
            "now": self.now,
            "update_time": self.update_time,
            "session_delta": encode_json(self.delta.session),
            "session_growth": _session_growth(self.delta.session),
            "replace_expiry": expiry is not None,
            "ttl": None if expiry is None else expiry.ttl_seconds,
            "expire_at": None if expiry is None else expiry.expire_time,
        }


@dataclass(frozen=True)
class _Append:
    """One append waiting for its statement (alone or in a batch)."""

    change: _Change
    event: NewEvent

    def values(self, encode_json: Callable[[Any], Any]) -> dict[str, Any]:
        event = self.event
        return {
            **self.change.values(encode_json),
            "event_id": event.id,
            "invocation_id": event.invocation_id,
            "author": event.author,
            "event_time": event.timestamp,
            "data": event.data,
        }


def _many_values(change: _Change, events: Sequence[NewEvent]) -> dict[str, Any]:
    """APPEND_MANY's values: the events' columns as arrays, in order."""
    return {
        **change.values(_as_is),
        "event_ids": [event.id for event in events],
        "invocation_ids": [event.invocation_id for event in events],
        "authors": [event.author for event in events],
        "event_times": [event.timestamp for event in events],
        "event_data": [event.data for event in events],
    }


def _as_is(value: Any) -> Any:
    return value


def _applied_revision(row: Sequence[Any], max_state_bytes: int) -> int:
    """The revision an append statement's row reports; AppendNotApplied
    (saying which scope, when one would pass the limit) when it wrote nothing."""
    revision, app_bytes, user_bytes, session_bytes = row
    if revision is not None:
        return int(revision)
    too_large = state_past_limit(
        max_state_bytes, app=app_bytes, user=user_bytes, session=session_bytes
    )
    if too_large is not None:
        raise AppendNotApplied("state too large", state_error=too_large)
    raise AppendNotApplied("session missing or stale")


def _runs_singly(error: Exception) -> bool:
    """Whether a batch's error may be one append's doing (an event id stored
    meanwhile, a deadlock with another process's batch): each is then run by
    itself. A database that cannot serve fails them all."""
    return isinstance(error, asyncpg.PostgresError) and not is_database_unavailable(error)


class PostgresStore(PostgresChangeLog, PostgresMemory, PostgresLifecycle):
    def __init__(
        self,
        pool: asyncpg.Pool,
        timeout: float,
        dsn: str,
        append_batch_size: int = 1,
        batch_pool: asyncpg.Pool | None = None,
    ) -> None:
        """`append_batch_size`: the most appends sent in one statement (1:
        each by itself); `batch_pool`: the connections batches are sent on
        (by default `pool`'s)."""
        super().__init__(pool, timeout, dsn, batch_pool)
        self._appends = AppendBatcher(
            run_batch=self._append_batch,
            run_one=self._append_one,
            session_of=lambda append: append.change.key,
            runs_singly=_runs_singly,
            # As a statement past the timeout: 503, counted and logged alike.
            timed_out=lambda: as_domain_error(TimeoutError()),
            max_items=append_batch_size,
            max_in_flight=_batches_in_flight(append_batch_size, batch_pool),
            max_wait=timeout,
        )

    @classmethod
    async def connect(
        cls, settings: Settings, *, database_url: str | None = None
    ) -> "PostgresStore":
        """`db_timeout_seconds` bounds connecting, waiting for a pooled
        connection and every statement, so no request waits longer on the
        database. `database_url` replaces the settings' (the replicas')."""
        timeout = settings.db_timeout_seconds
        dsn = asyncpg_dsn(database_url or settings.database_url)
        options: dict[str, Any] = {
            # No floor of idle connections: while the database is away the
            # pool would log a failed attempt to restore it, again and again.
            "min_size": 0,
            "timeout": timeout,
            "command_timeout": timeout,
            "reset": skip_session_reset,
            "server_settings": {"application_name": "session-state"},
            **poolers.asyncpg_options(settings.db_pooler),
        }
        connections = settings.db_pool_size + settings.db_max_overflow
        # A connection per batch in flight, so that a batch never waits for
        # one, taken out of the configured number (which stays the bound on
        # a process's connections); at least one is left for the rest.
        batch_connections = 0
        if settings.append_batch_size > 1 and database_url is None:  # replicas only read
            batch_connections = min(APPEND_BATCHES_IN_FLIGHT, connections - 1)
        batch_pool = None
        with database_errors_as_domain_errors():
            pool = await asyncpg.create_pool(
                dsn, max_size=connections - batch_connections, init=use_json_codecs, **options
            )
            if batch_connections:
                # Behind a transaction-mode pooler statements are not kept
                # (nothing to plan once), and a SET would outlive the
                # transaction on a server connection that others then use.
                keeps_plans = settings.db_pooler != "transaction"
                batch_pool = await asyncpg.create_pool(
                    dsn,
                    max_size=batch_connections,
                    # A kept plan is made again when a table's statistics
                    # change (ANALYZE); one made while the tables were nearly
                    # empty could otherwise outlive their growth where
                    # autovacuum is off. A new connection plans anew.
                    max_queries=BATCH_CONNECTION_STATEMENTS,
                    init=_plan_appends_once if keeps_plans else use_json_codecs,
                    **options,
                )
        return cls(pool, timeout, dsn, settings.append_batch_size, batch_pool)

    # -- sessions ------------------------------------------------------------

    async def create_session(
        self,
        key: SessionKey,
        delta: ScopedDelta,
        now: float,
        expiry: Expiry,
        max_state_bytes: int,
        *,
        forget_expired_memories: bool,
        labels: Labels | None = None,
    ) -> SharedScopes | None:
        size = session_state_bytes(delta.session)
        if size > max_state_bytes:
            raise state_too_large("session", size, max_state_bytes)
        session = (key.app_name, key.user_id, key.session_id)
        expires = (expiry.time_after(now), expiry.ttl_seconds)
        values = (delta.session, size, now, *expires, labels or None)
        async with self._transaction() as connection:
            created = await connection.fetchval(sql.INSERT_SESSION, *session, *values)
            if created is None:
                if not await _delete_if_expired(connection, key, now, forget_expired_memories):
                    return None
                await connection.fetchval(sql.INSERT_SESSION, *session, *values)
            if delta.app or delta.user:
                shared = _shared_change(key, delta, max_state_bytes, _as_is)
                sizes = await connection.fetchrow(
                    sql.WRITE_SHARED_STATE.text, *sql.WRITE_SHARED_STATE.arguments(shared)
                )
                app_bytes, user_bytes = sizes
                too_large = state_past_limit(max_state_bytes, app=app_bytes, user=user_bytes)
                if too_large is not None:
                    raise too_large
            return SharedScopes(
                await self._app_state(connection, key.app_name),
                await self._user_state(connection, key.app_name, key.user_id),
            )

    async def read_snapshot(
        self,
        key: SessionKey,
        limit: int | None,
        after_timestamp: float | None,
        max_events_bytes: int,
        now: float,
    ) -> SessionSnapshot | None:
        async with self._connection() as connection:
            row = await connection.fetchrow(
                sql.SNAPSHOT,
                key.app_name,
                key.user_id,
                key.session_id,
                after_timestamp,
                limit,
                max_events_bytes,
                now,
            )
        if row is None:
            return None
        state, revision, update_time, expire_time, labels, app_state, user_state = row[:7]
        events_bytes, events_json = row[7:]
        session = SessionRow(
            key.app_name,
            key.user_id,
            key.session_id,
            state,
            revision,
            update_time,
            expire_time,
            labels or {},
        )
        if events_bytes <= max_events_bytes:
            events_json = events_json or ""
        return SessionSnapshot(
            session, app_state or {}, user_state or {}, events_json, int(events_bytes)
        )

    async def page_sessions(
        self,
        app_name: str,
        user_id: str | None,
        after: SessionPosition | None,
        limit: int,
        max_bytes: int,
        now: float,
        query: SessionQuery = ALL_SESSIONS,
    ) -> SessionListing:
        statement = sql.LISTINGS[listing_key(user_id, after, query)]
        values = listing_parameters(app_name, user_id, after, query, limit, max_bytes, now)
        if "label_guard" in statement.names:
            values.update(label_guard_parameters())
        async with self._connection() as connection:
            rows = await connection.fetch(statement.text, *statement.arguments(values))
            page = [
                SessionRow(app_name, row[0], row[1], row[2], row[3], row[4], row[5], row[6] or {})
                for row in rows
            ]
            fetched = rows[-1][7] if rows else 0
            horizon = after.horizon if after is not None else None
            if after is None and rows:
                horizon = parse_horizon(rows[-1][8])
            if len(page) > limit:
                page, more = page[:limit], True
            else:
                # Fewer rows than candidates: the budget cut the page.
                more = fetched > len(page)
            if not query.include_state:
                return SessionListing(page, {}, {}, more, horizon)
            users = sorted({row.user_id for row in page})
            user_states: dict[str, StateDict] = {user: {} for user in users}
            for user, name, value in await connection.fetch(sql.READ_USER_STATES, app_name, users):
                user_states[user][name] = value
            app_state = await self._app_state(connection, app_name)
        return SessionListing(page, app_state, user_states, more, horizon)

    async def page_apps(
        self, allowed: frozenset[str] | None, after: str | None, limit: int, now: float
    ) -> tuple[list[ListedApp], bool]:
        statement = sql.APPS[(allowed is not None, after is not None)]
        values = directory_parameters(now, limit, after_app=after)
        if allowed is not None:
            values["allowed"] = sorted(allowed)
        async with self._connection() as connection:
            rows = await connection.fetch(statement.text, *statement.arguments(values))
        apps = [ListedApp(row[0], int(row[1])) for row in rows]
        return apps[:limit], len(apps) > limit

    async def page_users(
        self, app_name: str, after: str | None, limit: int, now: float
    ) -> tuple[list[ListedUser], bool]:
        statement = sql.USERS[after is not None]
        values = directory_parameters(now, limit, app_name=app_name, after_user=after)
        async with self._connection() as connection:
            rows = await connection.fetch(statement.text, *statement.arguments(values))
        users = [ListedUser(row[0], int(row[1]), float(row[2])) for row in rows]
        return users[:limit], len(users) > limit

    async def delete_session(self, key: SessionKey, *, with_memories: bool, now: float) -> bool:
        session = (key.app_name, key.user_id, key.session_id)
        async with self._transaction() as connection:
            alive = await connection.fetchval(sql.LOCK_SESSION, *session, now)
            if alive is None:
                return False
            await connection.execute(sql.DELETE_SESSION_EVENTS, *session)
            await connection.execute(sql.DELETE_SESSION, *session)
            if with_memories:
                await memory.delete_session_memories(connection, key)
            await tombstones.write(connection, [key], "deleted" if alive else "expired", now)
        return bool(alive)

    async def append_event(
        self,
        key: SessionKey,
        event: NewEvent,
        expected_revision: int | None,
        max_state_bytes: int,
        now: float,
        new_expiry: Expiry | None = None,
        new_labels: Labels | None = None,
    ) -> int:
        change = _Change(
            key, event.delta, event.timestamp, expected_revision, max_state_bytes, now, new_expiry
        )
        if new_labels is not None:
            return await self._append_with_labels(_Append(change, event), new_labels)
        row = await self._appends.submit(_Append(change, event))
        return _applied_revision(row, max_state_bytes)

    async def _append_with_labels(self, append: _Append, labels: Labels) -> int:
        """The append's statement and the labels' in one transaction (rare:
        a PATCH of both, so not batched): a refused append rolls back both.
        The append locks the session row, so the labels land on the revision
        it made."""
        statement, change = sql.APPEND, append.change
        try:
            async with self._transaction() as connection:
                row = await connection.fetchrow(
                    statement.text, *statement.arguments(append.values(_as_is))
                )
                revision = _applied_revision(row[:4], change.max_state_bytes)
                key = change.key
                await connection.execute(
                    sql.SET_LABELS,
                    key.app_name,
                    key.user_id,
                    key.session_id,
                    change.now,
                    labels or None,
                    False,
                    None,
                    None,
                    revision,
                )
        except asyncpg.UniqueViolationError as error:
            raise AppendNotApplied("event id already stored") from error
        return revision

    async def append_events(
        self,
        key: SessionKey,
        events: Sequence[NewEvent],
        delta: ScopedDelta,
        expected_revision: int | None,
        max_state_bytes: int,
        now: float,
    ) -> int:
        # One statement, outside the batcher: it is one request's events,
        # already together.
        change = _Change(
            key, delta, events[-1].timestamp, expected_revision, max_state_bytes, now, None
        )
        statement = sql.APPEND_MANY
        try:
            async with self._connection() as connection:
                row = await connection.fetchrow(
                    statement.text, *statement.arguments(_many_values(change, events))
                )
        except asyncpg.UniqueViolationError as error:
            raise AppendNotApplied("event id already stored") from error
        return _applied_revision(row[:4], max_state_bytes)

    async def newest_kept_seq(
        self, key: SessionKey, remove_count: int, now: float
    ) -> tuple[int, int] | None:
        async with self._connection() as connection:
            row = await connection.fetchrow(
                sql.NEWEST_KEPT_SEQ, key.app_name, key.user_id, key.session_id, remove_count, now
            )
        return None if row is None else (int(row[0]), int(row[1]))

    async def newest_events(
        self, key: SessionKey, count: int, now: float
    ) -> tuple[int, list[StoredEvent]] | None:
        async with self._connection() as connection:
            rows = await connection.fetch(
                sql.NEWEST_EVENTS, key.app_name, key.user_id, key.session_id, count, now
            )
        if not rows:
            return None
        found = [StoredEvent(row[1], row[2]) for row in rows if row[1] is not None]
        return int(rows[0][0]), found[::-1]

    async def remove_events(
        self,
        key: SessionKey,
        after_seq: int,
        expected_revision: int,
        state: StateDict | None,
        now: float,
    ) -> EventsRemoved | None:
        async with self._connection() as connection:
            row = await connection.fetchrow(
                sql.REMOVE_EVENTS,
                key.app_name,
                key.user_id,
                key.session_id,
                after_seq,
                expected_revision,
                now,
                state,
            )
        return None if row is None else EventsRemoved(int(row[0]), int(row[1]))

    async def pop_newest(
        self,
        key: SessionKey,
        count: int,
        expected_revision: int | None,
        max_bytes: int,
        now: float,
    ) -> Popped | None:
        statement = sql.POP_NEWEST
        values = {
            "app_name": key.app_name,
            "user_id": key.user_id,
            "session_id": key.session_id,
            "count": count,
            "now": now,
            "expected": expected_revision,
            "max_bytes": max_bytes,
        }
        try:
            async with self._connection() as connection:
                row = await connection.fetchrow(statement.text, *statement.arguments(values))
        except asyncpg.DataError:
            # An event stored before the value rules (app.core.json_rules) that
            # PostgreSQL's JSON does not parse: the service derives it all.
            found = await self.newest_events(key, count, now)
            if found is None:
                return None
            return Popped(found[0], found[1], None, None, changes_state=True)
        if row is None:
            return None
        revision, changes_state, state, after_revision, update_time, expire_time, labels = row[:7]
        app_state, user_state, texts, seqs, removed = row[7:]
        session = SessionRow(
            key.app_name,
            key.user_id,
            key.session_id,
            state,
            after_revision,
            update_time,
            expire_time,
            labels or {},
        )
        events = [StoredEvent(seq, data) for seq, data in zip(seqs or (), texts or (), strict=True)]
        snapshot = SessionSnapshot(session, app_state or {}, user_state or {}, "", 0)
        return Popped(revision, events, removed, snapshot, changes_state)

    async def _append_one(self, append: _Append) -> Sequence[Any]:
        """One append in one statement, waiting for its session if another
        transaction holds it: its row (revision or why not)."""
        row = await self._append_alone(append, sql.APPEND)
        return row[:4]

    async def _append_alone(
        self, append: _Append, statement: Statement, pool: asyncpg.Pool | None = None
    ) -> Sequence[Any]:
        try:
            async with PooledConnection(pool or self.pool, self.timeout) as connection:
                row: Sequence[Any] = await connection.fetchrow(
                    statement.text, *statement.arguments(append.values(_as_is))
                )
        except asyncpg.UniqueViolationError as error:
            raise AppendNotApplied("event id already stored") from error
        return row

    async def _append_batch(self, appends: list[_Append]) -> list[Sequence[Any] | None]:
        """Appends in one statement: their rows, in order; None for one whose
        session another transaction held (to be sent by itself, waiting).
        A lone append takes the single statement (a smaller plan)."""
        if len(appends) == 1:
            row = await self._append_alone(appends[0], sql.APPEND_UNLESS_HELD, self.batch_pool)
            return [None if row[4] else row[:4]]
        statement = sql.APPEND_BATCH
        # One array per parameter, an element per append.
        values = [append.values(json_codec.dumps_for_jsonb) for append in appends]
        pool = self.batch_pool if len(appends) <= KEPT_PLAN_ITEMS else self.pool
        async with PooledConnection(pool, self.timeout) as connection:
            rows = await connection.fetch(statement.text, *statement.columns(values))
        return [None if row[4] else row[:4] for row in rows]

    async def set_expiry(
        self, key: SessionKey, expiry: Expiry, expected_revision: int | None, now: float
    ) -> int | None:
        async with self._connection() as connection:
            revision = await connection.fetchval(
                sql.SET_EXPIRY,
                key.app_name,
                key.user_id,
                key.session_id,
                now,
                expiry.ttl_seconds,
                expiry.time_after(now),
                expected_revision,
            )
        return None if revision is None else int(revision)

    async def set_labels(
        self,
        key: SessionKey,
        labels: Labels,
        expiry: Expiry | None,
        expected_revision: int | None,
        now: float,
    ) -> int | None:
        async with self._connection() as connection:
            revision = await connection.fetchval(
                sql.SET_LABELS,
                key.app_name,
                key.user_id,
                key.session_id,
                now,
                labels or None,
                expiry is not None,
                None if expiry is None else expiry.ttl_seconds,
                None if expiry is None else expiry.time_after(now),
                expected_revision,
            )
        return None if revision is None else int(revision)

    async def find_event(self, key: SessionKey, event_id: str) -> StoredEvent | None:
        async with self._connection() as connection:
            row = await connection.fetchrow(
                sql.FIND_EVENT, key.app_name, key.user_id, key.session_id, event_id
            )
        return None if row is None else StoredEvent(row[0], row[1])

    async def find_events(
        self, key: SessionKey, event_ids: Sequence[str]
    ) -> dict[str, StoredEvent]:
        async with self._connection() as connection:
            rows = await connection.fetch(
                sql.FIND_EVENTS, key.app_name, key.user_id, key.session_id, list(event_ids)
            )
        return {row[0]: StoredEvent(row[1], row[2]) for row in rows}

    async def read_session(self, key: SessionKey, now: float) -> SessionRow | None:
        async with self._connection() as connection:
            return await _read_session(connection, key, sql.READ_SESSION, now)

    async def page_events(
        self,
        key: SessionKey,
        order: SortOrder,
        after_seq: int | None,
        after_timestamp: float | None,
        limit: int,
        max_bytes: int,
        now: float,
    ) -> tuple[list[StoredEvent], bool, int] | None:
        session = (key.app_name, key.user_id, key.session_id)
        async with self._connection() as connection:
            found = await _read_session(connection, key, sql.READ_SESSION, now)
            if found is None:
                return None
            sizes = await connection.fetch(
                sql.EVENT_SIZES[order], *session, after_timestamp, after_seq, limit + 1
            )
            chosen, more = events_within([(seq, size) for seq, size in sizes], limit, max_bytes)
            if not chosen:
                return [], more, found.revision
            rows = await connection.fetch(sql.EVENTS_BY_SEQ, *session, chosen)
        data = dict(rows)
        events = [StoredEvent(seq, data[seq]) for seq in chosen if seq in data]
        return events, more, found.revision

    async def read_app_state(self, app_name: str) -> StateDict:
        async with self._connection() as connection:
            return await self._app_state(connection, app_name)

    async def read_user_state(self, app_name: str, user_id: str) -> StateDict:
        async with self._connection() as connection:
            return await self._user_state(connection, app_name, user_id)

    # -- fork ----------------------------------------------------------------

    async def read_initial_state(self, key: SessionKey, now: float) -> StateDict | None:
        async with self._connection() as connection:
            row = await connection.fetchrow(
                sql.INITIAL_STATE, key.app_name, key.user_id, key.session_id, now
            )
        if row is None or not row[0]:
            return None
        state: StateDict = row[1]
        return state

    async def read_events(
        self, key: SessionKey, after_seq: int, up_to_seq: int, limit: int
    ) -> list[StoredEvent]:
        async with self._connection() as connection:
            rows = await connection.fetch(
                sql.EVENTS_BETWEEN,
                key.app_name,
                key.user_id,
                key.session_id,
                after_seq,
                up_to_seq,
                limit,
            )
        return [StoredEvent(seq, data) for seq, data in rows]

    async def fork_session(
        self,
        source: ForkSource,
        session_id: str,
        now: float,
        expiry: Expiry,
        *,
        forget_expired_memories: bool,
    ) -> ForkOutcome:
        async with self._transaction() as connection:
            return await forking.fork_session(
                _ForkStatements(connection),
                source,
                session_id,
                now,
                expiry,
                forget_expired_memories=forget_expired_memories,
            )

    @staticmethod
    async def _app_state(connection: asyncpg.Connection, app_name: str) -> StateDict:
        return dict(await connection.fetch(sql.READ_APP_STATE, app_name))

    @staticmethod
    async def _user_state(connection: asyncpg.Connection, app_name: str, user_id: str) -> StateDict:
        return dict(await connection.fetch(sql.READ_USER_STATE, app_name, user_id))

    # -- operations ----------------------------------------------------------

    async def check_ready(self) -> None:
        """Also refuses a server that cannot take writes (a standby, reached
        without target_session_attrs=read-write): not ready while no writable
        primary is reachable, as during a failover."""
        try:
            async with self._connection() as connection:
                if await connection.fetchval(sql.IS_READ_ONLY):
                    await discard(self.pool, connection)
                    raise DatabaseUnavailable(
                        "the database server is read-only (a standby): no primary is reachable"
                    )
                try:
                    revision = await connection.fetchval(sql.SCHEMA_REVISION)
                except asyncpg.UndefinedTableError:
                    revision = None
            migrations.require_revision_current(revision)
        except SchemaNotCurrent as error:
            raise DatabaseUnavailable(str(error)) from error
        except DatabaseUnavailable:
            raise
        except Exception as error:
            raise DatabaseUnavailable("the database is unreachable") from error

    async def replay_lag_seconds(self) -> float:
        """How far behind its primary this server's replay is (0 for a
        primary; infinity for a replica that never replayed a transaction)."""
        async with self._connection() as connection:
            return float(await connection.fetchval(sql.REPLAY_LAG))

    async def close(self) -> None:
        await self.pool.close()
        if self.batch_pool is not self.pool:
            await self.batch_pool.close()


async def _read_session(
    connection: asyncpg.Connection, key: SessionKey, statement: str, now: float
) -> SessionRow | None:
    row = await connection.fetchrow(statement, key.app_name, key.user_id, key.session_id, now)
    if row is None:
        return None
    return SessionRow(
        key.app_name, key.user_id, key.session_id, row[0], row[1], row[2], row[3], row[4] or {}
    )


@dataclass(frozen=True)
class _ForkStatements:
    """A fork's statements (`forking.ForkStatements`) on one connection."""

    connection: asyncpg.Connection

    async def lock_source(self, key: SessionKey, now: float) -> forking.LockedSource | None:
        found = await self.connection.fetchrow(sql.FORK_SOURCE, *_session_of(key), now)
        return None if found is None else forking.LockedSource(*found)

    async def event_exists(self, key: SessionKey, seq: int) -> bool:
        return bool(await self.connection.fetchval(sql.EVENT_AT_SEQ, *_session_of(key), seq))

    async def insert_fork(
        self,
        key: SessionKey,
        source: forking.LockedSource,
        state: StateDict,
        revision: int,
        now: float,
        expiry: Expiry,
        labels: Labels,
    ) -> bool:
        values = (state, source.initial_state, session_state_bytes(state), revision, now)
        created = await self.connection.fetchval(
            sql.INSERT_FORK,
            *_session_of(key),
            *values,
            expiry.time_after(now),
            expiry.ttl_seconds,
            labels or None,
        )
        return created is not None

    async def delete_if_expired(self, key: SessionKey, now: float, with_memories: bool) -> bool:
        return await _delete_if_expired(self.connection, key, now, with_memories)

    async def copy_events(
        self, source: SessionKey, session_id: str, after_seq: int, up_to_seq: int
    ) -> None:
        await self.connection.execute(
            sql.COPY_EVENTS, *_session_of(source), after_seq, up_to_seq, session_id
        )


def _session_of(key: SessionKey) -> tuple[str, str, str]:
    return key.app_name, key.user_id, key.session_id


async def _delete_if_expired(
    connection: asyncpg.Connection, key: SessionKey, now: float, with_memories: bool
) -> bool:
    """Deletes the session with its events if it is expired (inside the
    caller's transaction, which takes its id); False if it is not."""
    session = (key.app_name, key.user_id, key.session_id)
    if await connection.fetchval(sql.LOCK_EXPIRED_SESSION, *session, now) is None:
        return False
    await connection.execute(sql.DELETE_SESSION_EVENTS, *session)
    await connection.execute(sql.DELETE_SESSION, *session)
    if with_memories:
        await memory.delete_session_memories(connection, key)
    await tombstones.write(connection, [key], "expired", now)
    return True
