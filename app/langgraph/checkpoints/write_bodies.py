"""The write routes' bodies read into the domain's terms: a value's bytes,
the thread's owner, a checkpoint, a task's writes, and a thread's batch of
both (its own route's and each thread's among several)."""

from ...core.end_user_tokens import acting_end_user
from ...core.errors import FieldError, InvalidInput
from . import domain
from .domain import (
    EMPTY_VALUE_TYPE,
    CheckpointOperation,
    ThreadKey,
    ThreadOwner,
    refuse_another_users_thread,
)
from .schemas import (
    CheckpointFields,
    OperationsRequest,
    Owned,
    PutOperation,
    PutWritesOperation,
    TypedValue,
    WritesFields,
    base64_bytes,
)
from .service import DEFAULT_THREAD_USER, CheckpointService, new_writes


def typed(value: TypedValue) -> domain.Typed:
    data = None if value.data is None else base64_bytes(value.data)
    if data is None and value.type != EMPTY_VALUE_TYPE:
        raise InvalidInput(
            [FieldError(["body", "data"], f"only type {EMPTY_VALUE_TYPE!r} has no data")]
        )
    return domain.Typed(value.type, data)


def owner(body: Owned) -> ThreadOwner:
    """Whom a write's thread is recorded under: an end user's own id, never
    another (a body naming one is refused)."""
    user = acting_end_user()
    if user is None:
        return ThreadOwner(body.user_id or DEFAULT_THREAD_USER, body.ttl_seconds)
    if body.user_id is not None:
        refuse_another_users_thread(body.user_id, user.user_id)
    return ThreadOwner(user.user_id, body.ttl_seconds, enforced=True)


def new_checkpoint(
    body: CheckpointFields, namespace: str, checkpoint_id: str
) -> domain.NewCheckpoint:
    return domain.NewCheckpoint(
        checkpoint_ns=namespace,
        checkpoint_id=checkpoint_id,
        parent_checkpoint_id=body.parent_checkpoint_id,
        checkpoint=typed(body.checkpoint),
        channel_versions={
            channel: str(version) for channel, version in body.channel_versions.items()
        },
        metadata=body.metadata,
        new_values=[
            domain.ChannelValue(value.channel, value.version, typed(value))
            for value in body.new_values
        ],
    )


def pending_writes(body: WritesFields) -> list[domain.PendingWrite]:
    return [
        domain.PendingWrite(write.task_id, write.task_path, write.idx, write.channel, typed(write))
        for write in body.writes
    ]


def batch_operation(index: int, item: PutOperation | PutWritesOperation) -> CheckpointOperation:
    """An operation of a batch as its single route reads it; a problem in
    it is located at its place in the batch."""
    try:
        if isinstance(item, PutOperation):
            return new_checkpoint(item, item.checkpoint_ns, item.checkpoint_id)
        return new_writes(item.checkpoint_ns, item.checkpoint_id, pending_writes(item))
    except InvalidInput as error:
        raise InvalidInput(
            [
                FieldError(["body", "operations", index, *problem.loc[1:]], problem.msg)
                for problem in error.errors
            ]
        ) from None


async def apply_batch(service: CheckpointService, key: ThreadKey, body: OperationsRequest) -> None:
    """A thread's batch, in order, all or none."""
    operations = [batch_operation(index, item) for index, item in enumerate(body.operations)]
    await service.apply_operations(key, owner(body), operations)
