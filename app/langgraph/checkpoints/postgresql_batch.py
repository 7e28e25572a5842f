"""A thread's batch (puts and writes, a LangGraph superstep's) to a live
thread in one PostgreSQL statement: the thread stamped, every task's writes,
every put's values and every checkpoint, each kind in one insert of arrays.
A batch of several operations otherwise takes a transaction that opens its
thread first: seven round trips for a step's writes and its checkpoint.

One statement sees one snapshot, so it stores what running the operations
one after another would only where no two of them write one row with an
update: no two puts of one checkpoint and no write that replaces (the other
inserts keep the first row of a key, as they would in turn). Any other batch,
and one whose thread is new or expired, takes the transaction."""

from collections.abc import Sequence
from typing import Any

from ...db.postgresql_statement import Statement
from . import checkpoint_sql
from .domain import CheckpointOperation, NewCheckpoint

_COLUMNS = (
    *("w_ns", "w_checkpoint_id", "w_task_id", "w_task_path", "w_idx", "w_channel", "w_type"),
    *("w_value", "v_ns", "v_channel", "v_version", "v_type", "v_value", "c_ns", "c_id"),
    *("c_parent", "c_run_id", "c_type", "c_checkpoint", "c_versions", "c_metadata"),
)


def fits_one_statement(operations: Sequence[CheckpointOperation]) -> bool:
    """Whether the batch stores in one statement what it would in turn."""
    checkpoints = set()
    for operation in operations:
        if isinstance(operation, NewCheckpoint):
            key = (operation.checkpoint_ns, operation.checkpoint_id)
            if key in checkpoints:
                return False
            checkpoints.add(key)
        elif operation.replace:
            return False
    return True


def batch_arguments(
    prepared: Sequence[tuple[dict[str, Any], Any]], now: float, ttl: float | None
) -> dict[str, Any]:
    """The statement's arrays from each operation's prepared rows: a put's
    (values, checkpoint row), a task's (writes, False)."""
    columns: dict[str, list[Any]] = {name: [] for name in _COLUMNS}
    key: dict[str, Any] = {}
    for rows, second in prepared:
        key = {"app_name": rows["app_name"], "thread_id": rows["thread_id"]}
        if isinstance(second, dict):
            for channel, version, value_type, value in zip(
                rows["channel"], rows["version"], rows["value_type"], rows["value"], strict=True
            ):
                columns["v_ns"].append(rows["checkpoint_ns"])
                columns["v_channel"].append(channel)
                columns["v_version"].append(version)
                columns["v_type"].append(value_type)
                columns["v_value"].append(value)
            columns["c_ns"].append(rows["checkpoint_ns"])
            columns["c_id"].append(second["checkpoint_id"])
            columns["c_parent"].append(second["parent"])
            columns["c_run_id"].append(second["run_id"])
            columns["c_type"].append(second["checkpoint_type"])
            columns["c_checkpoint"].append(second["checkpoint"])
            columns["c_versions"].append(second["channel_versions"])
            columns["c_metadata"].append(second["metadata"])
        else:
            for task_id, task_path, idx, channel, value_type, value in zip(
                rows["task_id"],
                rows["task_path"],
                rows["idx"],
                rows["channel"],
                rows["value_type"],
                rows["value"],
                strict=True,
            ):
                columns["w_ns"].append(rows["checkpoint_ns"])
                columns["w_checkpoint_id"].append(rows["checkpoint_id"])
                columns["w_task_id"].append(task_id)
                columns["w_task_path"].append(task_path)
                columns["w_idx"].append(idx)
                columns["w_channel"].append(channel)
                columns["w_type"].append(value_type)
                columns["w_value"].append(value)
    return {**columns, **key, "now": now, "ttl": ttl}


def batch_statement(to_live_thread: str, if_live: str) -> Statement:
    """`to_live_thread`: the `live` CTE that stamps a live thread (and locks
    its row before any insert reads it); `if_live`: true when it did."""
    return Statement.of(
        f"""{to_live_thread},
     task_writes AS (
INSERT INTO lg_writes
       (app_name, thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel,
        value_type, value)
SELECT :app_name, :thread_id, w.ns, w.checkpoint_id, w.task_id, w.task_path, w.idx, w.channel,
       w.value_type, w.value
  FROM unnest(:w_ns::text[], :w_checkpoint_id::text[], :w_task_id::text[], :w_task_path::text[],
              :w_idx::int[], :w_channel::text[], :w_type::text[], :w_value::bytea[])
       WITH ORDINALITY AS w(ns, checkpoint_id, task_id, task_path, idx, channel, value_type,
                            value, position)
 WHERE {if_live}
 ORDER BY w.position
ON CONFLICT (app_name, thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING),
     new_values AS (
INSERT INTO lg_channel_values
       (app_name, thread_id, checkpoint_ns, channel, version, value_type, value)
SELECT :app_name, :thread_id, v.ns, v.channel, v.version, v.value_type, v.value
  FROM unnest(:v_ns::text[], :v_channel::text[], :v_version::text[], :v_type::text[],
              :v_value::bytea[]) AS v(ns, channel, version, value_type, value)
 WHERE {if_live}
ON CONFLICT DO NOTHING),
     stored AS (
INSERT INTO lg_checkpoints
       (app_name, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id,
        checkpoint_type, checkpoint, channel_versions, metadata)
SELECT :app_name, :thread_id, c.ns, c.checkpoint_id, c.parent, c.run_id, c.checkpoint_type,
       c.checkpoint, c.channel_versions, c.metadata
  FROM unnest(:c_ns::text[], :c_id::text[], :c_parent::text[], :c_run_id::text[],
              :c_type::text[], :c_checkpoint::bytea[], :c_versions::jsonb[], :c_metadata::jsonb[])
       AS c(ns, checkpoint_id, parent, run_id, checkpoint_type, checkpoint, channel_versions,
            metadata)
 WHERE {if_live}
{checkpoint_sql.ON_CHECKPOINT_CONFLICT})
SELECT {if_live}
"""
    )
