"""The wire models of LangGraph's checkpoints. Values are LangGraph's
serializer's output, a type tag and bytes: the bytes travel as standard
base64 (with padding) and are stored as bytes."""

import binascii
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from ...core.config import MAX_TTL_SECONDS
from ...core.json_rules import text_problem
from ...http.problems import Problem
from ...http.wire import RequestBody, WireModel, held_to
from ...sessions.schemas import NameIdentifier
from .domain import PruneStrategy

# Checkpoint namespaces nest ("outer:<task id>|inner:<task id>"), so they are
# longer than identifiers; channels, versions, task ids and paths likewise.
MAX_TEXT_LENGTH = 4096
MAX_THREADS_PER_CALL = 1000
# The operations one request of a thread's batch carries (a superstep's
# writes and checkpoint: a handful; the client sends at most this many).
MAX_OPERATIONS_PER_CALL = 64
# The threads' batches one request of several threads carries (POST
# /apps/{app}/thread-operations), as the appends to several sessions.
MAX_THREAD_BATCHES_PER_CALL = 100


Name = NameIdentifier
Text = Annotated[str, Field(max_length=MAX_TEXT_LENGTH)]


def decode_base64(text: str) -> bytes:
    try:
        # Strict: only the alphabet and its padding, checked as it decodes.
        return binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError):
        raise PydanticCustomError(
            "base64", "not standard base64 (A-Z a-z 0-9 + /, padded)"
        ) from None


class CheckedBase64(str):
    """Standard base64 as received, with the bytes it decodes to: decoded
    once, when checked, not again when stored."""

    decoded: bytes


def _checked_base64(text: str) -> str:
    checked = CheckedBase64(text)
    checked.decoded = decode_base64(text)
    return checked


def base64_bytes(text: str) -> bytes:
    """A checked value's bytes (decoded now when it was not checked)."""
    if isinstance(text, CheckedBase64):
        return text.decoded
    return decode_base64(text)


Base64 = Annotated[
    str,
    AfterValidator(_checked_base64),
    WithJsonSchema({"type": "string", "format": "byte", "description": "Standard base64."}),
]


class TypedValue(WireModel):
    """A value as LangGraph's serializer wrote it: `dumps_typed`'s pair."""

    type: Text = Field(description='The serializer\'s type tag ("msgpack", "json", "empty"...).')
    data: Base64 | None = Field(default=None, description="Its bytes, base64; null for none.")


class ChannelValue(TypedValue):
    channel: Text
    version: Text = Field(description="The channel's version this value is.")


class Write(TypedValue):
    task_id: Text
    task_path: Text = ""
    idx: int = Field(
        ge=-(2**31), lt=2**31, description="Index in the task's writes; negative: special."
    )
    channel: Text


class Owned(WireModel):
    user_id: Name | None = Field(
        default=None,
        description="Whose thread this is (LangGraph: configurable.user_id), recorded when "
        "the thread is created: erasing that user removes it. Default: langgraph.",
    )
    ttl_seconds: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TTL_SECONDS,
        strict=True,
        allow_inf_nan=False,
        description="Idle timeout: the thread expires this long after its last write. "
        "Null: as it was (no expiry for a new thread).",
    )


class CheckpointFields(WireModel):
    """A put's body but its owner (PutCheckpointRequest, PutOperation)."""

    parent_checkpoint_id: Text | None = None
    checkpoint: TypedValue = Field(description="The checkpoint without its channel values.")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="JSON; list filters compare its keys."
    )
    channel_versions: dict[str, Text | int | float] = Field(
        description="Every channel's version at this checkpoint: the values it has."
    )
    new_values: list[ChannelValue] = Field(
        default_factory=list,
        description="Values of the versions this checkpoint made (others are stored).",
    )


class PutCheckpointRequest(CheckpointFields, Owned):
    pass


class WritesFields(WireModel):
    writes: list[Write]


class PutWritesRequest(WritesFields, Owned):
    pass


Namespace = Annotated[
    str,
    Field(
        max_length=MAX_TEXT_LENGTH, description='"" for the root graph, a subgraph\'s otherwise.'
    ),
    held_to(text_problem, "text"),
]


class Addressed(WireModel):
    """Which checkpoint an operation is on: the single routes' path and query."""

    checkpoint_id: Name
    checkpoint_ns: Namespace = ""


# The batch refuses a field it does not define (the owner is the batch's,
# never an operation's).
class PutOperation(CheckpointFields, Addressed, RequestBody):
    """A put of a checkpoint (the PUT route's body, the owner aside)."""

    op: Literal["put"]


class PutWritesOperation(WritesFields, Addressed, RequestBody):
    """A put of a task's writes (the POST .../writes route's body, the owner aside)."""

    op: Literal["putWrites"]


CheckpointOperation = Annotated[PutOperation | PutWritesOperation, Field(discriminator="op")]


class OperationsRequest(Owned, RequestBody):
    """Puts of one thread applied in order, all or none."""

    operations: list[CheckpointOperation] = Field(min_length=1, max_length=MAX_OPERATIONS_PER_CALL)


class ThreadOperations(OperationsRequest):
    """One thread's batch among several threads' (its own route's body and
    the thread it is for)."""

    thread_id: Name


class ThreadOperationsRequest(RequestBody):
    threads: list[ThreadOperations] = Field(
        min_length=1,
        max_length=MAX_THREAD_BATCHES_PER_CALL,
        description="Each applied as its own thread's batch; a thread's batches in this order.",
    )


class ThreadOperationsResult(WireModel):
    """One thread's batch's answer, as its own route would have answered."""

    status: int = Field(
        description="Its route's status: 204 stored, or the error's (403, 413, 422, 503)."
    )
    problem: Problem | None = Field(default=None, description="The error, as its own answer.")


class ThreadOperationsResults(WireModel):
    results: list[ThreadOperationsResult] = Field(description="In the order of the batches.")


class Checkpoint(WireModel):
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    checkpoint: TypedValue
    metadata: dict[str, Any]
    channel_versions: dict[str, str] = Field(
        description="{channel: version}, as put; a channel has a value in channelValues "
        "when one was stored for that version."
    )
    channel_values: list[ChannelValue]
    pending_writes: list[Write] = Field(description="In the order LangGraph applies them.")


class CheckpointList(WireModel):
    checkpoints: list[Checkpoint]
    next_page_token: str | None


class AppCheckpoint(Checkpoint):
    thread_id: str = Field(description="The thread the checkpoint is of.")


class AppCheckpointList(WireModel):
    checkpoints: list[AppCheckpoint]
    next_page_token: str | None


class ThreadEntry(WireModel):
    thread_id: str
    user_id: str = Field(description="The user the thread is recorded under (its first write's).")
    create_time: float = Field(description="When the thread was made (epoch seconds).")
    last_update_time: float = Field(
        description="Its last write (epoch seconds, the server's clock): the list's order."
    )
    expire_time: float | None = Field(description="When it expires; null: never.")
    latest_checkpoint_id: str | None = Field(
        description='The root graph\'s (namespace "") latest checkpoint; null: none.'
    )


class ThreadList(WireModel):
    threads: list[ThreadEntry]
    next_page_token: str | None


class CopyThreadRequest(WireModel):
    target_thread_id: Name


class PruneRequest(WireModel):
    thread_ids: list[Name] = Field(max_length=MAX_THREADS_PER_CALL)
    strategy: Literal["keep_latest", "delete"] = "keep_latest"

    def prune_strategy(self) -> PruneStrategy:
        return self.strategy


class DeleteRunsRequest(WireModel):
    run_ids: list[Text] = Field(max_length=MAX_THREADS_PER_CALL)
