"""The values the checkpoint routes, rules and stores pass each other.
Serialized values are LangGraph's serializer's (type tag, bytes): the server
stores and returns them as they came, and never reads inside them."""

from dataclasses import dataclass
from typing import Any, Literal

from ...core.errors import Forbidden

PruneStrategy = Literal["keep_latest", "delete"]
# The type tag of a channel version that holds no value (as LangGraph's
# PostgresSaver writes it).
EMPTY_VALUE_TYPE = "empty"


@dataclass(frozen=True)
class ThreadKey:
    app_name: str
    thread_id: str


@dataclass(frozen=True)
class Typed:
    """A value as LangGraph's serializer wrote it."""

    type: str
    data: bytes | None


@dataclass(frozen=True)
class ChannelValue:
    channel: str
    version: str
    value: Typed


@dataclass(frozen=True)
class NewCheckpoint:
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    checkpoint: Typed
    channel_versions: dict[str, str]
    metadata: dict[str, Any]
    # The values of the channels this checkpoint changed; the others are
    # stored already, at the version `channel_versions` names.
    new_values: list[ChannelValue]


@dataclass(frozen=True)
class PendingWrite:
    task_id: str
    task_path: str
    idx: int
    channel: str
    value: Typed


@dataclass(frozen=True)
class NewWrites:
    """A task's writes to a checkpoint; `replace`: a write of the same
    (task, index) is replaced, else kept (LangGraph's rule, the service's)."""

    checkpoint_ns: str
    checkpoint_id: str
    writes: list[PendingWrite]
    replace: bool


# One operation of a thread's batch (POST .../operations), applied in order.
CheckpointOperation = NewCheckpoint | NewWrites


@dataclass(frozen=True)
class StoredCheckpoint:
    """A checkpoint as read: its values and its pending writes with it."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    checkpoint: Typed
    metadata: dict[str, Any]
    channel_versions: dict[str, str]
    values: list[ChannelValue]
    writes: list[PendingWrite]


@dataclass(frozen=True)
class ThreadOwner:
    """Who a thread belongs to and how long it is kept once idle."""

    user_id: str
    ttl_seconds: float | None
    # An end user writes (app.core.end_user_tokens): the thread must be theirs,
    # checked in the write's transaction, so that two users racing to make
    # one thread cannot both write to it.
    enforced: bool = False


@dataclass(frozen=True)
class CheckpointQuery:
    """Which checkpoints of a thread a list returns, newest first.

    `checkpoint_ns` None: every namespace. `metadata`: contained in the
    checkpoint's (metadata_filter). `before`: only ids before it. `after`: where the last page ended
    (checkpoint id, namespace)."""

    checkpoint_ns: str | None = None
    checkpoint_id: str | None = None
    metadata: dict[str, Any] | None = None
    before: str | None = None
    after: tuple[str, str] | None = None
    limit: int = 100


@dataclass(frozen=True)
class AppCheckpointQuery:
    """Which checkpoints of an app's live threads a list returns (LangGraph's
    list with no config): newest id first, then thread id and namespace
    descending. `user_id`: only that user's threads. `after`: where the last
    page ended (checkpoint id, thread id, namespace)."""

    user_id: str | None = None
    checkpoint_ns: str | None = None
    metadata: dict[str, Any] | None = None
    before: str | None = None
    after: tuple[str, str, str] | None = None
    limit: int = 100


@dataclass(frozen=True)
class ThreadSummary:
    """A live thread as an app's list of threads shows it."""

    thread_id: str
    user_id: str
    create_time: float
    # The server's clock at its last write (never moved back: a later write
    # stamped earlier by another server's clock leaves it).
    update_time: float
    expire_time: float | None
    # The root graph's (namespace "") latest; None: it has none.
    latest_checkpoint_id: str | None


@dataclass(frozen=True)
class ThreadListQuery:
    """Which of an app's live threads a page lists, latest write first.
    `after`: where the last page ended (update time, thread id)."""

    user_id: str | None = None
    after: tuple[float, str] | None = None
    limit: int = 100


def refuse_another_users_thread(recorded_user: str, user_id: str) -> None:
    """Forbidden when an end user reaches a thread recorded under another."""
    if recorded_user != user_id:
        raise Forbidden(
            "the thread belongs to another user: an end-user token reaches only its own"
        )
