"""Checkpoint contract: the checkpoints of an app's live threads (LangGraph's
list with no config) come newest id first, then thread id and namespace
descending, each with its own thread's values and writes (two threads may
hold one channel at one version), of one user when asked, in keyset pages;
an expired thread's are left out. Run plaintext and encrypted."""

from session_state.langgraph.checkpoints.domain import AppCheckpointQuery, StoredCheckpoint
from session_state.langgraph.checkpoints.store import CheckpointStore

from .scenes import BUDGET, NOW, checkpoint, owner, thread, values_of, write, writes_of


async def _listed(
    checkpoints: CheckpointStore, now: float = NOW, **query: object
) -> tuple[list[StoredCheckpoint], bool]:
    return await checkpoints.list_app_checkpoints(
        "graphs",
        AppCheckpointQuery(**query),
        BUDGET,
        now,  # type: ignore[arg-type]
    )


async def _put(checkpoints: CheckpointStore, thread_id: str, checkpoint_id: str, **kwargs) -> None:
    user = kwargs.pop("user", "ada")
    ttl = kwargs.pop("ttl", None)
    await checkpoints.put_checkpoint(
        thread(thread_id),
        owner(ttl, user),
        checkpoint(
            checkpoint_id,
            versions={"messages": "1"},
            values={"messages": f"{thread_id}'s"},
            **kwargs,
        ),
        NOW,
    )


async def test_every_threads_checkpoints_newest_first_each_with_its_own_values(
    checkpoints: CheckpointStore,
):
    await _put(checkpoints, "a", "c1")
    await _put(checkpoints, "b", "c2", user="bo")
    await _put(checkpoints, "a", "c3", ns="child")
    await checkpoints.put_writes(thread("b"), owner(), "", "c2", [write("t", 0, "b's")], False, NOW)
    await checkpoints.put_checkpoint(thread("a", "other"), owner(), checkpoint("c9"), NOW)

    found, more = await _listed(checkpoints)

    assert more is False
    assert [(c.checkpoint_id, c.thread_id, c.checkpoint_ns) for c in found] == [
        ("c3", "a", "child"),
        ("c2", "b", ""),
        ("c1", "a", ""),
    ]
    assert [values_of(c) for c in found] == [
        {"messages": "a's"},
        {"messages": "b's"},
        {"messages": "a's"},
    ]
    assert writes_of(found[1]) == [("", "t", 0, "b's")]
    assert [c.checkpoint_id for c in (await _listed(checkpoints, user_id="bo"))[0]] == ["c2"]
    assert [c.checkpoint_id for c in (await _listed(checkpoints, checkpoint_ns=""))[0]] == [
        "c2",
        "c1",
    ]
    assert [c.checkpoint_id for c in (await _listed(checkpoints, before="c3"))[0]] == ["c2", "c1"]


async def test_pages_follow_ties_between_threads_and_leave_expired_threads_out(
    checkpoints: CheckpointStore,
):
    for thread_id in ("t1", "t2", "t3"):
        await _put(checkpoints, thread_id, "c1")
    await _put(checkpoints, "short", "c2", ttl=10)

    first, more = await _listed(checkpoints, limit=2)
    last = first[-1]
    rest, after = await _listed(
        checkpoints, after=(last.checkpoint_id, last.thread_id, last.checkpoint_ns)
    )

    assert more is True and after is False
    assert [(c.checkpoint_id, c.thread_id) for c in first + rest] == [
        ("c2", "short"),
        ("c1", "t3"),
        ("c1", "t2"),
        ("c1", "t1"),
    ]
    later, _ = await _listed(checkpoints, NOW + 10)
    assert [c.thread_id for c in later] == ["t3", "t2", "t1"]
