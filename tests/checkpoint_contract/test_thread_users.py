"""Checkpoint contract: a thread keeps the user of its first write; a write
that insists on its user (an end user's, `enforced`) is refused, whole, on
another user's thread, in the write's own transaction."""

import pytest

from session_state.core.errors import Forbidden
from session_state.langgraph.checkpoints.domain import ThreadOwner
from session_state.langgraph.checkpoints.store import CheckpointStore

from .scenes import NOW, checkpoint, ids, owner, thread, write


async def test_a_thread_records_the_user_of_its_first_write(checkpoints: CheckpointStore):
    assert await checkpoints.thread_user(thread("t1"), NOW) is None
    await checkpoints.put_checkpoint(thread("t1"), owner(user_id="ada"), checkpoint("c1"), NOW)
    await checkpoints.put_checkpoint(thread("t1"), owner(user_id="bob"), checkpoint("c2"), NOW)
    assert await checkpoints.thread_user(thread("t1"), NOW) == "ada"
    assert await checkpoints.thread_user(thread("t1", "other"), NOW) is None


async def test_an_expired_thread_has_no_user(checkpoints: CheckpointStore):
    await checkpoints.put_checkpoint(thread("t1"), owner(60, "ada"), checkpoint("c1"), NOW)
    assert await checkpoints.thread_user(thread("t1"), NOW + 59) == "ada"
    assert await checkpoints.thread_user(thread("t1"), NOW + 60) is None


async def test_an_enforced_write_to_another_users_thread_writes_nothing(
    checkpoints: CheckpointStore,
):
    await checkpoints.put_checkpoint(thread("t1"), owner(user_id="ada"), checkpoint("c1"), NOW)
    bob = ThreadOwner("bob", None, enforced=True)
    with pytest.raises(Forbidden):
        await checkpoints.put_checkpoint(thread("t1"), bob, checkpoint("c2"), NOW)
    with pytest.raises(Forbidden):
        await checkpoints.put_writes(thread("t1"), bob, "", "c1", [write("t", 0, "x")], False, NOW)
    assert await ids(checkpoints, thread("t1")) == ["c1"]
    # Its own thread, or a new one, takes the write.
    await checkpoints.put_checkpoint(thread("t2"), bob, checkpoint("c1"), NOW)
    await checkpoints.put_checkpoint(thread("t2"), bob, checkpoint("c2"), NOW)
    assert await checkpoints.thread_user(thread("t2"), NOW) == "bob"
