"""Checkpoint contract: a thread whose expiry time is at or before `now` is
missing for every reader from that moment, swept or not; each write pushes
a thread's expiry out by its idle time; a write to an expired thread makes
it anew; the sweep deletes expired threads, and only those, `batch` at a
time, and counts each once even when two processes sweep at once."""

import asyncio

from session_state.langgraph.checkpoints.store import CheckpointStore

from .scenes import NOW, OWNER, checkpoint, ids, listed, owner, thread, write

TTL = 10.0


async def test_a_thread_is_missing_from_the_moment_it_expires(checkpoints: CheckpointStore):
    await checkpoints.put_checkpoint(thread(), owner(TTL), checkpoint("c1"), NOW)

    assert await ids(checkpoints, thread(), NOW + TTL - 0.001) == ["c1"]
    assert await listed(checkpoints, thread(), NOW + TTL) == ([], False)
    assert await checkpoints.copy_thread(thread(), thread("copy"), NOW + TTL) == "source_missing"


async def test_each_write_pushes_the_expiry_out_by_the_idle_time(checkpoints: CheckpointStore):
    await checkpoints.put_checkpoint(thread(), owner(TTL), checkpoint("c1"), NOW)
    # Writes that name no idle time keep the thread's.
    await checkpoints.put_writes(thread(), OWNER, "", "c1", [write("t", 0, "x")], False, NOW + 5)
    await checkpoints.put_checkpoint(thread(), OWNER, checkpoint("c2"), NOW + 8)

    assert await ids(checkpoints, thread(), NOW + 8 + TTL - 0.001) == ["c2", "c1"]
    assert await ids(checkpoints, thread(), NOW + 8 + TTL) == []


async def test_a_write_with_another_idle_time_replaces_it(checkpoints: CheckpointStore):
    await checkpoints.put_checkpoint(thread("longer"), owner(TTL), checkpoint("c1"), NOW)
    await checkpoints.put_checkpoint(thread("longer"), owner(100), checkpoint("c2"), NOW + 1)
    await checkpoints.put_checkpoint(thread("kept"), OWNER, checkpoint("c1"), NOW)
    await checkpoints.put_checkpoint(thread("kept"), owner(TTL), checkpoint("c2"), NOW + 1)

    assert await ids(checkpoints, thread("longer"), NOW + 100) == ["c2", "c1"]
    assert await ids(checkpoints, thread("longer"), NOW + 101) == []
    assert await ids(checkpoints, thread("kept"), NOW + TTL) == ["c2", "c1"]
    assert await ids(checkpoints, thread("kept"), NOW + 1 + TTL) == []


async def test_a_thread_without_an_idle_time_never_expires(checkpoints: CheckpointStore):
    await checkpoints.put_checkpoint(thread(), OWNER, checkpoint("c1"), NOW)

    assert await ids(checkpoints, thread(), NOW * 10) == ["c1"]
    assert await checkpoints.sweep_expired(NOW * 10, 100) == 0


async def test_a_write_to_an_expired_thread_makes_it_anew(checkpoints: CheckpointStore):
    await checkpoints.put_checkpoint(
        thread(), owner(TTL), checkpoint("c1", versions={"a": "1"}, values={"a": "old"}), NOW
    )
    await checkpoints.put_writes(thread(), owner(TTL), "", "c2", [write("t", 0, "old")], False, NOW)
    later = NOW + TTL
    # The same version and the same write again: nothing of the expired thread is kept.
    await checkpoints.put_writes(thread(), OWNER, "", "c2", [write("t", 0, "new")], False, later)
    await checkpoints.put_checkpoint(
        thread(), OWNER, checkpoint("c2", versions={"a": "1"}, values={"a": "new"}), later
    )

    (found,), _ = await listed(checkpoints, thread(), later)
    assert found.checkpoint_id == "c2"
    assert [value.value.data for value in found.values] == [b"new"]
    assert [pending.value.data for pending in found.writes] == [b"new"]
    # Made anew without an idle time: it no longer expires.
    assert await ids(checkpoints, thread(), later * 10) == ["c2"]


async def test_a_copy_onto_an_expired_thread_replaces_it(checkpoints: CheckpointStore):
    await checkpoints.put_checkpoint(thread("source"), OWNER, checkpoint("s1"), NOW)
    await checkpoints.put_checkpoint(thread("target"), owner(TTL), checkpoint("t1"), NOW)

    outcome = await checkpoints.copy_thread(thread("source"), thread("target"), NOW + TTL)

    assert outcome == "copied"
    assert await ids(checkpoints, thread("target"), NOW + TTL) == ["s1"]


async def test_the_sweep_deletes_expired_threads_only_a_batch_at_a_time(
    checkpoints: CheckpointStore,
):
    for index in range(5):
        await checkpoints.put_checkpoint(thread(f"due{index}"), owner(TTL), checkpoint("c1"), NOW)
    await checkpoints.put_checkpoint(thread("later"), owner(TTL), checkpoint("c1"), NOW + 1)
    await checkpoints.put_checkpoint(thread("forever"), OWNER, checkpoint("c1"), NOW)

    assert await checkpoints.sweep_expired(NOW + TTL - 0.001, 2) == 0
    assert await checkpoints.sweep_expired(NOW + TTL, 2) == 5
    assert await checkpoints.sweep_expired(NOW + TTL, 2) == 0
    # Swept: not there even for a reader whose clock is behind.
    assert await ids(checkpoints, thread("due0"), NOW) == []
    assert await ids(checkpoints, thread("later"), NOW + TTL) == ["c1"]
    assert await ids(checkpoints, thread("forever"), NOW + TTL) == ["c1"]


async def test_two_sweeps_at_once_count_each_thread_once(
    checkpoints: CheckpointStore, other_checkpoints: CheckpointStore
):
    for index in range(12):
        await checkpoints.put_checkpoint(thread(f"due{index}"), owner(TTL), checkpoint("c1"), NOW)

    counts = await asyncio.gather(
        checkpoints.sweep_expired(NOW + TTL, 2), other_checkpoints.sweep_expired(NOW + TTL, 2)
    )

    assert sum(counts) == 12
    assert await checkpoints.sweep_expired(NOW + TTL, 2) == 0
