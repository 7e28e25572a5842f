"""LangGraph's checkpoints on SQLite (the store's engine): the
CheckpointStore of app.langgraph.checkpoints.store, with the PostgreSQL one's contract
(app.langgraph.checkpoints.postgresql). Lists of keys travel as JSON arrays read by
json_each; writers take the database's write lock at BEGIN (engine.py)."""

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ...core import json_codec
from ...core.encryption import ValueCipher
from ...db.database_errors import database_errors_as_domain_errors
from ...db.engine import WRITE_OPTION
from ..dialects import SQLITE
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
from .rows import assemble, page_of
from .thread_sql import THREAD, ThreadSql

_THREADS = ThreadSql(SQLITE)
_DELETE_IF_EXPIRED = text(_THREADS.delete_if_expired)
_UPSERT_THREAD = text(_THREADS.upsert)
_THREAD_LIVE = text(_THREADS.live)
_THREAD_USER = text(_THREADS.user)
_LIVE_THREAD_USER = text(_THREADS.live_user)
_DELETE_THREAD = text(_THREADS.delete)
_COPY_THREAD = text(_THREADS.copy)
_COPY_ROWS = tuple(text(statement) for statement in _THREADS.copy_rows)
_ERASE_USER = text(_THREADS.erase_user)
_ERASE_APP = text(_THREADS.erase_app)
_SWEEP = text(_THREADS.sweep)
_THREAD_PAGES = {
    (of_user, after): text(_THREADS.page(of_user=of_user, after=after))
    for of_user in (False, True)
    for after in (False, True)
}

_IN_THREADS = "app_name = :app_name AND thread_id IN (SELECT value FROM json_each(:threads))"
_DELETE_THREADS = text(f"DELETE FROM lg_threads WHERE {_IN_THREADS}")

_INSERT_VALUE = text(
    """
INSERT INTO lg_channel_values
       (app_name, thread_id, checkpoint_ns, channel, version, value_type, value)
VALUES (:app_name, :thread_id, :checkpoint_ns, :channel, :version, :value_type, :value)
ON CONFLICT DO NOTHING
"""
)
_UPSERT_CHECKPOINT = text(checkpoint_sql.UPSERT_CHECKPOINT)
_WRITE = """
INSERT INTO lg_writes
       (app_name, thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel,
        value_type, value)
VALUES (:app_name, :thread_id, :checkpoint_ns, :checkpoint_id, :task_id, :task_path, :idx,
        :channel, :value_type, :value)
ON CONFLICT (app_name, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
"""
_INSERT_WRITE = text(_WRITE + "DO NOTHING")
_UPSERT_WRITE = text(
    _WRITE
    + """DO UPDATE SET task_path = excluded.task_path, channel = excluded.channel,
       value_type = excluded.value_type, value = excluded.value"""
)
# {contains}: the metadata filter (_Containment).
_LIST = f"""
SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type,
       checkpoint, metadata, channel_versions
  FROM lg_checkpoints AS c
 WHERE {THREAD}
   AND (:checkpoint_ns IS NULL OR checkpoint_ns = :checkpoint_ns)
   AND (:checkpoint_id IS NULL OR checkpoint_id = :checkpoint_id)
   AND (:before IS NULL OR checkpoint_id < :before)
   AND (:after_id IS NULL OR (checkpoint_id, checkpoint_ns) < (:after_id, :after_ns))
   AND {{contains}}
 ORDER BY checkpoint_id DESC, checkpoint_ns DESC
 LIMIT :limit
"""
# A page's values and writes, of one thread or several: keys lead with the thread.
_VALUES_OF = text(
    """
SELECT thread_id, checkpoint_ns, channel, version, value_type, value FROM lg_channel_values
 WHERE app_name = :app_name AND (thread_id, checkpoint_ns, channel, version) IN (
       SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(:keys))
"""
)
_WRITES_OF = text(
    """
SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, value_type,
       value
  FROM lg_writes
 WHERE app_name = :app_name AND (thread_id, checkpoint_ns, checkpoint_id) IN (
       SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(:keys))
"""
)
_DELTA_THREADS = text(
    f"""
SELECT DISTINCT thread_id FROM lg_checkpoints
 WHERE {_IN_THREADS}
   AND json_type(metadata, '$.counters_since_delta_snapshot') IS NOT NULL
"""
)
_DELETE_OLDER_CHECKPOINTS = text(
    f"""
DELETE FROM lg_checkpoints AS c
 WHERE {_IN_THREADS}
   AND checkpoint_id < (SELECT max(checkpoint_id) FROM lg_checkpoints AS m
                         WHERE m.app_name = c.app_name AND m.thread_id = c.thread_id
                           AND m.checkpoint_ns = c.checkpoint_ns)
RETURNING thread_id, checkpoint_ns, checkpoint_id
"""
)
_DELETE_WRITES_OF = text(
    """
DELETE FROM lg_writes
 WHERE app_name = :app_name AND thread_id = :thread_id AND checkpoint_ns = :checkpoint_ns
   AND checkpoint_id = :checkpoint_id
"""
)
_UNLINK_MISSING_PARENTS = text(
    f"""
UPDATE lg_checkpoints AS c SET parent_checkpoint_id = NULL
 WHERE {_IN_THREADS} AND parent_checkpoint_id IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM lg_checkpoints AS p
                    WHERE p.app_name = c.app_name AND p.thread_id = c.thread_id
                      AND p.checkpoint_ns = c.checkpoint_ns
                      AND p.checkpoint_id = c.parent_checkpoint_id)
"""
)
_DELETE_UNUSED_VALUES = text(
    f"""
DELETE FROM lg_channel_values AS v
 WHERE {_IN_THREADS}
   AND NOT EXISTS (SELECT 1 FROM lg_checkpoints AS c, json_each(c.channel_versions) AS j
                    WHERE c.app_name = v.app_name AND c.thread_id = v.thread_id
                      AND c.checkpoint_ns = v.checkpoint_ns
                      AND j.key = v.channel AND j.atom = v.version)
"""
)
_DELETE_RUNS = text(
    """
DELETE FROM lg_checkpoints
 WHERE app_name = :app_name AND run_id IN (SELECT value FROM json_each(:run_ids))
RETURNING thread_id, checkpoint_ns, checkpoint_id
"""
)


