"""The PostgreSQL store: one SQLAlchemy pool (asyncpg connections) per
process, serving every request.

The append and the session read, the two statements of every agent turn,
are sent on the pool's asyncpg connection directly, without SQLAlchemy's
execution layer: measured here, the same append statement cost 0.71 ms of
client CPU through SQLAlchemy's async layer and 0.27 ms through asyncpg.
Lending the connection costs what asyncpg's own pool costs
(`bench/pool_choice.py`: 37.2 against 36.8 us CPU per statement), so one
pool, one connection limit and one pool gauge cover both ways in.
Everything else runs through SQLAlchemy Core (`SqlStore`).
"""

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import asyncpg
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.util import await_only, greenlet_spawn

from .. import json_codec
from ..domain import AppendNotApplied, NewEvent, SessionKey, SessionRow, SessionSnapshot
from .database_errors import database_errors_as_domain_errors, keeps_connection
from .repository import entry_sizes, session_state_bytes, state_too_large
from .sql_store import SqlStore

# One statement, one round trip, in autocommit: the session row is locked and
# bumped first, every other write joins on its result, so a missing or stale
# session writes nothing; state merges happen inside PostgreSQL (`||` for the
# session document, one row per app/user key upserted in key order so that
# writers of overlapping keys cannot deadlock).
#
# Size limits ($13): a delta that would take a scope past it bumps nothing, so
# writes nothing, and the sizes come back to say which scope. App and user
# keys carry their size ($14, $15: key -> bytes, measured by the caller), so
# only the keys written are read, and a scope is summed only when the delta
# makes it grow. Those reads see the rows committed when the statement starts:
# appends racing to grow one scope can each pass the limit by their own
# growth, never more. A session keeps an upper bound of its state's size
# (state_bytes), raised by $16 (twice the delta's compact JSON: JSONB prints
# more spaces); the state is measured, and the bound set exact, only when the
# bound would pass the limit.
_APPEND = """
WITH app_delta AS (
    SELECT d.key, d.value, ($14::jsonb ->> d.key)::bigint AS size
      FROM jsonb_each($10::jsonb) AS d
), user_delta AS (
    SELECT d.key, d.value, ($15::jsonb ->> d.key)::bigint AS size
      FROM jsonb_each($11::jsonb) AS d
), growth AS (
    -- One index lookup per key written (a join here was planned as a scan of
    -- the whole scope).
    SELECT (SELECT coalesce(sum(n.size - coalesce(
                     (SELECT a.size FROM app_states AS a
                       WHERE a.app_name = $1 AND a.key = n.key), 0)), 0)
              FROM app_delta AS n) AS app_bytes,
           (SELECT coalesce(sum(n.size - coalesce(
                     (SELECT u.size FROM user_states AS u
                       WHERE u.app_name = $1 AND u.user_id = $2 AND u.key = n.key), 0)), 0)
              FROM user_delta AS n) AS user_bytes
), shared_bytes AS (
    SELECT CASE WHEN g.app_bytes <= 0 THEN 0 ELSE g.app_bytes +
             (SELECT coalesce(sum(a.size), 0) FROM app_states AS a WHERE a.app_name = $1)
           END AS app_bytes,
           CASE WHEN g.user_bytes <= 0 THEN 0 ELSE g.user_bytes +
             (SELECT coalesce(sum(u.size), 0) FROM user_states AS u
               WHERE u.app_name = $1 AND u.user_id = $2)
           END AS user_bytes
      FROM growth AS g
), bumped AS (
    UPDATE sessions
       SET state = state || $4::jsonb, revision = revision + 1, update_time = $5,
           state_bytes = CASE WHEN $16 = 0 OR state_bytes + $16 <= $13
                              THEN state_bytes + $16
                              ELSE octet_length((state || $4::jsonb)::text) END
     WHERE app_name = $1 AND user_id = $2 AND id = $3
       AND ($12::bigint IS NULL OR revision = $12::bigint)
       AND CASE WHEN $16 = 0 OR state_bytes + $16 <= $13 THEN true
                ELSE octet_length((state || $4::jsonb)::text) <= $13 END
       AND (SELECT app_bytes <= $13 AND user_bytes <= $13 FROM shared_bytes)
 RETURNING revision
), stored AS (
    INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, author,
                        timestamp, data)
    SELECT $1, $2, $3, revision, $6, $7, $8, $5, $9 FROM bumped
 RETURNING seq
), app_written AS (
    INSERT INTO app_states (app_name, key, value, size)
    SELECT $1, delta.key, delta.value, delta.size
      FROM bumped, app_delta AS delta
     ORDER BY delta.key
    ON CONFLICT (app_name, key) DO UPDATE SET value = EXCLUDED.value, size = EXCLUDED.size
), user_written AS (
    INSERT INTO user_states (app_name, user_id, key, value, size)
    SELECT $1, $2, delta.key, delta.value, delta.size
      FROM bumped, user_delta AS delta
     ORDER BY delta.key
    ON CONFLICT (app_name, user_id, key) DO UPDATE SET value = EXCLUDED.value, size = EXCLUDED.size
)
SELECT stored.seq, shared.app_bytes, shared.user_bytes,
       CASE WHEN stored.seq IS NOT NULL OR $4::jsonb = '{}'::jsonb THEN 0 ELSE
         (SELECT octet_length((s.state || $4::jsonb)::text) FROM sessions AS s
           WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3) END
  FROM shared_bytes AS shared LEFT JOIN stored ON true
"""

