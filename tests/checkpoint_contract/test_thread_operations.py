"""Checkpoint contract: a thread is deleted whole; copied whole onto a new
id (or not at all); pruned to each namespace's latest checkpoint with its
writes and values, unless it uses a DeltaChannel; and the checkpoints of
runs are deleted with their writes. Each touches its app's threads only."""

from session_state.langgraph.checkpoints.store import CheckpointStore

from .scenes import (
    NOW,
    OWNER,
    checkpoint,
    ids,
    listed,
    of_thread,
    owner,
    thread,
    values_of,
    write,
    writes_of,
)


async def _put_history(checkpoints: CheckpointStore, thread_id: str, app_name: str = "graphs"):
    """c1..c3 in the root namespace (c3 with two writes), c1..c2 in "child",
    channel `a` at a new version each step."""
    key = thread(thread_id, app_name)
    for step, checkpoint_id in enumerate(("c1", "c2", "c3"), start=1):
        put = checkpoint(
            checkpoint_id,
            parent=None if step == 1 else f"c{step - 1}",
            versions={"a": str(step), "b": "1"},
            values={"a": f"a{step}", **({"b": "b1"} if step == 1 else {})},
            metadata={"step": step, "run_id": f"run-{step}"},
        )
        await checkpoints.put_checkpoint(key, OWNER, put, NOW)
        await checkpoints.put_writes(
            key, OWNER, "", checkpoint_id, [write("t", 0, f"w{step}")], False, NOW
        )
    await checkpoints.put_writes(key, OWNER, "", "c3", [write("t", 1, "w3b")], False, NOW)
    for checkpoint_id in ("c1", "c2"):
        await checkpoints.put_checkpoint(
            key, OWNER, checkpoint(checkpoint_id, ns="child", metadata={"run_id": "run-1"}), NOW
        )


async def test_a_thread_is_deleted_whole_and_only_it(checkpoints: CheckpointStore):
    await _put_history(checkpoints, "t1")
    await _put_history(checkpoints, "t2")
    await _put_history(checkpoints, "t1", app_name="other")

    assert await checkpoints.delete_thread(thread("t1")) is True
    assert await checkpoints.delete_thread(thread("t1")) is False
    assert await checkpoints.delete_thread(thread("never")) is False

    assert await listed(checkpoints, thread("t1")) == ([], False)
    assert len(await ids(checkpoints, thread("t2"))) == 5
    assert len(await ids(checkpoints, thread("t1", "other"))) == 5
    # Put again, it starts empty: no value or write of the deleted thread is left.
    await checkpoints.put_checkpoint(
        thread("t1"), OWNER, checkpoint("c3", versions={"a": "3"}), NOW
    )
    (again,), _ = await listed(checkpoints, thread("t1"))
    assert (again.values, again.writes) == ([], [])


async def test_a_copy_holds_everything_the_source_holds(checkpoints: CheckpointStore):
    await _put_history(checkpoints, "source")
    source, _ = await listed(checkpoints, thread("source"))

    assert await checkpoints.copy_thread(thread("source"), thread("copy"), NOW + 1) == "copied"

    copied, _ = await listed(checkpoints, thread("copy"), NOW + 1)
    assert copied == of_thread(source, "copy")
    # Apart from then on: the copy's writes are its own.
    await checkpoints.delete_thread(thread("source"))
    await checkpoints.put_writes(thread("copy"), OWNER, "", "c3", [write("t", 2, "x")], False, NOW)
    assert await listed(checkpoints, thread("copy"), NOW + 1) != (source, False)
    assert await listed(checkpoints, thread("source")) == ([], False)


async def test_a_copy_keeps_the_idle_time_from_the_moment_of_the_copy(
    checkpoints: CheckpointStore,
):
    await checkpoints.put_checkpoint(thread("source"), owner(10), checkpoint("c1"), NOW)

    assert await checkpoints.copy_thread(thread("source"), thread("copy"), NOW + 5) == "copied"

    assert await ids(checkpoints, thread("copy"), NOW + 14.999) == ["c1"]
    assert await ids(checkpoints, thread("copy"), NOW + 15) == []


async def test_a_copy_onto_a_live_thread_or_from_a_missing_one_copies_nothing(
    checkpoints: CheckpointStore,
):
    await _put_history(checkpoints, "source")
    await checkpoints.put_checkpoint(thread("target"), OWNER, checkpoint("t1"), NOW)

    taken = await checkpoints.copy_thread(thread("source"), thread("target"), NOW)
    missing = await checkpoints.copy_thread(thread("never"), thread("copy"), NOW)
    other_app = await checkpoints.copy_thread(thread("source", "other"), thread("copy"), NOW)

    assert (taken, missing, other_app) == ("target_exists", "source_missing", "source_missing")
    assert await ids(checkpoints, thread("target")) == ["t1"]
    assert await listed(checkpoints, thread("copy")) == ([], False)


