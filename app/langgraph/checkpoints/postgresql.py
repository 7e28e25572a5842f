"""LangGraph's checkpoints on PostgreSQL (asyncpg, on the store's pool): the
CheckpointStore of app.langgraph.checkpoints.store. Statements are written with
`:name` parameters (app.db.postgresql_statement), a thread's own from
app.langgraph.checkpoints.thread_sql, and rows are read by column name. Channel
values are written once per (channel, version) and read back by the versions
each checkpoint names; the metadata filter is JSONB containment
(metadata @> filter), as LangGraph's PostgresSaver has it."""

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from ...core.encryption import ValueCipher
from ...core.json_codec import dumps_for_jsonb
from ...db.database_errors import database_errors_as_domain_errors
from ...db.postgresql_statement import Statement
from ..dialects import POSTGRESQL
from ..expiry import LIVE, has_expired
from ..sealing import CHANNEL_VALUE, CHECKPOINT, WRITE, Sealing
from . import checkpoint_sql
from .domain import (
    AppCheckpointQuery,
    CheckpointOperation,
    CheckpointQuery,
    NewCheckpoint,
    NewWrites,
    PendingWrite,
    PruneStrategy,
    StoredCheckpoint,
    ThreadKey,
    ThreadListQuery,
    ThreadOwner,
    ThreadSummary,
    refuse_another_users_thread,
)
from .postgresql_batch import Prepared, one_statement_columns
from .rows import assemble, page_of
from .thread_sql import THREAD, ThreadSql

_THREADS = ThreadSql(POSTGRESQL)
_THREAD_EXPIRY = Statement.of(_THREADS.expiry)
_DELETE_IF_EXPIRED = Statement.of(_THREADS.delete_if_expired)
# Every write stamps its thread's row (the app's list of threads is in that
# order) and pushes its expiry out when it has one.
_INSERT_THREAD = Statement.of(_THREADS.insert)
_REFRESH_THREAD = Statement.of(_THREADS.refresh)
_THREAD_LIVE = Statement.of(_THREADS.live)
_THREAD_USER = Statement.of(_THREADS.user)
_LIVE_THREAD_USER = Statement.of(_THREADS.live_user)
_DELETE_THREAD = Statement.of(_THREADS.delete)
_COPY_THREAD = Statement.of(_THREADS.copy)
_COPY_ROWS = tuple(Statement.of(sql) for sql in _THREADS.copy_rows)
_ERASE_USER = Statement.of(_THREADS.erase_user)
_ERASE_APP = Statement.of(_THREADS.erase_app)
_SWEEP = Statement.of(_THREADS.sweep)
_THREAD_PAGES = {
    (of_user, after): Statement.of(_THREADS.page(of_user=of_user, after=after))
    for of_user in (False, True)
    for after in (False, True)
}

_IN_THREADS = "app_name = :app_name AND thread_id = ANY(:threads::text[])"

_INSERT_VALUES_SQL = """
INSERT INTO lg_channel_values
       (app_name, thread_id, checkpoint_ns, channel, version, value_type, value)
SELECT :app_name, :thread_id, :checkpoint_ns, v.channel, v.version, v.value_type, v.value
  FROM unnest(:channel::text[], :version::text[], :value_type::text[], :value::bytea[])
       AS v(channel, version, value_type, value)
ON CONFLICT DO NOTHING
"""
_INSERT_VALUES = Statement.of(_INSERT_VALUES_SQL)
_UPSERT_CHECKPOINT = Statement.of(checkpoint_sql.UPSERT_CHECKPOINT)
_WRITES_SELECT = """
INSERT INTO lg_writes
       (app_name, thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel,
        value_type, value)
SELECT :app_name, :thread_id, :checkpoint_ns, :checkpoint_id::text, w.task_id, w.task_path,
       w.idx, w.channel, w.value_type, w.value
  FROM unnest(:task_id::text[], :task_path::text[], :idx::int[], :channel::text[],
              :value_type::text[], :value::bytea[])
       AS w(task_id, task_path, idx, channel, value_type, value)"""
_WRITES_CONFLICT = """
ON CONFLICT (app_name, thread_id, checkpoint_ns, checkpoint_id, task_id, idx) """
_WRITES_REPLACED = """DO UPDATE SET task_path = EXCLUDED.task_path, channel = EXCLUDED.channel,
       value_type = EXCLUDED.value_type, value = EXCLUDED.value"""
