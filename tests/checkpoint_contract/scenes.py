"""Small builders for the checkpoint contract tests: thread keys, owners,
checkpoints and writes, and a list of a thread as plain values."""

from dataclasses import replace
from typing import Any

from session_state.langgraph.checkpoints.domain import (
    EMPTY_VALUE_TYPE,
    ChannelValue,
    CheckpointQuery,
    NewCheckpoint,
    PendingWrite,
    StoredCheckpoint,
    ThreadKey,
    ThreadOwner,
    Typed,
)
from session_state.langgraph.checkpoints.store import CheckpointStore

NOW = 1_800_000_000.0
APP = "graphs"
OWNER = ThreadOwner("ada", None)
# Far more than the tests' checkpoints take: only the budget test's pages end early.
BUDGET = 1024 * 1024


def thread(thread_id: str = "t1", app_name: str = APP) -> ThreadKey:
    return ThreadKey(app_name, thread_id)


def owner(ttl_seconds: float | None = None, user_id: str = "ada") -> ThreadOwner:
    return ThreadOwner(user_id, ttl_seconds)


def typed(text: str) -> Typed:
    return Typed("json", text.encode())


def checkpoint(
    checkpoint_id: str,
    *,
    ns: str = "",
    parent: str | None = None,
    versions: dict[str, str] | None = None,
    values: dict[str, str] | None = None,
    metadata: dict[str, Any] | None = None,
    body: str | None = None,
) -> NewCheckpoint:
    """A checkpoint with channel versions `versions`, of which `values`
    ({channel: text}) are new; `body` is its serialized header."""
    versions = versions or {}
    new_values = [
        ChannelValue(channel, versions[channel], typed(text))
        for channel, text in (values or {}).items()
    ]
    return NewCheckpoint(
        checkpoint_ns=ns,
        checkpoint_id=checkpoint_id,
        parent_checkpoint_id=parent,
        checkpoint=typed(body or f"checkpoint {checkpoint_id}"),
        channel_versions=versions,
        metadata={"source": "loop", "step": 0} if metadata is None else metadata,
        new_values=new_values,
    )


def empty_value(channel: str, version: str) -> ChannelValue:
    """A channel version that holds no value (LangGraph's "empty")."""
    return ChannelValue(channel, version, Typed(EMPTY_VALUE_TYPE, None))


def write(
    task_id: str, idx: int, text: str, *, path: str = "", channel: str = "out"
) -> PendingWrite:
    return PendingWrite(task_id, path, idx, channel, typed(text))


async def listed(
    checkpoints: CheckpointStore,
    key: ThreadKey,
    now: float = NOW,
    budget: int = BUDGET,
    **query: Any,
) -> tuple[list[StoredCheckpoint], bool]:
    return await checkpoints.list_checkpoints(key, CheckpointQuery(**query), budget, now)


def of_thread(found: list[StoredCheckpoint], thread_id: str) -> list[StoredCheckpoint]:
    """The checkpoints as another thread holds them (a copy's, a twin's)."""
    return [replace(checkpoint, thread_id=thread_id) for checkpoint in found]


async def ids(
    checkpoints: CheckpointStore, key: ThreadKey, now: float = NOW, **query: Any
) -> list[str]:
    """The ids a list returns (one page, of up to 100), newest first."""
    found, _ = await listed(checkpoints, key, now, **query)
    return [stored.checkpoint_id for stored in found]


def values_of(stored: StoredCheckpoint) -> dict[str, str | None]:
    """{channel: text} of the values a read checkpoint has."""
    return {
        value.channel: None if value.value.data is None else value.value.data.decode()
        for value in stored.values
    }


def writes_of(stored: StoredCheckpoint) -> list[tuple[str, str, int, str]]:
    """(task path, task id, index, text) of its pending writes, in order."""
    return [
        (pending.task_path, pending.task_id, pending.idx, (pending.value.data or b"").decode())
        for pending in stored.writes
    ]