async def test_a_copy_goes_to_the_target_app(checkpoints: CheckpointStore):
    await _put_history(checkpoints, "source")
    source, _ = await listed(checkpoints, thread("source"))

    outcome = await checkpoints.copy_thread(thread("source"), thread("copy", "other"), NOW)

    assert outcome == "copied"
    assert await listed(checkpoints, thread("copy", "other")) == (of_thread(source, "copy"), False)
    assert await listed(checkpoints, thread("copy")) == ([], False)


async def test_keep_latest_keeps_each_namespaces_latest_with_its_writes_and_values(
    checkpoints: CheckpointStore,
):
    await _put_history(checkpoints, "t1")
    await _put_history(checkpoints, "untouched")
    untouched = await listed(checkpoints, thread("untouched"))

    assert await checkpoints.prune("graphs", ["t1", "t1", "never"], "keep_latest", NOW) == []

    found, _ = await listed(checkpoints, thread("t1"))
    assert [(c.checkpoint_id, c.checkpoint_ns) for c in found] == [("c3", ""), ("c2", "child")]
    assert values_of(found[0]) == {"a": "a3", "b": "b1"}
    assert writes_of(found[0]) == [("", "t", 0, "w3"), ("", "t", 1, "w3b")]
    assert await listed(checkpoints, thread("untouched")) == untouched
    # A pruned checkpoint put again has none of its old writes.
    await checkpoints.put_checkpoint(thread("t1"), OWNER, checkpoint("c2"), NOW)
    (again,), _ = await listed(checkpoints, thread("t1"), checkpoint_ns="", checkpoint_id="c2")
    assert again.writes == []


async def test_prune_by_delete_removes_the_threads(checkpoints: CheckpointStore):
    await _put_history(checkpoints, "t1")
    await _put_history(checkpoints, "t2")
    await _put_history(checkpoints, "t1", app_name="other")

    assert await checkpoints.prune("graphs", ["t1", "never"], "delete", NOW) == []
    assert await checkpoints.prune("graphs", [], "delete", NOW) == []
    assert await checkpoints.prune("graphs", [], "keep_latest", NOW) == []

    assert await listed(checkpoints, thread("t1")) == ([], False)
    assert len(await ids(checkpoints, thread("t2"))) == 5
    assert len(await ids(checkpoints, thread("t1", "other"))) == 5


async def test_keep_latest_leaves_a_delta_channel_thread_and_prunes_nothing(
    checkpoints: CheckpointStore,
):
    for thread_id in ("delta", "plain"):
        await _put_history(checkpoints, thread_id)
    # The mark LangGraph's DeltaChannel leaves in a checkpoint's metadata.
    marked = checkpoint("c4", metadata={"counters_since_delta_snapshot": {"a": 1}})
    await checkpoints.put_checkpoint(thread("delta"), OWNER, marked, NOW)
    before = [await listed(checkpoints, thread(name)) for name in ("delta", "plain")]

    refused = await checkpoints.prune("graphs", ["plain", "delta"], "keep_latest", NOW)

    assert refused == ["delta"]
    # As the service tells the caller: nothing was pruned, the other thread neither.
    assert [await listed(checkpoints, thread(name)) for name in ("delta", "plain")] == before


async def test_deleting_runs_deletes_their_checkpoints_with_their_writes(
    checkpoints: CheckpointStore,
):
    await _put_history(checkpoints, "t1")
    await _put_history(checkpoints, "t2")
    await _put_history(checkpoints, "t1", app_name="other")

    # run-1: c1 of both namespaces in t1 and t2; run-2: c2 of the root namespaces.
    assert await checkpoints.delete_runs("graphs", ["run-1", "run-2", "run-9"]) == 8
    assert await checkpoints.delete_runs("graphs", ["run-1"]) == 0
    assert await checkpoints.delete_runs("graphs", []) == 0

    for thread_id in ("t1", "t2"):
        (latest,), _ = await listed(checkpoints, thread(thread_id))
        assert (latest.checkpoint_id, writes_of(latest)) == (
            "c3",
            [("", "t", 0, "w3"), ("", "t", 1, "w3b")],
        )
        assert values_of(latest) == {"a": "a3", "b": "b1"}
    assert len(await ids(checkpoints, thread("t1", "other"))) == 5
    await checkpoints.put_checkpoint(thread("t1"), OWNER, checkpoint("c1"), NOW)
    (again,), _ = await listed(checkpoints, thread("t1"), checkpoint_ns="", checkpoint_id="c1")
    assert again.writes == []
