"""Checkpoint contract: a checkpoint is read back as it was put, with the
values its channel versions name and its pending writes; a list is newest
first, narrowed by namespace, id and `before`, paged by `after`, `limit`
and the byte budget; a missing thread lists nothing."""

import asyncio
from dataclasses import replace

from session_state.langgraph.checkpoints.domain import ChannelValue, StoredCheckpoint, Typed
from session_state.langgraph.checkpoints.store import CheckpointStore

from .scenes import (
    NOW,
    OWNER,
    checkpoint,
    empty_value,
    ids,
    listed,
    owner,
    thread,
    typed,
    values_of,
    write,
    writes_of,
)


async def test_a_checkpoint_is_read_back_as_it_was_put(checkpoints: CheckpointStore):
    put = checkpoint(
        "c2",
        parent="c1",
        versions={"messages": "2", "topic": "1"},
        values={"messages": "[1, 2]", "topic": "flights"},
        metadata={"source": "loop", "step": 1, "writes": {"agent": [1.5, None, True]}},
    )
    await checkpoints.put_checkpoint(thread(), OWNER, put, NOW)

    (found,), more = await listed(checkpoints, thread())

    assert more is False
    # Values in any order (PostgreSQL's JSONB orders the versions' keys its own way).
    assert replace(found, values=sorted(found.values, key=lambda value: value.channel)) == (
        StoredCheckpoint(
            thread_id="t1",
            checkpoint_ns="",
            checkpoint_id="c2",
            parent_checkpoint_id="c1",
            checkpoint=put.checkpoint,
            metadata=put.metadata,
            channel_versions={"messages": "2", "topic": "1"},
            values=[
                ChannelValue("messages", "2", typed("[1, 2]")),
                ChannelValue("topic", "1", typed("flights")),
            ],
            writes=[],
        )
    )


async def test_a_checkpoint_of_the_same_id_is_replaced(checkpoints: CheckpointStore):
    await checkpoints.put_checkpoint(
        thread(), OWNER, checkpoint("c1", metadata={"step": 0}, body="first"), NOW
    )
    replacing = checkpoint(
        "c1",
        parent="c0",
        versions={"a": "1"},
        values={"a": "x"},
        metadata={"step": 5},
        body="again",
    )
    await checkpoints.put_checkpoint(thread(), OWNER, replacing, NOW + 1)

    (found,), _ = await listed(checkpoints, thread(), NOW + 1)

    assert (found.parent_checkpoint_id, found.checkpoint, found.metadata) == (
        "c0",
        typed("again"),
        {"step": 5},
    )
    assert values_of(found) == {"a": "x"}


async def test_a_value_stored_already_is_kept_and_shared_by_its_version(
    checkpoints: CheckpointStore,
):
    first = checkpoint("c1", versions={"a": "1"}, values={"a": "first"})
    # The same (channel, version) sent again with other bytes: the stored one stays.
    resent = checkpoint("c2", versions={"a": "1", "b": "1"}, values={"a": "second", "b": "b1"})
    # No new values: both versions are stored already.
    bare = checkpoint("c3", versions={"a": "1", "b": "1"})
    for put in (first, resent, bare):
        await checkpoints.put_checkpoint(thread(), OWNER, put, NOW)

    found, _ = await listed(checkpoints, thread())

    assert [(stored.checkpoint_id, values_of(stored)) for stored in found] == [
        ("c3", {"a": "first", "b": "b1"}),
        ("c2", {"a": "first", "b": "b1"}),
        ("c1", {"a": "first"}),
    ]


async def test_a_version_without_a_stored_value_is_left_out_and_empty_is_kept(
    checkpoints: CheckpointStore,
):
    put = checkpoint("c1", versions={"a": "1", "b": "1", "never_sent": "7"}, values={"a": "x"})
    put = replace(put, new_values=[*put.new_values, empty_value("b", "1")])
    await checkpoints.put_checkpoint(thread(), OWNER, put, NOW)

    (found,), _ = await listed(checkpoints, thread())

    assert found.channel_versions == {"a": "1", "b": "1", "never_sent": "7"}
    assert sorted(found.values, key=lambda value: value.channel) == [
        ChannelValue("a", "1", typed("x")),
        ChannelValue("b", "1", Typed("empty", None)),
    ]