_INSERT_WRITES = Statement.of(_WRITES_SELECT + _WRITES_CONFLICT + "DO NOTHING")
_UPSERT_WRITES = Statement.of(_WRITES_SELECT + _WRITES_CONFLICT + _WRITES_REPLACED)
# A step's write to a live thread as one statement, in no transaction of its
# own: one round trip, and the connection back in the pool at once. `live`
# stamps the thread's row and pushes its TTL out (`_REFRESH_THREAD`, on a
# live thread only), and each row is written only when the thread is live;
# the statement answers whether it was. A new or expired thread takes the
# transaction (`_open_thread`). Every CTE runs, read or not, in no set order:
# `live` updates (and so locks) the thread's row before any row is inserted
# (each insert reads it first), so that its lock is never taken after an
# insert that another writer of the thread waits on (a deadlock otherwise).
# The UPDATE's lock is FOR NO KEY UPDATE: the inserts' foreign-key checks
# (FOR KEY SHARE) do not wait on it.
_TO_LIVE_THREAD = f"""
WITH live AS ({_THREADS.refresh} AND {LIVE} RETURNING 1)"""
_IF_LIVE = "EXISTS (SELECT 1 FROM live)"
_PUT_TO_LIVE_THREAD = Statement.of(
    f"""{_TO_LIVE_THREAD},
     new_values AS (
{_INSERT_VALUES_SQL.replace("ON CONFLICT", f"WHERE {_IF_LIVE} ON CONFLICT")}),
     stored AS (
INSERT INTO lg_checkpoints
       (app_name, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id,
        checkpoint_type, checkpoint, channel_versions, metadata)
SELECT :app_name, :thread_id, :checkpoint_ns, :checkpoint_id::text, :parent::text,
       :run_id::text, :checkpoint_type::text, :checkpoint::bytea, :channel_versions::jsonb,
       :metadata::jsonb
 WHERE {_IF_LIVE}
{checkpoint_sql.ON_CHECKPOINT_CONFLICT})
SELECT {_IF_LIVE}
"""
)


def _writes_to_live_thread(conflict: str) -> Statement:
    return Statement.of(
        f"""{_TO_LIVE_THREAD},
     stored AS (
{_WRITES_SELECT} WHERE {_IF_LIVE}
{conflict})
SELECT {_IF_LIVE}
"""
    )


_INSERT_WRITES_TO_LIVE_THREAD = _writes_to_live_thread(_WRITES_CONFLICT + "DO NOTHING")
_UPSERT_WRITES_TO_LIVE_THREAD = _writes_to_live_thread(_WRITES_CONFLICT + _WRITES_REPLACED)


def _batch_writes(replace: bool) -> str:
    """The batch's writes that keep (or replace) a stored one, for a CTE."""
    conflict = _WRITES_REPLACED if replace else "DO NOTHING"
    return f"""
INSERT INTO lg_writes
       (app_name, thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel,
        value_type, value)
SELECT :app_name, :thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.task_path, w.idx,
       w.channel, w.value_type, w.value
  FROM unnest(:writes_ns::text[], :writes_checkpoint_id::text[], :writes_task_id::text[],
              :writes_task_path::text[], :writes_idx::int[], :writes_channel::text[],
              :writes_value_type::text[], :writes_value::bytea[], :writes_replace::boolean[])
       AS w(checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value_type, value,
            replace)
 WHERE {_IF_LIVE} AND {"" if replace else "NOT "}w.replace
{_WRITES_CONFLICT}{conflict}"""


