"""A thread's batch of puts and put_writes (POST .../operations) as the
columns of one statement (app.langgraph.checkpoints.postgresql's
`_BATCH_TO_LIVE_THREAD`): every operation's rows side by side, an array per
column, named `<table>_<column>` (`values_`, `checkpoints_`, `writes_`), so
that a batch to a live thread costs one round trip instead of a
transaction's several.

One statement writes all its rows at once, not in the batch's order, so it
answers alike only when no two operations write the same row: a batch that
stores one checkpoint twice, or one write (task, index) twice, is applied in
order in a transaction instead (`one_statement_columns` answers None)."""

from collections.abc import Callable, Sequence
from typing import Any

# An operation as the PostgreSQL store prepares it, sealed: a put's value
# rows (an array per column) and its checkpoint's row, or a put_writes'
# rows and whether it replaces.
Prepared = tuple[dict[str, Any], dict[str, Any] | bool]

_VALUE_COLUMNS = ("channel", "version", "value_type", "value")
_CHECKPOINT_COLUMNS = ("checkpoint_id", "parent", "run_id", "checkpoint_type", "checkpoint")
_WRITE_COLUMNS = ("task_id", "task_path", "idx", "channel", "value_type", "value")


def one_statement_columns(
    prepared: Sequence[Prepared], json_text: Callable[[Any], str]
) -> dict[str, list[Any]] | None:
    """The batch's rows as the statement's arrays (`json_text` writes a JSONB
    value inside an array), or None when two of its operations write one row."""
    columns: dict[str, list[Any]] = {name: [] for name in _NAMES}
    checkpoints: set[tuple[str, str]] = set()
    writes: set[tuple[str, str, str, int]] = set()
    for rows, second in prepared:
        namespace = rows["checkpoint_ns"]
        if isinstance(second, bool):
            checkpoint_id = rows["checkpoint_id"]
            for index, task_id in enumerate(rows["task_id"]):
                write = (namespace, checkpoint_id, task_id, rows["idx"][index])
                if write in writes:
                    return None
                writes.add(write)
            count = len(rows["task_id"])
            columns["writes_ns"] += [namespace] * count
            columns["writes_checkpoint_id"] += [checkpoint_id] * count
            columns["writes_replace"] += [second] * count
            for name in _WRITE_COLUMNS:
                columns[f"writes_{name}"] += rows[name]
            continue
        checkpoint = (namespace, second["checkpoint_id"])
        if checkpoint in checkpoints:
            return None
        checkpoints.add(checkpoint)
        columns["values_ns"] += [namespace] * len(rows["channel"])
        for name in _VALUE_COLUMNS:
            columns[f"values_{name}"] += rows[name]
        columns["checkpoints_ns"].append(namespace)
        for name in _CHECKPOINT_COLUMNS:
            columns[f"checkpoints_{name}"].append(second[name])
        columns["checkpoints_versions"].append(json_text(second["channel_versions"]))
        columns["checkpoints_metadata"].append(json_text(second["metadata"]))
    return columns


_NAMES = (
    *(f"values_{name}" for name in ("ns", *_VALUE_COLUMNS)),
    *(f"checkpoints_{name}" for name in ("ns", *_CHECKPOINT_COLUMNS, "versions", "metadata")),
    *(f"writes_{name}" for name in ("ns", "checkpoint_id", *_WRITE_COLUMNS, "replace")),
)