async def test_a_namespace_has_its_own_values(checkpoints: CheckpointStore):
    await checkpoints.put_checkpoint(
        thread(), OWNER, checkpoint("c1", versions={"a": "1"}, values={"a": "root"}), NOW
    )
    # A subgraph's checkpoint naming the same version it never sent.
    await checkpoints.put_checkpoint(
        thread(), OWNER, checkpoint("c1", ns="child", versions={"a": "1"}), NOW
    )

    (child,), _ = await listed(checkpoints, thread(), checkpoint_ns="child")

    assert child.values == []


async def test_writes_come_with_their_checkpoint_in_langgraph_order(
    checkpoints: CheckpointStore,
):
    key = thread()
    # Writes may come before their checkpoint (a task's writes, then the step's checkpoint).
    await checkpoints.put_writes(
        key, OWNER, "", "c1", [write("task-b", 0, "b0"), write("task-a", 1, "a1")], False, NOW
    )
    await checkpoints.put_writes(
        key,
        OWNER,
        "",
        "c1",
        [write("task-a", 0, "a0", path="~0"), write("z", -1, "err")],
        False,
        NOW,
    )
    await checkpoints.put_writes(key, OWNER, "", "c2", [write("task-a", 0, "other")], False, NOW)
    await checkpoints.put_writes(key, OWNER, "child", "c1", [write("task-a", 0, "ns")], False, NOW)
    for checkpoint_id in ("c1", "c2"):
        await checkpoints.put_checkpoint(key, OWNER, checkpoint(checkpoint_id), NOW)

    (c1,), _ = await listed(checkpoints, key, checkpoint_ns="", checkpoint_id="c1")

    # By task path, then task id, then index.
    assert writes_of(c1) == [
        ("", "task-a", 1, "a1"),
        ("", "task-b", 0, "b0"),
        ("", "z", -1, "err"),
        ("~0", "task-a", 0, "a0"),
    ]
    assert c1.writes[0].channel == "out"


async def test_a_write_is_kept_unless_replace_is_asked(checkpoints: CheckpointStore):
    key = thread()
    await checkpoints.put_checkpoint(key, OWNER, checkpoint("c1"), NOW)
    await checkpoints.put_writes(key, OWNER, "", "c1", [write("t", 0, "first")], False, NOW)
    await checkpoints.put_writes(key, OWNER, "", "c1", [write("t", 0, "kept out")], False, NOW)
    (kept,), _ = await listed(checkpoints, key)

    await checkpoints.put_writes(
        key, OWNER, "", "c1", [write("t", 0, "replaced", path="p", channel="c")], True, NOW
    )
    (replaced,), _ = await listed(checkpoints, key)

    assert writes_of(kept) == [("", "t", 0, "first")]
    assert writes_of(replaced) == [("p", "t", 0, "replaced")]
    assert replaced.writes[0].channel == "c"


async def test_no_writes_store_nothing_and_a_thread_of_writes_lists_no_checkpoint(
    checkpoints: CheckpointStore,
):
    await checkpoints.put_writes(thread("t1"), OWNER, "", "c1", [], False, NOW)
    await checkpoints.put_writes(thread("t2"), OWNER, "", "c1", [write("t", 0, "x")], True, NOW)

    assert await listed(checkpoints, thread("t1")) == ([], False)
    assert await listed(checkpoints, thread("t2")) == ([], False)


async def test_a_missing_thread_lists_nothing_and_apps_are_apart(checkpoints: CheckpointStore):
    await checkpoints.put_checkpoint(thread("t1", "app-a"), OWNER, checkpoint("c1"), NOW)

    assert await listed(checkpoints, thread("t1", "app-b")) == ([], False)
    assert await listed(checkpoints, thread("t2", "app-a")) == ([], False)
    assert await ids(checkpoints, thread("t1", "app-a")) == ["c1"]