# A thread's whole batch to a live thread as one statement, by the rule of
# `_PUT_TO_LIVE_THREAD` (app.langgraph.checkpoints.postgresql_batch gives its
# arrays): its puts' values and checkpoints and its writes.
_BATCH_TO_LIVE_THREAD = Statement.of(
    f"""{_TO_LIVE_THREAD},
     new_values AS (
INSERT INTO lg_channel_values
       (app_name, thread_id, checkpoint_ns, channel, version, value_type, value)
SELECT :app_name, :thread_id, v.checkpoint_ns, v.channel, v.version, v.value_type, v.value
  FROM unnest(:values_ns::text[], :values_channel::text[], :values_version::text[],
              :values_value_type::text[], :values_value::bytea[])
       AS v(checkpoint_ns, channel, version, value_type, value)
 WHERE {_IF_LIVE}
ON CONFLICT DO NOTHING),
     stored AS (
INSERT INTO lg_checkpoints
       (app_name, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id,
        checkpoint_type, checkpoint, channel_versions, metadata)
SELECT :app_name, :thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent, c.run_id,
       c.checkpoint_type, c.checkpoint, c.channel_versions::jsonb, c.metadata::jsonb
  FROM unnest(:checkpoints_ns::text[], :checkpoints_checkpoint_id::text[],
              :checkpoints_parent::text[], :checkpoints_run_id::text[],
              :checkpoints_checkpoint_type::text[], :checkpoints_checkpoint::bytea[],
              :checkpoints_versions::text[], :checkpoints_metadata::text[])
       AS c(checkpoint_ns, checkpoint_id, parent, run_id, checkpoint_type, checkpoint,
            channel_versions, metadata)
 WHERE {_IF_LIVE}
{checkpoint_sql.ON_CHECKPOINT_CONFLICT}),
     kept_writes AS ({_batch_writes(replace=False)}),
     replaced_writes AS ({_batch_writes(replace=True)})
SELECT {_IF_LIVE}
"""
)
_METADATA_CONTAINED = "(:metadata::jsonb IS NULL OR c.metadata @> :metadata::jsonb)"
_LIST = Statement.of(
    f"""
SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type,
       checkpoint, metadata, channel_versions
  FROM lg_checkpoints AS c
 WHERE {THREAD}
   AND (:checkpoint_ns::text IS NULL OR checkpoint_ns = :checkpoint_ns)
   AND (:checkpoint_id::text IS NULL OR checkpoint_id = :checkpoint_id)
   AND (:before::text IS NULL OR checkpoint_id < :before)
   AND (:after_id::text IS NULL OR (checkpoint_id, checkpoint_ns) < (:after_id, :after_ns::text))
   AND {_METADATA_CONTAINED}
 ORDER BY checkpoint_id DESC, checkpoint_ns DESC
 LIMIT :limit
"""
)
_APP_LIST = Statement.of(checkpoint_sql.app_list(POSTGRESQL, _METADATA_CONTAINED))
# A page's values and writes, of one thread or several: keys lead with the thread.
_VALUES_OF = Statement.of(
    """
SELECT v.thread_id, v.checkpoint_ns, v.channel, v.version, v.value_type, v.value
  FROM unnest(:thread_id::text[], :checkpoint_ns::text[], :channel::text[], :version::text[])
       AS k(thread_id, checkpoint_ns, channel, version)
  JOIN lg_channel_values AS v
    ON v.app_name = :app_name AND v.thread_id = k.thread_id
   AND v.checkpoint_ns = k.checkpoint_ns AND v.channel = k.channel AND v.version = k.version
"""
)
_WRITES_OF = Statement.of(
    """
SELECT w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.task_path, w.idx, w.channel,
       w.value_type, w.value
  FROM unnest(:thread_id::text[], :checkpoint_ns::text[], :checkpoint_id::text[])
       AS k(thread_id, checkpoint_ns, checkpoint_id)
  JOIN lg_writes AS w
    ON w.app_name = :app_name AND w.thread_id = k.thread_id
   AND w.checkpoint_ns = k.checkpoint_ns AND w.checkpoint_id = k.checkpoint_id
"""
)
_DELETE_THREADS = Statement.of(f"DELETE FROM lg_threads WHERE {_IN_THREADS}")
# The mark LangGraph's DeltaChannel leaves in metadata: pruning such a thread
# to its latest checkpoint would lose the history its values are rebuilt from.
_DELTA_THREADS = Statement.of(
    f"""
SELECT DISTINCT thread_id FROM lg_checkpoints
 WHERE {_IN_THREADS} AND metadata ? 'counters_since_delta_snapshot'
"""
)
_DELETE_OLDER_CHECKPOINTS = Statement.of(
    f"""
DELETE FROM lg_checkpoints AS c
 WHERE {_IN_THREADS}
   AND checkpoint_id < (SELECT max(checkpoint_id) FROM lg_checkpoints AS m
                         WHERE m.app_name = c.app_name AND m.thread_id = c.thread_id
                           AND m.checkpoint_ns = c.checkpoint_ns)
RETURNING thread_id, checkpoint_ns, checkpoint_id
"""
)
_DELETE_WRITES_OF = Statement.of(
    """
DELETE FROM lg_writes AS w
 USING unnest(:thread_id::text[], :checkpoint_ns::text[], :checkpoint_id::text[])
       AS k(thread_id, checkpoint_ns, checkpoint_id)
 WHERE w.app_name = :app_name AND w.thread_id = k.thread_id
   AND w.checkpoint_ns = k.checkpoint_ns AND w.checkpoint_id = k.checkpoint_id
"""
)
_UNLINK_MISSING_PARENTS = Statement.of(
    f"""
UPDATE lg_checkpoints AS c SET parent_checkpoint_id = NULL
 WHERE {_IN_THREADS} AND parent_checkpoint_id IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM lg_checkpoints AS p
                    WHERE p.app_name = c.app_name AND p.thread_id = c.thread_id
                      AND p.checkpoint_ns = c.checkpoint_ns
                      AND p.checkpoint_id = c.parent_checkpoint_id)
"""
)
_DELETE_UNUSED_VALUES = Statement.of(
    f"""
DELETE FROM lg_channel_values AS v
 WHERE {_IN_THREADS}
   AND NOT EXISTS (SELECT 1 FROM lg_checkpoints AS c
                    WHERE c.app_name = v.app_name AND c.thread_id = v.thread_id
                      AND c.checkpoint_ns = v.checkpoint_ns
                      AND c.channel_versions ->> v.channel = v.version)
"""
)
_DELETE_RUNS = Statement.of(
    """
DELETE FROM lg_checkpoints WHERE app_name = :app_name AND run_id = ANY(:run_ids::text[])
RETURNING thread_id, checkpoint_ns, checkpoint_id
"""
)


