"""The appends' PostgreSQL storage: one append, one request's several events,
and group commit (`append_batches.AppendBatcher`: appends that arrive while
earlier ones are at the database go together in one statement, on
connections of their own that keep their plans). The statements are
`postgresql_statements.APPEND*`."""

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from ..core import json_codec
from ..db.database_errors import as_domain_error, is_database_unavailable
from ..db.postgresql_connections import PooledConnection, PostgresConnections, use_json_codecs
from ..db.postgresql_statement import Statement
from . import postgresql_statements as sql
from .append_batches import AppendBatcher
from .domain import AppendNotApplied, Expiry, NewEvent, SessionKey
from .labels import Labels
from .postgresql_statements import session_values
from .state import ScopedDelta, StateDict
from .state_sizes import entry_sizes, session_state_bytes, state_past_limit

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


async def plan_appends_once(connection: asyncpg.Connection) -> None:
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


def shared_change(
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
            **shared_change(self.key, self.delta, self.max_state_bytes, encode_json),
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

    @property
    def writes_shared(self) -> bool:
        return writes_shared(self.change.delta)

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
        **change.values(as_is),
        "event_ids": [event.id for event in events],
        "invocation_ids": [event.invocation_id for event in events],
        "authors": [event.author for event in events],
        "event_times": [event.timestamp for event in events],
        "event_data": [event.data for event in events],
    }


def writes_shared(delta: ScopedDelta) -> bool:
    """Whether a write's delta holds app or user keys (the statement's form)."""
    return bool(delta.app or delta.user)


def as_is(value: Any) -> Any:
    return value


def _applied_revision(row: asyncpg.Record, max_state_bytes: int) -> int:
    """The revision an append statement's row reports; AppendNotApplied
    (saying which scope, when one would pass the limit) when it wrote nothing."""
    revision = row["revision"]
    if revision is not None:
        return int(revision)
    too_large = state_past_limit(
        max_state_bytes,
        app=row["app_bytes"],
        user=row["user_bytes"],
        session=row["session_bytes"],
    )
    if too_large is not None:
        raise AppendNotApplied("state too large", state_error=too_large)
    raise AppendNotApplied("session missing or stale")


def _runs_singly(error: Exception) -> bool:
    """Whether a batch's error may be one append's doing (an event id stored
    meanwhile, a deadlock with another process's batch): each is then run by
    itself. A database that cannot serve fails them all."""
    return isinstance(error, asyncpg.PostgresError) and not is_database_unavailable(error)


class PostgresAppends(PostgresConnections):
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
        change = append.change
        statement = sql.APPEND.writing(append.writes_shared)
        try:
            async with self._transaction() as connection:
                row = await connection.fetchrow(
                    statement.text, *statement.arguments(append.values(as_is))
                )
                revision = _applied_revision(row, change.max_state_bytes)
                values = session_values(
                    change.key,
                    now=change.now,
                    labels=labels or None,
                    replace_expiry=False,
                    ttl_seconds=None,
                    expire_time=None,
                    expected=revision,
                )
                await connection.execute(sql.SET_LABELS.text, *sql.SET_LABELS.arguments(values))
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
        statement = sql.APPEND_MANY.writing(writes_shared(delta))
        try:
            async with self._connection() as connection:
                row = await connection.fetchrow(
                    statement.text, *statement.arguments(_many_values(change, events))
                )
        except asyncpg.UniqueViolationError as error:
            raise AppendNotApplied("event id already stored") from error
        return _applied_revision(row, max_state_bytes)

    async def _append_one(self, append: _Append) -> asyncpg.Record:
        """One append in one statement, waiting for its session if another
        transaction holds it: its row (revision or why not)."""
        return await self._append_alone(append, sql.APPEND.writing(append.writes_shared))

    async def _append_alone(
        self, append: _Append, statement: Statement, pool: asyncpg.Pool | None = None
    ) -> asyncpg.Record:
        try:
            async with PooledConnection(pool or self.pool, self.timeout) as connection:
                row: asyncpg.Record = await connection.fetchrow(
                    statement.text, *statement.arguments(append.values(as_is))
                )
        except asyncpg.UniqueViolationError as error:
            raise AppendNotApplied("event id already stored") from error
        return row

    async def _append_batch(self, appends: list[_Append]) -> list[asyncpg.Record | None]:
        """Appends in one statement: their rows, in order; None for one whose
        session another transaction held (to be sent by itself, waiting).
        A lone append takes the single statement (a smaller plan)."""
        if len(appends) == 1:
            statement = sql.APPEND_UNLESS_HELD.writing(appends[0].writes_shared)
            row = await self._append_alone(appends[0], statement, self.batch_pool)
            return [None if row["held_elsewhere"] else row]
        statement = sql.APPEND_BATCH.writing(any(append.writes_shared for append in appends))
        # One array per parameter, an element per append.
        values = [append.values(json_codec.dumps_for_jsonb) for append in appends]
        pool = self.batch_pool if len(appends) <= KEPT_PLAN_ITEMS else self.pool
        async with PooledConnection(pool, self.timeout) as connection:
            rows = await connection.fetch(statement.text, *statement.columns(values))
        return [None if row["held_elsewhere"] else row for row in rows]
