"""A thread's batch of puts and put_writes on PostgreSQL: sent as one
statement when the thread is stored and no two operations write one row,
in a transaction otherwise, and stored whole or not at all either way. The
contract suite (tests/checkpoint_contract/test_operations.py) checks that
both store what the operations one by one store; this proves which one ran,
by the statements prepared on a store's one connection."""

import asyncio
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from session_state.backends.postgresql import PostgresStore
from session_state.core.config import Settings
from session_state.langgraph.checkpoints.domain import CheckpointOperation, NewWrites
from session_state.langgraph.checkpoints.postgresql import (
    _BATCH_TO_LIVE_THREAD,
    PostgresCheckpoints,
)

from .checkpoint_contract.scenes import NOW, OWNER, checkpoint, listed, thread, write


@pytest.fixture
async def one_connection(postgres_url: str) -> AsyncIterator[PostgresStore]:
    """A store whose every statement goes through one connection."""
    settings = Settings(database_url=postgres_url, db_pool_size=1, append_batch_size=1)
    store = await PostgresStore.connect(settings)
    yield store
    await store.close()


async def _prepared(store: PostgresStore) -> bool:
    """Whether the batch statement was ever sent on the store's connection."""
    async with store.pool.acquire() as connection:
        found: int = await connection.fetchval(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1",
            _BATCH_TO_LIVE_THREAD.text,
        )
    return found > 0


def _step(checkpoint_id: str, parent: str) -> list[CheckpointOperation]:
    """What one LangGraph step sends: its task's writes, then its checkpoint."""
    return [
        NewWrites("", parent, [write("task", 0, f"to {checkpoint_id}")], replace=False),
        checkpoint(checkpoint_id, parent=parent, versions={"a": checkpoint_id}, values={"a": "x"}),
    ]


async def test_a_step_to_a_stored_thread_is_one_statement(one_connection: PostgresStore):
    checkpoints = one_connection.checkpoint_store()
    assert isinstance(checkpoints, PostgresCheckpoints)
    key = thread(f"t-{uuid.uuid4().hex[:8]}")
    await checkpoints.put_checkpoint(key, OWNER, checkpoint("c1"), NOW)
    assert not await _prepared(one_connection)

    await checkpoints.apply_operations(key, OWNER, _step("c2", "c1"), NOW)

    assert await _prepared(one_connection)
    found, _ = await listed(checkpoints, key)
    assert [c.checkpoint_id for c in found] == ["c2", "c1"]


async def test_a_batch_that_writes_one_row_twice_takes_the_transaction(
    one_connection: PostgresStore,
):
    checkpoints = one_connection.checkpoint_store()
    key = thread(f"t-{uuid.uuid4().hex[:8]}")
    await checkpoints.put_checkpoint(key, OWNER, checkpoint("c1"), NOW)
    twice = [
        NewWrites("", "c1", [write("task", -1, "error 1")], replace=True),
        NewWrites("", "c1", [write("task", -1, "error 2")], replace=True),
    ]
    await checkpoints.apply_operations(key, OWNER, twice, NOW)
    assert not await _prepared(one_connection)
    found, _ = await listed(checkpoints, key)
    assert [(w.task_id, w.idx, w.value.data) for w in found[0].writes] == [("task", -1, b"error 2")]


async def test_a_batch_the_database_refuses_in_its_one_statement_stores_nothing(
    one_connection: PostgresStore,
):
    checkpoints = one_connection.checkpoint_store()
    key = thread(f"t-{uuid.uuid4().hex[:8]}")
    await checkpoints.put_checkpoint(key, OWNER, checkpoint("c1"), NOW)
    # JSONB holds no NUL character: the last operation fails in PostgreSQL.
    refused = checkpoint("c3", parent="c2", metadata={"note": "\x00"})
    with pytest.raises(asyncpg.PostgresError):
        await checkpoints.apply_operations(key, OWNER, [*_step("c2", "c1"), refused], NOW)
    assert await _prepared(one_connection)
    found, _ = await listed(checkpoints, key)
    assert [c.checkpoint_id for c in found] == ["c1"]
    assert found[0].writes == []


async def test_batches_racing_deletes_of_their_thread_leave_no_rows_without_a_thread(
    postgres_url: str,
):
    """A batch that finds its thread deleted under it writes nothing or
    opens the thread again: never values, checkpoints or writes without a
    thread, which a new thread of that id would find. Real concurrency: a
    pool of connections, the batch and the delete sent at once, round
    after round; the batches to a stored thread took the one statement."""
    store = await PostgresStore.connect(Settings(database_url=postgres_url, db_pool_size=4))
    try:
        checkpoints = store.checkpoint_store()
        key = thread(f"race-{uuid.uuid4().hex[:8]}")
        outcomes = {"deleted": 0, "kept": 0}
        for round_ in range(40):
            await checkpoints.put_checkpoint(key, OWNER, checkpoint(f"c{round_:02}a"), NOW)
            step = _step(f"c{round_:02}b", f"c{round_:02}a")
            _, deleted = await asyncio.gather(
                checkpoints.apply_operations(key, OWNER, step, NOW),
                checkpoints.delete_thread(key),
            )
            async with store.pool.acquire() as connection:
                thread_rows = await connection.fetchval(
                    "SELECT count(*) FROM lg_threads WHERE app_name = $1 AND thread_id = $2",
                    key.app_name,
                    key.thread_id,
                )
                for table in ("lg_checkpoints", "lg_channel_values", "lg_writes"):
                    rows = await connection.fetchval(
                        f"SELECT count(*) FROM {table} WHERE app_name = $1 AND thread_id = $2",
                        key.app_name,
                        key.thread_id,
                    )
                    assert thread_rows or not rows, (round_, table, rows)
            outcomes["kept" if thread_rows else "deleted"] += 1
            assert deleted
        assert await _prepared(store)
    finally:
        await store.close()
    # Both orders happened: the race was run, not serialised away.
    assert outcomes["deleted"] and outcomes["kept"], outcomes