def _count(status: str) -> int:
    return int(status.rsplit(" ", 1)[1])


async def _execute(connection: asyncpg.Connection, statement: Statement, **values: Any) -> int:
    """How many rows the statement changed."""
    return _count(await connection.execute(statement.text, *statement.arguments(values)))


async def _fetch(
    connection: asyncpg.Connection, statement: Statement, **values: Any
) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await connection.fetch(
        statement.text, *statement.arguments(values)
    )
    return rows


def _columns(rows: Sequence[Mapping[str, Any]], *names: str) -> dict[str, list[Any]]:
    """The rows as an array per column, for a statement that unnests them."""
    return {name: [row[name] for row in rows] for name in names}


class PostgresCheckpoints:
    def __init__(
        self, pool: asyncpg.Pool, timeout: float, cipher: ValueCipher | None = None
    ) -> None:
        self.pool = pool
        self.timeout = timeout
        # Values sealed on write and opened on read (app.langgraph.sealing).
        self.sealing = Sealing(cipher)

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[asyncpg.Connection]:
        with database_errors_as_domain_errors():
            async with (
                self.pool.acquire(timeout=self.timeout) as connection,
                connection.transaction(),
            ):
                yield connection

    async def _open_thread(
        self, connection: asyncpg.Connection, key: ThreadKey, owner: ThreadOwner, now: float
    ) -> None:
        """Makes the thread (anew if it had expired) or stamps it and pushes
        its expiry out."""
        await self._make_or_refresh_thread(connection, key, owner, now)
        if owner.enforced:
            thread = {"app_name": key.app_name, "thread_id": key.thread_id}
            rows = await _fetch(connection, _THREAD_USER, **thread)
            refuse_another_users_thread(rows[0]["user_id"], owner.user_id)

    async def _make_or_refresh_thread(
        self, connection: asyncpg.Connection, key: ThreadKey, owner: ThreadOwner, now: float
    ) -> None:
        thread = {"app_name": key.app_name, "thread_id": key.thread_id}
        rows = await _fetch(connection, _THREAD_EXPIRY, **thread)
        found = rows[0] if rows else None
        if found is not None and has_expired(found["expire_time"], now):
            await _execute(connection, _DELETE_IF_EXPIRED, **thread, now=now)
            found = None
        if found is None:
            inserted = await _execute(
                connection,
                _INSERT_THREAD,
                **thread,
                now=now,
                user_id=owner.user_id,
                ttl=owner.ttl_seconds,
            )
            if inserted == 1:
                return
        await _execute(connection, _REFRESH_THREAD, **thread, now=now, ttl=owner.ttl_seconds)

    async def _write_to_live_thread(self, statement: Statement, **values: Any) -> bool:
        """Runs a `..._TO_LIVE_THREAD` statement on its own: whether the
        thread was live (and so the rows written)."""
        with database_errors_as_domain_errors():
            async with self.pool.acquire(timeout=self.timeout) as connection:
                live: bool = await connection.fetchval(statement.text, *statement.arguments(values))
        return live

    def _checkpoint_rows(
        self, key: ThreadKey, checkpoint: NewCheckpoint
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A put's values (an array per column) and its checkpoint's row, sealed."""
        values = checkpoint.new_values
        run_id = checkpoint.metadata.get("run_id")
        seal = self.sealing.seal_typed
        sealed = [seal(value.value.type, value.value.data, CHANNEL_VALUE) for value in values]
        checkpoint_type, checkpoint_data = seal(
            checkpoint.checkpoint.type, checkpoint.checkpoint.data, CHECKPOINT
        )
        rows = {
            "app_name": key.app_name,
            "thread_id": key.thread_id,
            "checkpoint_ns": checkpoint.checkpoint_ns,
            "channel": [value.channel for value in values],
            "version": [value.version for value in values],
            "value_type": [type_tag for type_tag, _ in sealed],
            "value": [data for _, data in sealed],
        }
        header = {
            "checkpoint_id": checkpoint.checkpoint_id,
            "parent": checkpoint.parent_checkpoint_id,
            "run_id": run_id if isinstance(run_id, str) else None,
            "checkpoint_type": checkpoint_type,
            "checkpoint": checkpoint_data,
            "channel_versions": checkpoint.channel_versions,
            "metadata": checkpoint.metadata,
        }
        return rows, header

    def _writes_rows(self, key: ThreadKey, writes: NewWrites) -> dict[str, Any]:
        """A task's writes as an array per column, sealed."""
        pending = writes.writes
        sealed = [self.sealing.seal_typed(w.value.type, w.value.data, WRITE) for w in pending]
        return {
            "app_name": key.app_name,
            "thread_id": key.thread_id,
            "checkpoint_ns": writes.checkpoint_ns,
            "checkpoint_id": writes.checkpoint_id,
            "task_id": [write.task_id for write in pending],
            "task_path": [write.task_path for write in pending],
            "idx": [write.idx for write in pending],
            "channel": [write.channel for write in pending],
            "value_type": [type_tag for type_tag, _ in sealed],
            "value": [data for _, data in sealed],
        }

    async def put_checkpoint(
        self, key: ThreadKey, owner: ThreadOwner, checkpoint: NewCheckpoint, now: float
    ) -> None:
        rows, header = self._checkpoint_rows(key, checkpoint)
        thread = {"now": now, "ttl": owner.ttl_seconds}
        # A write an end user's token makes checks the thread is theirs in its
        # transaction (below); any other goes in one statement when it can.
        if not owner.enforced and await self._write_to_live_thread(
            _PUT_TO_LIVE_THREAD, **rows, **header, **thread
        ):
            return
        async with self._transaction() as connection:
            await self._open_thread(connection, key, owner, now)
            await _put_in(connection, rows, header)

    async def put_writes(
        self,
        key: ThreadKey,
        owner: ThreadOwner,
        checkpoint_ns: str,
        checkpoint_id: str,
        writes: Sequence[PendingWrite],
        replace: bool,
        now: float,
    ) -> None:
        rows = self._writes_rows(
            key, NewWrites(checkpoint_ns, checkpoint_id, list(writes), replace)
        )
        to_live = _UPSERT_WRITES_TO_LIVE_THREAD if replace else _INSERT_WRITES_TO_LIVE_THREAD
        if not owner.enforced and await self._write_to_live_thread(
            to_live, **rows, now=now, ttl=owner.ttl_seconds
        ):
            return
        async with self._transaction() as connection:
            await self._open_thread(connection, key, owner, now)
            await _execute(connection, _UPSERT_WRITES if replace else _INSERT_WRITES, **rows)

    async def apply_operations(
        self,
        key: ThreadKey,
        owner: ThreadOwner,
        operations: Sequence[CheckpointOperation],
        now: float,
    ) -> None:
        # Sealed before the transaction: its connection is held no longer
        # than the statements take. The thread is opened (and its row
        # locked, when it has an expiry to push out) once for them all.
        prepared: list[Prepared] = [
            self._checkpoint_rows(key, operation)
            if isinstance(operation, NewCheckpoint)
            else (self._writes_rows(key, operation), operation.replace)
            for operation in operations
        ]
        # As put_checkpoint: one statement when the thread is live and no two
        # operations write one row; else the transaction, in order.
        columns = None if owner.enforced else one_statement_columns(prepared, dumps_for_jsonb)
        if columns is not None and await self._write_to_live_thread(
            _BATCH_TO_LIVE_THREAD,
            app_name=key.app_name,
            thread_id=key.thread_id,
            now=now,
            ttl=owner.ttl_seconds,
            **columns,
        ):
            return
        async with self._transaction() as connection:
            await self._open_thread(connection, key, owner, now)
            for rows, second in prepared:
                if isinstance(second, bool):
                    statement = _UPSERT_WRITES if second else _INSERT_WRITES
                    await _execute(connection, statement, **rows)
                else:
                    await _put_in(connection, rows, second)

    async def list_checkpoints(
        self, key: ThreadKey, query: CheckpointQuery, budget: int, now: float
    ) -> tuple[list[StoredCheckpoint], bool]:
        thread = {"app_name": key.app_name, "thread_id": key.thread_id}
        async with self._transaction() as connection:
            if not await _fetch(connection, _THREAD_LIVE, **thread, now=now):
                return [], False
            after_id, after_ns = query.after or (None, None)
            rows = await _fetch(
                connection,
                _LIST,
                **thread,
                checkpoint_ns=query.checkpoint_ns,
                checkpoint_id=query.checkpoint_id,
                before=query.before,
                after_id=after_id,
                after_ns=after_ns,
                metadata=query.metadata or None,
                limit=query.limit + 1,
            )
            return await self._page(connection, key.app_name, rows, query.limit, budget)

    async def list_app_checkpoints(
        self, app_name: str, query: AppCheckpointQuery, budget: int, now: float
    ) -> tuple[list[StoredCheckpoint], bool]:
        after_id, after_thread, after_ns = query.after or (None, None, None)
        async with self._transaction() as connection:
            rows = await _fetch(
                connection,
                _APP_LIST,
                app_name=app_name,
                now=now,
                user_id=query.user_id,
                checkpoint_ns=query.checkpoint_ns,
                before=query.before,
                after_id=after_id,
                after_thread=after_thread,
                after_ns=after_ns,
                metadata=query.metadata or None,
                limit=query.limit + 1,
            )
            return await self._page(connection, app_name, rows, query.limit, budget)

    async def _page(
        self,
        connection: asyncpg.Connection,
        app_name: str,
        rows: list[asyncpg.Record],
        limit: int,
        budget: int,
    ) -> tuple[list[StoredCheckpoint], bool]:
        """A list's page from its checkpoint rows: those that fit, with their
        values and writes, read in the caller's transaction."""
        kept, more = page_of(rows, limit, budget)
        if not kept:
            return [], False
        wanted = [
            {
                "thread_id": row["thread_id"],
                "checkpoint_ns": row["checkpoint_ns"],
                "channel": channel,
                "version": version,
            }
            for row in kept
            for channel, version in row["channel_versions"].items()
        ]
        value_rows = (
            await _fetch(
                connection,
                _VALUES_OF,
                app_name=app_name,
                **_columns(wanted, "thread_id", "checkpoint_ns", "channel", "version"),
            )
            if wanted
            else []
        )
        write_rows = await _fetch(
            connection,
            _WRITES_OF,
            app_name=app_name,
            **_columns(kept, "thread_id", "checkpoint_ns", "checkpoint_id"),
        )
        return assemble(kept, value_rows, write_rows, self.sealing), more

    async def list_threads(
        self, app_name: str, query: ThreadListQuery, now: float
    ) -> tuple[list[ThreadSummary], bool]:
        statement = _THREAD_PAGES[(query.user_id is not None, query.after is not None)]
        given: dict[str, Any] = {"user_id": query.user_id} if query.user_id is not None else {}
        if query.after is not None:
            given.update(after_time=query.after[0], after_thread=query.after[1])
        with database_errors_as_domain_errors():
            async with self.pool.acquire(timeout=self.timeout) as connection:
                rows = await _fetch(
                    connection,
                    statement,
                    app_name=app_name,
                    now=now,
                    limit=query.limit + 1,
                    **given,
                )
        return [ThreadSummary(**row) for row in rows[: query.limit]], len(rows) > query.limit

    async def thread_user(self, key: ThreadKey, now: float) -> str | None:
        async with self._transaction() as connection:
            rows = await _fetch(
                connection,
                _LIVE_THREAD_USER,
                app_name=key.app_name,
                thread_id=key.thread_id,
                now=now,
            )
        return str(rows[0]["user_id"]) if rows else None

    async def delete_thread(self, key: ThreadKey) -> bool:
        async with self._transaction() as connection:
            deleted = await _execute(
                connection, _DELETE_THREAD, app_name=key.app_name, thread_id=key.thread_id
            )
            return deleted > 0

    async def copy_thread(self, source: ThreadKey, target: ThreadKey, now: float) -> str:
        thread = {"app_name": source.app_name, "thread_id": source.thread_id}
        async with self._transaction() as connection:
            if not await _fetch(connection, _THREAD_LIVE, **thread, now=now):
                return "source_missing"
            await _execute(
                connection,
                _DELETE_IF_EXPIRED,
                app_name=target.app_name,
                thread_id=target.thread_id,
                now=now,
            )
            copied = await _execute(
                connection,
                _COPY_THREAD,
                **thread,
                target=target.thread_id,
                target_app=target.app_name,
                now=now,
            )
            if copied == 0:
                return "target_exists"
            for statement in _COPY_ROWS:
                await _execute(
                    connection,
                    statement,
                    **thread,
                    target=target.thread_id,
                    target_app=target.app_name,
                )
        return "copied"

    async def prune(
        self, app_name: str, thread_ids: Sequence[str], strategy: PruneStrategy, now: float
    ) -> list[str]:
        threads = {"app_name": app_name, "threads": sorted(set(thread_ids))}
        async with self._transaction() as connection:
            if strategy == "delete":
                await _execute(connection, _DELETE_THREADS, **threads)
                return []
            delta = await _fetch(connection, _DELTA_THREADS, **threads)
            if delta:
                return sorted(row["thread_id"] for row in delta)
            deleted = await _fetch(connection, _DELETE_OLDER_CHECKPOINTS, **threads)
            await _after_deleting(connection, app_name, deleted)
        return []

    async def delete_runs(self, app_name: str, run_ids: Sequence[str]) -> int:
        async with self._transaction() as connection:
            deleted = await _fetch(
                connection, _DELETE_RUNS, app_name=app_name, run_ids=sorted(set(run_ids))
            )
            await _after_deleting(connection, app_name, deleted)
        return len(deleted)

    async def sweep_expired(self, now: float, batch: int) -> int:
        swept = 0
        while True:
            async with self._transaction() as connection:
                deleted = await _execute(connection, _SWEEP, now=now, batch=batch)
            swept += deleted
            if deleted < batch:
                return swept


async def _put_in(
    connection: asyncpg.Connection, rows: dict[str, Any], header: dict[str, Any]
) -> None:
    """A checkpoint's new values and its row, in the caller's transaction."""
    if rows["channel"]:
        await _execute(connection, _INSERT_VALUES, **rows)
    where = {name: rows[name] for name in ("app_name", "thread_id", "checkpoint_ns")}
    await _execute(connection, _UPSERT_CHECKPOINT, **where, **header)


async def _after_deleting(
    connection: asyncpg.Connection, app_name: str, deleted: Sequence[asyncpg.Record]
) -> None:
    """The writes of deleted checkpoints, parent links to them and the values
    no checkpoint has any more go too."""
    if not deleted:
        return
    await _execute(
        connection,
        _DELETE_WRITES_OF,
        app_name=app_name,
        **_columns(deleted, "thread_id", "checkpoint_ns", "checkpoint_id"),
    )
    threads = {"app_name": app_name, "threads": sorted({row["thread_id"] for row in deleted})}
    await _execute(connection, _UNLINK_MISSING_PARENTS, **threads)
    await _execute(connection, _DELETE_UNUSED_VALUES, **threads)


async def erase_threads(connection: asyncpg.Connection, app_name: str, user_id: str | None) -> int:
    """Erased with the rest of the user (or app, when None) in the caller's
    transaction (app.lifecycle.erasure)."""
    if user_id is None:
        return await _execute(connection, _ERASE_APP, app_name=app_name)
    return await _execute(connection, _ERASE_USER, app_name=app_name, user_id=user_id)
