"""Checkpoint contract: every write stamps its thread with the writer's
clock, never moving the stamp back; an app's list holds its live threads,
latest stamp first (then thread id, descending), of one user when asked,
with the root graph's latest checkpoint, in keyset pages."""

from session_state.langgraph.checkpoints.domain import ThreadListQuery, ThreadSummary
from session_state.langgraph.checkpoints.store import CheckpointStore

from .scenes import NOW, OWNER, checkpoint, owner, thread, write


async def _listed(
    checkpoints: CheckpointStore,
    now: float = NOW,
    app_name: str = "graphs",
    user_id: str | None = None,
    after: tuple[float, str] | None = None,
    limit: int = 100,
) -> tuple[list[ThreadSummary], bool]:
    query = ThreadListQuery(user_id=user_id, after=after, limit=limit)
    return await checkpoints.list_threads(app_name, query, now)


async def _order(
    checkpoints: CheckpointStore,
    now: float = NOW,
    app_name: str = "graphs",
    user_id: str | None = None,
) -> list[str]:
    found, _ = await _listed(checkpoints, now, app_name, user_id)
    return [summary.thread_id for summary in found]


async def test_every_write_stamps_its_thread_and_the_stamp_never_moves_back(
    checkpoints: CheckpointStore, other_checkpoints: CheckpointStore
):
    key = thread("t1")
    await checkpoints.put_checkpoint(key, OWNER, checkpoint("c1"), NOW)
    [made], more = await _listed(checkpoints)
    assert made == ThreadSummary("t1", "ada", NOW, NOW, None, "c1")
    assert more is False
    # A live thread's checkpoint, then its writes alone, each move the stamp.
    await checkpoints.put_checkpoint(key, OWNER, checkpoint("c2", parent="c1"), NOW + 5)
    await other_checkpoints.put_writes(key, OWNER, "", "c2", [write("t", 0, "w")], False, NOW + 9)
    [stamped], _ = await _listed(checkpoints)
    assert (stamped.create_time, stamped.update_time) == (NOW, NOW + 9)
    assert stamped.latest_checkpoint_id == "c2"
    # A server whose clock is behind writes: the stamp stays.
    await other_checkpoints.put_checkpoint(key, OWNER, checkpoint("c3", parent="c2"), NOW + 1)
    [kept], _ = await _listed(checkpoints)
    assert (kept.update_time, kept.latest_checkpoint_id) == (NOW + 9, "c3")


async def test_threads_are_listed_latest_stamp_first_then_by_id(checkpoints: CheckpointStore):
    for thread_id, at in [("a", 1), ("b", 3), ("c", 3), ("d", 2)]:
        await checkpoints.put_checkpoint(thread(thread_id), OWNER, checkpoint("c1"), NOW + at)
    assert await _order(checkpoints, NOW + 10) == ["c", "b", "d", "a"]
    await checkpoints.put_writes(thread("a"), OWNER, "", "c1", [write("t", 0, "w")], False, NOW + 4)
    assert await _order(checkpoints, NOW + 10) == ["a", "c", "b", "d"]


async def test_pages_follow_from_where_the_last_ended(checkpoints: CheckpointStore):
    for index in range(7):
        await checkpoints.put_checkpoint(thread(f"t{index}"), OWNER, checkpoint("c1"), NOW + index)
    seen: list[str] = []
    after = None
    while True:
        found, more = await _listed(checkpoints, NOW + 10, after=after, limit=3)
        seen.extend(summary.thread_id for summary in found)
        if not more:
            break
        after = (found[-1].update_time, found[-1].thread_id)
    assert seen == [f"t{index}" for index in reversed(range(7))]
    assert len((await _listed(checkpoints, NOW + 10, limit=7))[0]) == 7
    assert (await _listed(checkpoints, NOW + 10, limit=7))[1] is False


async def test_one_users_live_threads_of_one_app(checkpoints: CheckpointStore):
    await checkpoints.put_checkpoint(thread("t1"), owner(user_id="ada"), checkpoint("c1"), NOW)
    await checkpoints.put_checkpoint(thread("t2"), owner(user_id="bob"), checkpoint("c1"), NOW + 1)
    await checkpoints.put_checkpoint(thread("t3"), owner(60, "ada"), checkpoint("c1"), NOW + 2)
    await checkpoints.put_checkpoint(thread("t4", "other"), OWNER, checkpoint("c1"), NOW + 3)
    assert await _order(checkpoints, NOW + 3, user_id="ada") == ["t3", "t1"]
    assert await _order(checkpoints, NOW + 3, user_id="bob") == ["t2"]
    [expiring], _ = await _listed(checkpoints, NOW + 3, user_id="ada", limit=1)
    assert expiring.expire_time == NOW + 62
    # Expired at its expiry time, not yet swept: not listed.
    assert await _order(checkpoints, NOW + 62, user_id="ada") == ["t1"]
    assert await _order(checkpoints, NOW + 62) == ["t2", "t1"]
    assert await _order(checkpoints, NOW + 62, app_name="other") == ["t4"]


async def test_a_copy_is_a_thread_stamped_when_copied(checkpoints: CheckpointStore):
    await checkpoints.put_checkpoint(thread("t1"), OWNER, checkpoint("c1"), NOW)
    await checkpoints.put_checkpoint(thread("t1"), OWNER, checkpoint("c1", ns="sub"), NOW)
    assert await checkpoints.copy_thread(thread("t1"), thread("t2"), NOW + 5) == "copied"
    [copy, source], _ = await _listed(checkpoints, NOW + 5)
    assert copy == ThreadSummary("t2", "ada", NOW + 5, NOW + 5, None, "c1")
    assert source.thread_id == "t1"
