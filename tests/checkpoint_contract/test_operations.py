"""Checkpoint contract: a thread's batch of operations (`apply_operations`)
stores what the same puts and put_writes made one by one store, in their
order; a batch that cannot be stored whole stores nothing; encrypted, its
values are sealed as single writes' are."""

from collections.abc import Callable

import pytest
from sqlalchemy import select

from session_state.core.config import Settings
from session_state.core.encryption import ValueCipher
from session_state.core.errors import Forbidden
from session_state.db.engine import create_engine
from session_state.langgraph.checkpoints.domain import CheckpointOperation, NewWrites, ThreadOwner
from session_state.langgraph.checkpoints.store import CheckpointStore
from session_state.langgraph.checkpoints.tables import lg_channel_values, lg_checkpoints, lg_writes
from session_state.langgraph.sealing import SEALED_TYPE_PREFIX
from session_state.stores import Store

from .scenes import (
    NOW,
    OWNER,
    checkpoint,
    listed,
    of_thread,
    owner,
    thread,
    values_of,
    write,
    writes_of,
)


def _operations() -> list[CheckpointOperation]:
    return [
        checkpoint("c1", versions={"a": "1"}, values={"a": "alpha"}),
        NewWrites("", "c1", [write("t1", 0, "first")], replace=False),
        NewWrites("", "c1", [write("t1", 0, "kept out")], replace=False),
        NewWrites("", "c1", [write("t2", -1, "error 1")], replace=True),
        NewWrites("", "c1", [write("t2", -1, "error 2")], replace=True),
        checkpoint("c2", parent="c1", versions={"a": "2"}, values={"a": "beta"}),
        checkpoint("s1", ns="sub:1", versions={"a": "1"}, values={"a": "gamma"}),
    ]


def _distinct_operations() -> list[CheckpointOperation]:
    """A batch no two of whose operations write one row, as LangGraph's steps
    send them: to a stored thread, the PostgreSQL store sends it as one
    statement (tests/test_checkpoint_batch_statement.py)."""
    return [
        NewWrites("", "c1", [write("t1", 0, "first"), write("t1", 1, "second")], replace=False),
        NewWrites("", "c1", [write("t2", -1, "error")], replace=True),
        checkpoint("c2", parent="c1", versions={"a": "2", "b": "1"}, values={"a": "beta"}),
        checkpoint("s1", ns="sub:1", versions={"a": "1"}, values={"a": "gamma"}),
        NewWrites("sub:1", "s1", [write("t3", 0, "in the subgraph")], replace=False),
        # A value c2 stored already, sent again: the first one stays.
        checkpoint(
            "c3",
            parent="c2",
            versions={"a": "2", "b": "1"},
            values={"a": "beta again"},
            metadata={"step": 2},
        ),
    ]


async def _one_by_one(
    checkpoints: CheckpointStore,
    thread_id: str,
    operations: Callable[[], list[CheckpointOperation]] = _operations,
) -> None:
    for operation in operations():
        if isinstance(operation, NewWrites):
            await checkpoints.put_writes(
                thread(thread_id),
                OWNER,
                operation.checkpoint_ns,
                operation.checkpoint_id,
                operation.writes,
                operation.replace,
                NOW,
            )
        else:
            await checkpoints.put_checkpoint(thread(thread_id), OWNER, operation, NOW)


async def test_a_batch_stores_what_its_operations_one_by_one_store(checkpoints: CheckpointStore):
    await checkpoints.apply_operations(thread("batched"), OWNER, _operations(), NOW)
    await _one_by_one(checkpoints, "single")

    batched, _ = await listed(checkpoints, thread("batched"))
    single, _ = await listed(checkpoints, thread("single"))

    assert batched == of_thread(single, "batched")
    assert [(c.checkpoint_ns, c.checkpoint_id) for c in batched] == [
        ("sub:1", "s1"),
        ("", "c2"),
        ("", "c1"),
    ]
    c1 = batched[-1]
    assert values_of(c1) == {"a": "alpha"}
    assert writes_of(c1) == [("", "t1", 0, "first"), ("", "t2", -1, "error 2")]


