"""Checkpoint rows as both stores read them, made into StoredCheckpoint:
pages within the response budget, values and writes put with their
checkpoints."""

from collections.abc import Sequence
from typing import Any

from ..sealing import CHANNEL_VALUE, CHECKPOINT, WRITE, Sealing
from .domain import ChannelValue, PendingWrite, StoredCheckpoint, Typed


def page_of(rows: Sequence[Any], limit: int, budget: int) -> tuple[list[Any], bool]:
    """The first rows (of at most `limit` + 1 read) whose checkpoints fit in
    `budget` bytes, always one; and whether more may follow."""
    kept: list[Any] = []
    used = 0
    for row in rows[:limit]:
        used += len(row["checkpoint"])
        if kept and used > budget:
            return kept, True
        kept.append(row)
    return kept, len(rows) > limit


def _typed(sealing: Sealing, type_tag: str, data: bytes | None, purpose: bytes) -> Typed:
    return Typed(*sealing.open_typed(type_tag, data, purpose))


def assemble(
    rows: Sequence[Any], value_rows: Sequence[Any], write_rows: Sequence[Any], sealing: Sealing
) -> list[StoredCheckpoint]:
    """Checkpoints with the values their versions name and their writes
    (in the order LangGraph applies them), opened if sealed; rows are read
    by column name, each with its thread's id (a page may span threads)."""
    values: dict[tuple[str, str, str, str], Typed] = {
        (row["thread_id"], row["checkpoint_ns"], row["channel"], row["version"]): _typed(
            sealing, row["value_type"], row["value"], CHANNEL_VALUE
        )
        for row in value_rows
    }
    writes: dict[tuple[str, str, str], list[PendingWrite]] = {}
    for row in write_rows:
        at = (row["thread_id"], row["checkpoint_ns"], row["checkpoint_id"])
        writes.setdefault(at, []).append(
            PendingWrite(
                row["task_id"],
                row["task_path"],
                row["idx"],
                row["channel"],
                _typed(sealing, row["value_type"], row["value"], WRITE),
            )
        )
    for pending in writes.values():
        # LangGraph's writes_sort_key, in code point order on both backends.
        pending.sort(key=lambda write: (write.task_path, write.task_id, write.idx))
    stored = []
    for row in rows:
        thread, ns = row["thread_id"], row["checkpoint_ns"]
        channel_values = [
            ChannelValue(channel, version, value)
            for channel, version in row["channel_versions"].items()
            if (value := values.get((thread, ns, channel, version))) is not None
        ]
        stored.append(
            StoredCheckpoint(
                thread_id=thread,
                checkpoint_ns=ns,
                checkpoint_id=row["checkpoint_id"],
                parent_checkpoint_id=row["parent_checkpoint_id"],
                checkpoint=_typed(sealing, row["checkpoint_type"], row["checkpoint"], CHECKPOINT),
                metadata=row["metadata"],
                channel_versions=row["channel_versions"],
                values=channel_values,
                writes=writes.get((thread, ns, row["checkpoint_id"]), []),
            )
        )
    return stored
