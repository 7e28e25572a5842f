"""LangGraph's checkpoints on PostgreSQL (asyncpg, on the store's pool): the
CheckpointStore of app.langgraph.checkpoints.store. Channel values are written once per
(channel, version) and read back by the versions each checkpoint names; the
metadata filter is JSONB containment (metadata @> filter), as LangGraph's
PostgresSaver has it."""

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import asyncpg

from ...db.database_errors import database_errors_as_domain_errors
from .domain import (
    CheckpointQuery,
    NewCheckpoint,
    PendingWrite,
    PruneStrategy,
    StoredCheckpoint,
    ThreadKey,
    ThreadOwner,
)
from .rows import assemble, page_of

_LIVE = "(expire_time IS NULL OR expire_time > $3)"

# An expired thread not swept yet is deleted before a write makes it anew.
_DELETE_IF_EXPIRED = """
DELETE FROM lg_threads
 WHERE app_name = $1 AND thread_id = $2 AND expire_time IS NOT NULL AND expire_time <= $3
"""
_THREAD_EXPIRY = (
    "SELECT expire_time, ttl_seconds FROM lg_threads WHERE app_name = $1 AND thread_id = $2"
)
# A thread's row is written only when it is new or has an expiry to push out:
# the writes of a thread without a TTL never wait for each other on it.
_INSERT_THREAD = """
INSERT INTO lg_threads
       (app_name, thread_id, user_id, create_time, update_time, expire_time, ttl_seconds)
VALUES ($1, $2, $4, $3, $3, $3 + $5::float8, $5::float8)
ON CONFLICT (app_name, thread_id) DO NOTHING
"""
_REFRESH_THREAD = """
UPDATE lg_threads
   SET update_time = $3,
       ttl_seconds = coalesce($4::float8, ttl_seconds),
       expire_time = $3 + coalesce($4::float8, ttl_seconds)
 WHERE app_name = $1 AND thread_id = $2 AND ($4::float8 IS NOT NULL OR ttl_seconds IS NOT NULL)
"""
_INSERT_VALUES = """
INSERT INTO lg_channel_values
       (app_name, thread_id, checkpoint_ns, channel, version, value_type, value)
SELECT $1, $2, $3, v.channel, v.version, v.value_type, v.value
  FROM unnest($4::text[], $5::text[], $6::text[], $7::bytea[])
       AS v(channel, version, value_type, value)
ON CONFLICT DO NOTHING
"""
_UPSERT_CHECKPOINT = """
INSERT INTO lg_checkpoints
       (app_name, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id,
        checkpoint_type, checkpoint, channel_versions, metadata)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (app_name, thread_id, checkpoint_ns, checkpoint_id) DO UPDATE
   SET parent_checkpoint_id = EXCLUDED.parent_checkpoint_id, run_id = EXCLUDED.run_id,
       checkpoint_type = EXCLUDED.checkpoint_type, checkpoint = EXCLUDED.checkpoint,
       channel_versions = EXCLUDED.channel_versions, metadata = EXCLUDED.metadata
"""
_WRITES_FROM_ARRAYS = """
INSERT INTO lg_writes
       (app_name, thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel,
        value_type, value)
SELECT $1, $2, $3, $4, w.task_id, w.task_path, w.idx, w.channel, w.value_type, w.value
  FROM unnest($5::text[], $6::text[], $7::int[], $8::text[], $9::text[], $10::bytea[])
       AS w(task_id, task_path, idx, channel, value_type, value)
ON CONFLICT (app_name, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
"""
_INSERT_WRITES = _WRITES_FROM_ARRAYS + "DO NOTHING"
_UPSERT_WRITES = (
    _WRITES_FROM_ARRAYS
    + """DO UPDATE SET task_path = EXCLUDED.task_path, channel = EXCLUDED.channel,
       value_type = EXCLUDED.value_type, value = EXCLUDED.value"""
)
_THREAD_LIVE = f"SELECT 1 FROM lg_threads WHERE app_name = $1 AND thread_id = $2 AND {_LIVE}"
_LIST = """
SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type, checkpoint,
       metadata, channel_versions
  FROM lg_checkpoints AS c
 WHERE app_name = $1 AND thread_id = $2
   AND ($3::text IS NULL OR checkpoint_ns = $3)
   AND ($4::text IS NULL OR checkpoint_id = $4)
   AND ($5::text IS NULL OR checkpoint_id < $5)
   AND ($6::text IS NULL OR (checkpoint_id, checkpoint_ns) < ($6, $7::text))
   AND ($8::jsonb IS NULL OR c.metadata @> $8::jsonb)
 ORDER BY checkpoint_id DESC, checkpoint_ns DESC
 LIMIT $9
"""
_VALUES_OF = """
SELECT v.checkpoint_ns, v.channel, v.version, v.value_type, v.value
  FROM unnest($3::text[], $4::text[], $5::text[]) AS k(checkpoint_ns, channel, version)
  JOIN lg_channel_values AS v
    ON v.app_name = $1 AND v.thread_id = $2 AND v.checkpoint_ns = k.checkpoint_ns
   AND v.channel = k.channel AND v.version = k.version
"""
_WRITES_OF = """
SELECT w.checkpoint_ns, w.checkpoint_id, w.task_id, w.task_path, w.idx, w.channel,
       w.value_type, w.value
  FROM unnest($3::text[], $4::text[]) AS k(checkpoint_ns, checkpoint_id)
  JOIN lg_writes AS w
    ON w.app_name = $1 AND w.thread_id = $2 AND w.checkpoint_ns = k.checkpoint_ns
   AND w.checkpoint_id = k.checkpoint_id
"""
_DELETE_THREAD = "DELETE FROM lg_threads WHERE app_name = $1 AND thread_id = $2"
_DELETE_THREADS = "DELETE FROM lg_threads WHERE app_name = $1 AND thread_id = ANY($2::text[])"
_COPY_THREAD = """
INSERT INTO lg_threads
       (app_name, thread_id, user_id, create_time, update_time, expire_time, ttl_seconds)
SELECT $5, $4, user_id, $3, $3, $3 + ttl_seconds, ttl_seconds
  FROM lg_threads WHERE app_name = $1 AND thread_id = $2
ON CONFLICT DO NOTHING
"""
_COPY_ROWS = (
    """
INSERT INTO lg_checkpoints
SELECT $4, $3, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id,
       checkpoint_type, checkpoint, channel_versions, metadata
  FROM lg_checkpoints WHERE app_name = $1 AND thread_id = $2
""",
    """
INSERT INTO lg_channel_values
SELECT $4, $3, checkpoint_ns, channel, version, value_type, value
  FROM lg_channel_values WHERE app_name = $1 AND thread_id = $2
""",
    """
INSERT INTO lg_writes
SELECT $4, $3, checkpoint_ns, checkpoint_id, task_id, idx, task_path, channel,
       value_type, value
  FROM lg_writes WHERE app_name = $1 AND thread_id = $2
""",
)
# The mark LangGraph's DeltaChannel leaves in metadata: pruning such a thread
# to its latest checkpoint would lose the history its values are rebuilt from.
_DELTA_THREADS = """
SELECT DISTINCT thread_id FROM lg_checkpoints
 WHERE app_name = $1 AND thread_id = ANY($2::text[])
   AND metadata ? 'counters_since_delta_snapshot'
"""
_DELETE_OLDER_CHECKPOINTS = """
DELETE FROM lg_checkpoints AS c
 WHERE app_name = $1 AND thread_id = ANY($2::text[])
   AND checkpoint_id < (SELECT max(checkpoint_id) FROM lg_checkpoints AS m
                         WHERE m.app_name = c.app_name AND m.thread_id = c.thread_id
                           AND m.checkpoint_ns = c.checkpoint_ns)
RETURNING thread_id, checkpoint_ns, checkpoint_id
"""
_DELETE_WRITES_OF = """
DELETE FROM lg_writes AS w
 USING unnest($2::text[], $3::text[], $4::text[]) AS k(thread_id, checkpoint_ns, checkpoint_id)
 WHERE w.app_name = $1 AND w.thread_id = k.thread_id AND w.checkpoint_ns = k.checkpoint_ns
   AND w.checkpoint_id = k.checkpoint_id
"""
_UNLINK_MISSING_PARENTS = """
UPDATE lg_checkpoints AS c SET parent_checkpoint_id = NULL
 WHERE app_name = $1 AND thread_id = ANY($2::text[]) AND parent_checkpoint_id IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM lg_checkpoints AS p
                    WHERE p.app_name = c.app_name AND p.thread_id = c.thread_id
                      AND p.checkpoint_ns = c.checkpoint_ns
                      AND p.checkpoint_id = c.parent_checkpoint_id)
"""
_DELETE_UNUSED_VALUES = """
DELETE FROM lg_channel_values AS v
 WHERE app_name = $1 AND thread_id = ANY($2::text[])
   AND NOT EXISTS (SELECT 1 FROM lg_checkpoints AS c
                    WHERE c.app_name = v.app_name AND c.thread_id = v.thread_id
                      AND c.checkpoint_ns = v.checkpoint_ns
                      AND c.channel_versions ->> v.channel = v.version)
"""
_DELETE_RUNS = """
DELETE FROM lg_checkpoints WHERE app_name = $1 AND run_id = ANY($2::text[])
RETURNING thread_id, checkpoint_ns, checkpoint_id
"""
# Erased with the rest of the user or app (app.lifecycle.erasure).
ERASE_USER_THREADS = "DELETE FROM lg_threads WHERE app_name = $1 AND user_id = $2"
ERASE_APP_THREADS = "DELETE FROM lg_threads WHERE app_name = $1"
_SWEEP = """
DELETE FROM lg_threads WHERE (app_name, thread_id) IN (
    SELECT app_name, thread_id FROM lg_threads
     WHERE expire_time IS NOT NULL AND expire_time <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
"""