async def _stored_thread(checkpoints: CheckpointStore, thread_id: str) -> None:
    """A thread with a checkpoint and two writes that a batch then meets."""
    key = thread(thread_id)
    await checkpoints.put_checkpoint(
        key, OWNER, checkpoint("c1", versions={"a": "1", "b": "1"}, values={"b": "bee"}), NOW
    )
    await checkpoints.put_writes(key, OWNER, "", "c1", [write("t1", 0, "stored")], False, NOW)
    await checkpoints.put_writes(key, OWNER, "", "c1", [write("t2", -1, "stored")], True, NOW)


@pytest.mark.parametrize("operations", [_operations, _distinct_operations])
async def test_a_batch_to_a_stored_thread_stores_what_its_operations_one_by_one_store(
    checkpoints: CheckpointStore, operations: Callable[[], list[CheckpointOperation]]
):
    for thread_id in ("batched", "single"):
        await _stored_thread(checkpoints, thread_id)
    await checkpoints.apply_operations(thread("batched"), OWNER, operations(), NOW + 1)
    await _one_by_one(checkpoints, "single", operations)

    batched, _ = await listed(checkpoints, thread("batched"))
    single, _ = await listed(checkpoints, thread("single"))
    assert batched == of_thread(single, "batched")
    c1 = next(found for found in batched if found.checkpoint_id == "c1")
    # The stored ordinary write is kept, the stored special one replaced.
    assert ("", "t1", 0, "stored") in writes_of(c1)
    assert ("", "t2", -1, "stored") not in writes_of(c1)
    if operations is _distinct_operations:
        c3 = next(found for found in batched if found.checkpoint_id == "c3")
        assert values_of(c3) == {"a": "beta", "b": "bee"}
        assert c3.metadata == {"step": 2}


async def test_a_batch_that_cannot_be_stored_whole_stores_nothing(checkpoints: CheckpointStore):
    # The last operation's metadata is no JSON: the earlier ones are undone.
    broken = checkpoint("c3", metadata={"step": {1, 2}})
    with pytest.raises(Exception):  # noqa: B017 (the driver's own error, per backend)
        await checkpoints.apply_operations(thread(), OWNER, [*_operations(), broken], NOW)
    assert await listed(checkpoints, thread()) == ([], False)


async def test_a_batch_on_another_users_thread_is_forbidden_and_stores_nothing(
    checkpoints: CheckpointStore,
):
    await checkpoints.put_checkpoint(thread(), owner(user_id="ada"), checkpoint("c0"), NOW)
    bob = ThreadOwner("bob", None, enforced=True)
    with pytest.raises(Forbidden):
        await checkpoints.apply_operations(thread(), bob, _operations(), NOW)
    found, _ = await listed(checkpoints, thread())
    assert [c.checkpoint_id for c in found] == ["c0"]


async def test_a_batchs_values_are_sealed_when_encryption_is_on(
    store: Store, cipher: ValueCipher | None, database_url: str
):
    if cipher is None:
        pytest.skip("encryption off: nothing to seal")
    checkpoints = store.checkpoint_store(cipher)
    await checkpoints.apply_operations(thread(), OWNER, _operations(), NOW)
    engine = create_engine(Settings(database_url=database_url))
    try:
        async with engine.connect() as connection:
            for column in (
                lg_checkpoints.c.checkpoint_type,
                lg_channel_values.c.value_type,
                lg_writes.c.value_type,
            ):
                tags = list((await connection.execute(select(column))).scalars())
                assert tags, column
                assert all(tag.startswith(SEALED_TYPE_PREFIX) for tag in tags), column
    finally:
        await engine.dispose()