class SqliteCheckpoints:
    def __init__(self, engine: AsyncEngine, cipher: ValueCipher | None = None) -> None:
        self.engine = engine
        # Values sealed on write and opened on read (app.langgraph.sealing).
        self.sealing = Sealing(cipher)

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        with database_errors_as_domain_errors():
            async with self.engine.connect() as connection, connection.begin():
                yield connection

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        with database_errors_as_domain_errors():
            async with self.engine.connect() as connection:
                await connection.execution_options(**{WRITE_OPTION: True})
                async with connection.begin():
                    yield connection

    async def _open_thread(
        self, connection: AsyncConnection, key: ThreadKey, owner: ThreadOwner, now: float
    ) -> dict[str, Any]:
        thread = {"app_name": key.app_name, "thread_id": key.thread_id}
        await connection.execute(_DELETE_IF_EXPIRED, {**thread, "now": now})
        await connection.execute(
            _UPSERT_THREAD,
            {**thread, "now": now, "user_id": owner.user_id, "ttl": owner.ttl_seconds},
        )
        if owner.enforced:
            recorded = (await connection.execute(_THREAD_USER, thread)).scalar_one()
            refuse_another_users_thread(recorded, owner.user_id)
        return thread

    def _checkpoint_rows(
        self, thread: dict[str, Any], checkpoint: NewCheckpoint
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """A put's new values and its checkpoint's row, sealed."""
        seal = self.sealing.seal_typed
        where = {**thread, "checkpoint_ns": checkpoint.checkpoint_ns}
        values = []
        for value in checkpoint.new_values:
            type_tag, data = seal(value.value.type, value.value.data, CHANNEL_VALUE)
            values.append(
                {
                    **where,
                    "channel": value.channel,
                    "version": value.version,
                    "value_type": type_tag,
                    "value": data,
                }
            )
        checkpoint_type, checkpoint_data = seal(
            checkpoint.checkpoint.type, checkpoint.checkpoint.data, CHECKPOINT
        )
        run_id = checkpoint.metadata.get("run_id")
        header = {
            **where,
            "checkpoint_id": checkpoint.checkpoint_id,
            "parent": checkpoint.parent_checkpoint_id,
            "run_id": run_id if isinstance(run_id, str) else None,
            "checkpoint_type": checkpoint_type,
            "checkpoint": checkpoint_data,
            "channel_versions": json_codec.dumps_text(checkpoint.channel_versions),
            "metadata": json_codec.dumps_text(checkpoint.metadata),
        }
        return values, header

    def _writes_rows(self, thread: dict[str, Any], writes: NewWrites) -> list[dict[str, Any]]:
        """A task's writes as rows, sealed."""
        rows = []
        for write in writes.writes:
            type_tag, data = self.sealing.seal_typed(write.value.type, write.value.data, WRITE)
            rows.append(
                {
                    **thread,
                    "checkpoint_ns": writes.checkpoint_ns,
                    "checkpoint_id": writes.checkpoint_id,
                    "task_id": write.task_id,
                    "task_path": write.task_path,
                    "idx": write.idx,
                    "channel": write.channel,
                    "value_type": type_tag,
                    "value": data,
                }
            )
        return rows

    async def put_checkpoint(
        self, key: ThreadKey, owner: ThreadOwner, checkpoint: NewCheckpoint, now: float
    ) -> None:
        await self.apply_operations(key, owner, [checkpoint], now)

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
        operation = NewWrites(checkpoint_ns, checkpoint_id, list(writes), replace)
        await self.apply_operations(key, owner, [operation], now)

    async def apply_operations(
        self,
        key: ThreadKey,
        owner: ThreadOwner,
        operations: Sequence[CheckpointOperation],
        now: float,
    ) -> None:
        thread = {"app_name": key.app_name, "thread_id": key.thread_id}
        # Sealed before the write lock is taken.
        prepared = [
            self._checkpoint_rows(thread, operation)
            if isinstance(operation, NewCheckpoint)
            else (self._writes_rows(thread, operation), operation.replace)
            for operation in operations
        ]
        async with self._write() as connection:
            await self._open_thread(connection, key, owner, now)
            for rows, second in prepared:
                if isinstance(second, bool):
                    if rows:
                        await connection.execute(_UPSERT_WRITE if second else _INSERT_WRITE, rows)
                    continue
                if rows:
                    await connection.execute(_INSERT_VALUE, rows)
                await connection.execute(_UPSERT_CHECKPOINT, second)

    async def list_checkpoints(
        self, key: ThreadKey, query: CheckpointQuery, budget: int, now: float
    ) -> tuple[list[StoredCheckpoint], bool]:
        thread = {"app_name": key.app_name, "thread_id": key.thread_id}
        async with self._read() as connection:
            if (await connection.execute(_THREAD_LIVE, {**thread, "now": now})).first() is None:
                return [], False
            after_id, after_ns = query.after or (None, None)
            list_query, filter_parameters = _list_query(query.metadata)
            result = await connection.execute(
                list_query,
                {
                    **filter_parameters,
                    **thread,
                    "checkpoint_ns": query.checkpoint_ns,
                    "checkpoint_id": query.checkpoint_id,
                    "before": query.before,
                    "after_id": after_id,
                    "after_ns": after_ns,
                    "limit": query.limit + 1,
                },
            )
            return await self._page(connection, key.app_name, result, query.limit, budget)

    async def list_app_checkpoints(
        self, app_name: str, query: AppCheckpointQuery, budget: int, now: float
    ) -> tuple[list[StoredCheckpoint], bool]:
        after_id, after_thread, after_ns = query.after or (None, None, None)
        contains, filter_parameters = _contains(query.metadata)
        async with self._read() as connection:
            result = await connection.execute(
                text(checkpoint_sql.app_list(SQLITE, contains)),
                {
                    **filter_parameters,
                    "app_name": app_name,
                    "now": now,
                    "user_id": query.user_id,
                    "checkpoint_ns": query.checkpoint_ns,
                    "before": query.before,
                    "after_id": after_id,
                    "after_thread": after_thread,
                    "after_ns": after_ns,
                    "limit": query.limit + 1,
                },
            )
            return await self._page(connection, app_name, result, query.limit, budget)

    async def _page(
        self, connection: AsyncConnection, app_name: str, result: Any, limit: int, budget: int
    ) -> tuple[list[StoredCheckpoint], bool]:
        """A list's page from its checkpoint rows: those that fit, with their
        values and writes, read in the caller's transaction."""
        rows, more = page_of([_decoded(row._asdict()) for row in result], limit, budget)
        if not rows:
            return [], False
        keys = [
            [row["thread_id"], row["checkpoint_ns"], channel, version]
            for row in rows
            for channel, version in row["channel_versions"].items()
        ]
        value_rows = [
            row._asdict()
            for row in await connection.execute(
                _VALUES_OF, {"app_name": app_name, "keys": json.dumps(keys)}
            )
        ]
        checkpoints = [
            [row["thread_id"], row["checkpoint_ns"], row["checkpoint_id"]] for row in rows
        ]
        write_rows = [
            row._asdict()
            for row in await connection.execute(
                _WRITES_OF, {"app_name": app_name, "keys": json.dumps(checkpoints)}
            )
        ]
        return assemble(rows, value_rows, write_rows, self.sealing), more

    async def list_threads(
        self, app_name: str, query: ThreadListQuery, now: float
    ) -> tuple[list[ThreadSummary], bool]:
        statement = _THREAD_PAGES[(query.user_id is not None, query.after is not None)]
        parameters: dict[str, Any] = {"app_name": app_name, "now": now, "limit": query.limit + 1}
        if query.user_id is not None:
            parameters["user_id"] = query.user_id
        if query.after is not None:
            parameters.update(after_time=query.after[0], after_thread=query.after[1])
        async with self._read() as connection:
            rows = (await connection.execute(statement, parameters)).all()
        found = [ThreadSummary(**row._asdict()) for row in rows[: query.limit]]
        return found, len(rows) > query.limit

    async def thread_user(self, key: ThreadKey, now: float) -> str | None:
        async with self._read() as connection:
            found = await connection.execute(
                _LIVE_THREAD_USER,
                {"app_name": key.app_name, "thread_id": key.thread_id, "now": now},
            )
            user: str | None = found.scalar_one_or_none()
            return user

    async def delete_thread(self, key: ThreadKey) -> bool:
        async with self._write() as connection:
            result = await connection.execute(
                _DELETE_THREAD, {"app_name": key.app_name, "thread_id": key.thread_id}
            )
            return result.rowcount > 0

    async def copy_thread(self, source: ThreadKey, target: ThreadKey, now: float) -> str:
        thread = {"app_name": source.app_name, "thread_id": source.thread_id}
        async with self._write() as connection:
            if (await connection.execute(_THREAD_LIVE, {**thread, "now": now})).first() is None:
                return "source_missing"
            await connection.execute(
                _DELETE_IF_EXPIRED,
                {"app_name": target.app_name, "thread_id": target.thread_id, "now": now},
            )
            copied = await connection.execute(
                _COPY_THREAD,
                {**thread, "target": target.thread_id, "target_app": target.app_name, "now": now},
            )
            if copied.rowcount == 0:
                return "target_exists"
            for statement in _COPY_ROWS:
                await connection.execute(
                    statement,
                    {**thread, "target": target.thread_id, "target_app": target.app_name},
                )
        return "copied"

    async def prune(
        self, app_name: str, thread_ids: Sequence[str], strategy: PruneStrategy, now: float
    ) -> list[str]:
        where = {"app_name": app_name, "threads": json.dumps(sorted(set(thread_ids)))}
        async with self._write() as connection:
            if strategy == "delete":
                await connection.execute(_DELETE_THREADS, where)
                return []
            delta = [row.thread_id for row in await connection.execute(_DELTA_THREADS, where)]
            if delta:
                return sorted(delta)
            deleted = list(await connection.execute(_DELETE_OLDER_CHECKPOINTS, where))
            await _after_deleting(connection, app_name, deleted)
        return []

    async def delete_runs(self, app_name: str, run_ids: Sequence[str]) -> int:
        async with self._write() as connection:
            deleted = list(
                await connection.execute(
                    _DELETE_RUNS, {"app_name": app_name, "run_ids": json.dumps(list(run_ids))}
                )
            )
            await _after_deleting(connection, app_name, deleted)
        return len(deleted)

    async def sweep_expired(self, now: float, batch: int) -> int:
        swept = 0
        while True:
            async with self._write() as connection:
                deleted = (await connection.execute(_SWEEP, {"now": now, "batch": batch})).rowcount
            swept += deleted
            if deleted < batch:
                return swept


async def _after_deleting(
    connection: AsyncConnection, app_name: str, deleted: Sequence[Any]
) -> None:
    """The writes of deleted checkpoints, parent links to them and the values
    no checkpoint has any more go too."""
    if not deleted:
        return
    await connection.execute(
        _DELETE_WRITES_OF,
        [
            {
                "app_name": app_name,
                "thread_id": row.thread_id,
                "checkpoint_ns": row.checkpoint_ns,
                "checkpoint_id": row.checkpoint_id,
            }
            for row in deleted
        ],
    )
    threads = sorted({row.thread_id for row in deleted})
    where = {"app_name": app_name, "threads": json.dumps(threads)}
    await connection.execute(_UNLINK_MISSING_PARENTS, where)
    await connection.execute(_DELETE_UNUSED_VALUES, where)


class _Containment:
    """A metadata filter as SQL: the metadata contains it as PostgreSQL's
    `@>` has it (app.langgraph.checkpoints.metadata_filter), its values and paths as
    parameters :m0, :m1, ... An array's elements are looked for with
    json_each over the stored array."""

    def __init__(self) -> None:
        self.parameters: dict[str, Any] = {}

    def _parameter(self, value: Any) -> str:
        name = f"m{len(self.parameters)}"
        self.parameters[name] = value
        return f":{name}"

    def sql(self, document: str, path: str, wanted: Any) -> str:
        """`document` (JSON text) at the JSON path `path` contains `wanted`."""
        at = self._parameter(path)
        kind = f"json_type({document}, {at})"
        if isinstance(wanted, dict):
            parts = [f"{kind} = 'object'"] + [
                # A key as JSON writes it, escapes and all: SQLite before 3.45
                # compares a path's key with the stored text as it is.
                self.sql(document, f"{path}.{json_codec.dumps_text(key)}", item)
                for key, item in wanted.items()
            ]
            return "(" + " AND ".join(parts) + ")"
        if isinstance(wanted, list):
            parts = [f"{kind} = 'array'"]
            for item in wanted:
                alias = f"e{len(self.parameters)}"
                parts.append(
                    f"EXISTS (SELECT 1 FROM json_each({document}, {at}) AS {alias}"
                    f" WHERE {self._element(alias, item)})"
                )
            return "(" + " AND ".join(parts) + ")"
        return self._scalar(kind, f"json_extract({document}, {at})", wanted)

    def _element(self, alias: str, wanted: Any) -> str:
        if isinstance(wanted, dict | list):
            # A scalar element's value is not JSON text: NULL, not looked into.
            container = f"(CASE WHEN {alias}.type IN ('object', 'array') THEN {alias}.value END)"
            return self.sql(container, "$", wanted)
        return self._scalar(f"{alias}.type", f"{alias}.atom", wanted)

    def _scalar(self, kind: str, atom: str, wanted: Any) -> str:
        if wanted is None:
            return f"COALESCE({kind} = 'null', 0)"
        if isinstance(wanted, bool):
            return f"COALESCE({kind} = '{'true' if wanted else 'false'}', 0)"
        types = "('text')" if isinstance(wanted, str) else "('integer', 'real')"
        value = self._parameter(SQLITE.scalar_argument(wanted))
        return f"COALESCE({kind} IN {types} AND {atom} = {value}, 0)"


def _list_query(metadata: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
    contains, parameters = _contains(metadata)
    return text(_LIST.format(contains=contains)), parameters


def _contains(metadata: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The metadata filter's condition on `c.metadata`, with its parameters."""
    if not metadata:
        return "1", {}
    containment = _Containment()
    return containment.sql("c.metadata", "$", metadata), containment.parameters


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    row["metadata"] = json_codec.loads(row["metadata"])
    row["channel_versions"] = json_codec.loads(row["channel_versions"])
    return row


async def erase_threads(connection: AsyncConnection, app_name: str, user_id: str | None) -> int:
    """Erased with the rest of the user (or app, when None) in the caller's
    transaction (app.lifecycle.erasure)."""
    if user_id is None:
        return (await connection.execute(_ERASE_APP, {"app_name": app_name})).rowcount
    where = {"app_name": app_name, "user_id": user_id}
    return (await connection.execute(_ERASE_USER, where)).rowcount