def _count(status: str) -> int:
    return int(status.rsplit(" ", 1)[1])


class PostgresCheckpoints:
    def __init__(self, pool: asyncpg.Pool, timeout: float) -> None:
        self.pool = pool
        self.timeout = timeout

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
        """Makes the thread (anew if it had expired) or pushes its expiry out.
        A live thread without a TTL costs one read: the writes of a thread
        are two requests a step."""
        thread = (key.app_name, key.thread_id, now)
        found = await connection.fetchrow(_THREAD_EXPIRY, key.app_name, key.thread_id)
        if found is not None and found["expire_time"] is not None and found["expire_time"] <= now:
            await connection.execute(_DELETE_IF_EXPIRED, *thread)
            found = None
        if found is None:
            inserted = await connection.execute(
                _INSERT_THREAD, *thread, owner.user_id, owner.ttl_seconds
            )
            if _count(inserted) == 1:
                return
        elif owner.ttl_seconds is None and found["ttl_seconds"] is None:
            return
        await connection.execute(_REFRESH_THREAD, *thread, owner.ttl_seconds)

    async def put_checkpoint(
        self, key: ThreadKey, owner: ThreadOwner, checkpoint: NewCheckpoint, now: float
    ) -> None:
        thread = (key.app_name, key.thread_id)
        async with self._transaction() as connection:
            await self._open_thread(connection, key, owner, now)
            values = checkpoint.new_values
            if values:
                await connection.execute(
                    _INSERT_VALUES,
                    *thread,
                    checkpoint.checkpoint_ns,
                    [value.channel for value in values],
                    [value.version for value in values],
                    [value.value.type for value in values],
                    [value.value.data for value in values],
                )
            run_id = checkpoint.metadata.get("run_id")
            await connection.execute(
                _UPSERT_CHECKPOINT,
                *thread,
                checkpoint.checkpoint_ns,
                checkpoint.checkpoint_id,
                checkpoint.parent_checkpoint_id,
                run_id if isinstance(run_id, str) else None,
                checkpoint.checkpoint.type,
                checkpoint.checkpoint.data,
                checkpoint.channel_versions,
                checkpoint.metadata,
            )

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
        async with self._transaction() as connection:
            await self._open_thread(connection, key, owner, now)
            await connection.execute(
                _UPSERT_WRITES if replace else _INSERT_WRITES,
                key.app_name,
                key.thread_id,
                checkpoint_ns,
                checkpoint_id,
                [write.task_id for write in writes],
                [write.task_path for write in writes],
                [write.idx for write in writes],
                [write.channel for write in writes],
                [write.value.type for write in writes],
                [write.value.data for write in writes],
            )

    async def list_checkpoints(
        self, key: ThreadKey, query: CheckpointQuery, budget: int, now: float
    ) -> tuple[list[StoredCheckpoint], bool]:
        thread = (key.app_name, key.thread_id)
        async with self._transaction() as connection:
            if await connection.fetchval(_THREAD_LIVE, *thread, now) is None:
                return [], False
            after_id, after_ns = query.after or (None, None)
            rows = await connection.fetch(
                _LIST,
                *thread,
                query.checkpoint_ns,
                query.checkpoint_id,
                query.before,
                after_id,
                after_ns,
                query.metadata or None,
                query.limit + 1,
            )
            rows, more = page_of(rows, query.limit, budget)
            if not rows:
                return [], False
            wanted = [
                (row["checkpoint_ns"], channel, version)
                for row in rows
                for channel, version in row["channel_versions"].items()
            ]
            value_rows = (
                await connection.fetch(
                    _VALUES_OF, *thread, *(list(column) for column in zip(*wanted, strict=True))
                )
                if wanted
                else []
            )
            write_rows = await connection.fetch(
                _WRITES_OF,
                *thread,
                [row["checkpoint_ns"] for row in rows],
                [row["checkpoint_id"] for row in rows],
            )
        return assemble(rows, value_rows, write_rows), more

    async def delete_thread(self, key: ThreadKey) -> bool:
        async with self._transaction() as connection:
            return _count(await connection.execute(_DELETE_THREAD, key.app_name, key.thread_id)) > 0

    async def copy_thread(self, source: ThreadKey, target: ThreadKey, now: float) -> str:
        async with self._transaction() as connection:
            if (
                await connection.fetchval(_THREAD_LIVE, source.app_name, source.thread_id, now)
                is None
            ):
                return "source_missing"
            await connection.execute(_DELETE_IF_EXPIRED, target.app_name, target.thread_id, now)
            copied = await connection.execute(
                _COPY_THREAD,
                source.app_name,
                source.thread_id,
                now,
                target.thread_id,
                target.app_name,
            )
            if _count(copied) == 0:
                return "target_exists"
            for statement in _COPY_ROWS:
                await connection.execute(
                    statement, source.app_name, source.thread_id, target.thread_id, target.app_name
                )
        return "copied"

    async def prune(
        self, app_name: str, thread_ids: Sequence[str], strategy: PruneStrategy, now: float
    ) -> list[str]:
        threads = sorted(set(thread_ids))
        async with self._transaction() as connection:
            if strategy == "delete":
                await connection.execute(_DELETE_THREADS, app_name, threads)
                return []
            delta = [row[0] for row in await connection.fetch(_DELTA_THREADS, app_name, threads)]
            if delta:
                return sorted(delta)
            deleted = await connection.fetch(_DELETE_OLDER_CHECKPOINTS, app_name, threads)
            await self._after_deleting(connection, app_name, threads, deleted)
        return []

    async def _after_deleting(
        self,
        connection: asyncpg.Connection,
        app_name: str,
        threads: list[str],
        deleted: Sequence[asyncpg.Record],
    ) -> None:
        """The writes of deleted checkpoints, parent links to them and the
        values no checkpoint has any more go too."""
        if not deleted:
            return
        await connection.execute(
            _DELETE_WRITES_OF, app_name, *(list(column) for column in zip(*deleted, strict=True))
        )
        await connection.execute(_UNLINK_MISSING_PARENTS, app_name, threads)
        await connection.execute(_DELETE_UNUSED_VALUES, app_name, threads)

    async def delete_runs(self, app_name: str, run_ids: Sequence[str]) -> int:
        async with self._transaction() as connection:
            deleted = await connection.fetch(_DELETE_RUNS, app_name, sorted(set(run_ids)))
            threads = sorted({row[0] for row in deleted})
            await self._after_deleting(connection, app_name, threads, deleted)
        return len(deleted)

    async def sweep_expired(self, now: float, batch: int) -> int:
        swept = 0
        while True:
            async with self._transaction() as connection:
                deleted = _count(await connection.execute(_SWEEP, now, batch))
            swept += deleted
            if deleted < batch:
                return swept