async def _put_tree(checkpoints: CheckpointStore) -> None:
    """c1..c4 in the root namespace, c2 and c3 also in "child"."""
    for checkpoint_id in ("c1", "c2", "c3", "c4"):
        await checkpoints.put_checkpoint(thread(), OWNER, checkpoint(checkpoint_id), NOW)
    for checkpoint_id in ("c2", "c3"):
        await checkpoints.put_checkpoint(
            thread(), OWNER, checkpoint(checkpoint_id, ns="child"), NOW
        )


async def test_a_list_is_newest_first_then_by_namespace_and_narrowed_as_asked(
    checkpoints: CheckpointStore,
):
    await _put_tree(checkpoints)

    every = await listed(checkpoints, thread())
    assert [(c.checkpoint_id, c.checkpoint_ns) for c in every[0]] == [
        ("c4", ""),
        ("c3", "child"),
        ("c3", ""),
        ("c2", "child"),
        ("c2", ""),
        ("c1", ""),
    ]
    assert await ids(checkpoints, thread(), checkpoint_ns="") == ["c4", "c3", "c2", "c1"]
    assert await ids(checkpoints, thread(), checkpoint_ns="child") == ["c3", "c2"]
    assert await ids(checkpoints, thread(), checkpoint_ns="other") == []
    assert await ids(checkpoints, thread(), checkpoint_id="c2") == ["c2", "c2"]
    assert await ids(checkpoints, thread(), checkpoint_ns="", checkpoint_id="c9") == []
    assert await ids(checkpoints, thread(), checkpoint_ns="", before="c3") == ["c2", "c1"]
    assert await ids(checkpoints, thread(), before="c1") == []


async def test_pages_by_limit_and_after_walk_the_whole_list_once(checkpoints: CheckpointStore):
    await _put_tree(checkpoints)
    whole, _ = await listed(checkpoints, thread())

    walked = []
    after = None
    while True:
        page, more = await listed(checkpoints, thread(), limit=4, after=after)
        walked += page
        if not more:
            break
        after = (page[-1].checkpoint_id, page[-1].checkpoint_ns)

    assert walked == whole
    assert [len(page) for page in (walked[:4], walked[4:])] == [4, 2]
    # Exactly `limit` left: no more follow.
    assert (await listed(checkpoints, thread(), limit=6))[1] is False
    assert (await listed(checkpoints, thread(), limit=5))[1] is True


async def test_a_page_ends_within_the_byte_budget_but_holds_one_at_least(
    checkpoints: CheckpointStore,
):
    for checkpoint_id in ("c1", "c2", "c3"):
        big = checkpoint(checkpoint_id, body=checkpoint_id * 500)  # 1,000 bytes
        await checkpoints.put_checkpoint(thread(), OWNER, big, NOW)

    one, one_more = await listed(checkpoints, thread(), budget=10)
    some, some_more = await listed(checkpoints, thread(), budget=2_500)

    assert ([c.checkpoint_id for c in one], one_more) == (["c3"], True)
    assert 1 <= len(some) <= 2 and some_more is True
    assert [c.checkpoint_id for c in some] == ["c3", "c2"][: len(some)]


async def test_concurrent_puts_to_a_new_thread_from_two_processes_all_land(
    checkpoints: CheckpointStore, other_checkpoints: CheckpointStore
):
    key = thread("raced")
    ttl = owner(ttl_seconds=60)

    await asyncio.gather(
        *(
            store.put_checkpoint(key, ttl, checkpoint(f"c{index}{side}"), NOW)
            for index in range(4)
            for side, store in (("a", checkpoints), ("b", other_checkpoints))
        ),
        *(
            store.put_writes(key, ttl, "", "c0a", [write("task", 0, side)], False, NOW)
            for side, store in (("a", checkpoints), ("b", other_checkpoints))
        ),
    )

    found, _ = await listed(checkpoints, key, NOW + 59)
    assert sorted(c.checkpoint_id for c in found) == sorted(
        f"c{index}{side}" for index in range(4) for side in "ab"
    )
    # Two writes of one (task, index), neither replacing: one is kept, whole.
    (c0a,) = [c for c in found if c.checkpoint_id == "c0a"]
    assert writes_of(c0a) in ([("", "task", 0, "a")], [("", "task", 0, "b")])