# One round trip for a whole session read; event texts are joined by the
# database, and only events up to the revision read with the session row are
# taken, so events, state and ETag describe one moment. Their size is read
# first (from the TOAST pointers, without reading the texts): when it passes
# $6 the texts are not joined at all, so no read can ask for a gigabyte.
_SNAPSHOT = """
SELECT s.state, s.revision, s.update_time,
       (SELECT jsonb_object_agg(a.key, a.value) FROM app_states AS a
         WHERE a.app_name = $1) AS app_state,
       (SELECT jsonb_object_agg(u.key, u.value) FROM user_states AS u
         WHERE u.app_name = $1 AND u.user_id = $2) AS user_state,
       sized.bytes,
       CASE WHEN sized.bytes <= $6 THEN
       (SELECT string_agg(recent.data, ',' ORDER BY recent.seq)
          FROM (SELECT e.seq, e.data FROM events AS e
                 WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3
                   AND e.seq <= s.revision
                   AND ($4::float8 IS NULL OR e.timestamp >= $4::float8)
                 ORDER BY e.seq DESC
                 LIMIT $5::bigint) AS recent) END AS events
  FROM sessions AS s,
       LATERAL (SELECT coalesce(sum(octet_length(recent.data)), 0) AS bytes
                  FROM (SELECT e.data FROM events AS e
                         WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3
                           AND e.seq <= s.revision
                           AND ($4::float8 IS NULL OR e.timestamp >= $4::float8)
                         ORDER BY e.seq DESC
                         LIMIT $5::bigint) AS recent) AS sized
 WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3
"""

T = TypeVar("T")


class PostgresStore(SqlStore):
    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        """Every statement by itself (autocommit), which saves the BEGIN and
        COMMIT round trips; the reads are written to be consistent alone."""
        with database_errors_as_domain_errors():
            async with self.engine.connect() as connection:
                await connection.execution_options(isolation_level="AUTOCOMMIT")
                yield connection

    async def _run(self, statement: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """Runs `statement` on a pooled connection as asyncpg's, in autocommit.
        Checkout, statement and check-in share one greenlet (SQLAlchemy's pool
        is synchronous code): a greenlet each cost 20-30 us more per request.
        The pool's timeout bounds the wait, the connection's command timeout
        the statement (`engine.py`)."""

        def on_lent_connection() -> T:
            lent = self.engine.sync_engine.raw_connection()
            try:
                connection = lent.driver_connection
                assert isinstance(connection, asyncpg.Connection)
                return await_only(statement(connection))
            except BaseException as error:
                # A connection lost, timed out or abandoned mid-statement is
                # closed here, not lent to the next request.
                if not keeps_connection(error):
                    lent.invalidate()
                raise
            finally:
                # No transaction was opened on it: no round trip to give it back.
                lent.close()

        with database_errors_as_domain_errors():
            return await greenlet_spawn(on_lent_connection)

    async def append_event(
        self, key: SessionKey, event: NewEvent, expected_revision: int | None, max_state_bytes: int
    ) -> int:
        delta = event.delta
        try:
            row: Any = await self._run(
                lambda connection: connection.fetchrow(
                    _APPEND,
                    key.app_name,
                    key.user_id,
                    key.session_id,
                    json_codec.dumps_for_jsonb(delta.session),
                    event.timestamp,
                    event.id,
                    event.invocation_id,
                    event.author,
                    event.data,
                    json_codec.dumps_for_jsonb(delta.app),
                    json_codec.dumps_for_jsonb(delta.user),
                    expected_revision,
                    max_state_bytes,
                    json_codec.dumps_for_jsonb(entry_sizes(delta.app)),
                    json_codec.dumps_for_jsonb(entry_sizes(delta.user)),
                    2 * session_state_bytes(delta.session) if delta.session else 0,
                )
            )
        except asyncpg.UniqueViolationError as error:
            raise AppendNotApplied("event id already stored") from error
        revision, app_bytes, user_bytes, session_bytes = row
        if revision is not None:
            return int(revision)
        for scope, size in (("app", app_bytes), ("user", user_bytes), ("session", session_bytes)):
            if size is not None and size > max_state_bytes:
                raise AppendNotApplied(
                    "state too large", state_error=state_too_large(scope, size, max_state_bytes)
                )
        raise AppendNotApplied("session missing or stale")

    async def read_snapshot(
        self,
        key: SessionKey,
        limit: int | None,
        after_timestamp: float | None,
        max_events_bytes: int,
    ) -> SessionSnapshot | None:
        row = await self._run(
            lambda connection: connection.fetchrow(
                _SNAPSHOT,
                key.app_name,
                key.user_id,
                key.session_id,
                after_timestamp,
                limit,
                max_events_bytes,
            )
        )
        if row is None:
            return None
        state, revision, update_time, app_state, user_state, events_bytes, events_json = row
        session = SessionRow(
            key.app_name, key.user_id, key.session_id, state, revision, update_time
        )
        if events_bytes <= max_events_bytes:
            events_json = events_json or ""
        return SessionSnapshot(
            session, app_state or {}, user_state or {}, events_json, int(events_bytes)
        )
