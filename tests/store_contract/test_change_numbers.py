"""Store contract: every write of a session row gives it a change number,
and a user's sessions are read in that order after a cursor (change number,
session id), so that a user stream resumes without gap or repeat (app.streams.live)
whatever the events' own times."""

import asyncio
import time

from session_state.sessions.domain import ChangeCursor, Expiry, UserChanges
from session_state.stores import Store

from .scenes import APP, NOW, append, create, event, key

START: ChangeCursor = (0, "")
FAR = 1 << 62  # past every tombstone


async def read_settled(
    store: Store,
    after: ChangeCursor,
    user_id: str = "ada",
    limit: int = 100,
    after_seq: int = FAR,
) -> UserChanges:
    """The changes once none waits for the horizon (on PostgreSQL, another
    test's transaction still running holds it back)."""
    deadline = time.monotonic() + 10
    while True:
        changes = await store.read_user_changes(APP, user_id, after_seq, after, limit, NOW + 1)
        if not changes.pending or time.monotonic() > deadline:
            return changes
        await asyncio.sleep(0.01)


async def _changed(store: Store, after: ChangeCursor, user_id: str = "ada") -> UserChanges:
    return await read_settled(store, after, user_id)


def _last(changes: UserChanges) -> ChangeCursor:
    return changes.sessions[-1].change_number, changes.sessions[-1].id


async def test_each_write_of_a_session_moves_it_past_the_cursor(store: Store):
    for name in ("s1", "s2", "s3"):
        await create(store, key(name))
    first = await _changed(store, START)
    assert [row.id for row in first.sessions] == ["s1", "s2", "s3"]
    assert not first.more_sessions
    cursor = _last(first)
    assert cursor[0] < first.horizon <= first.next_change
    assert (await _changed(store, cursor)).sessions == []

    # An event an hour older than the cursor's changes still moves its session.
    await append(store, key("s2"), event("e1", timestamp=NOW - 3600))
    moved = await _changed(store, cursor)
    assert [(row.id, row.revision) for row in moved.sessions] == [("s2", 1)]
    assert moved.sessions[0].update_time == NOW - 3600
    cursor = _last(moved)

    assert await store.set_labels(key("s3"), {"team": "a"}, None, None, NOW) == 0
    assert await store.set_expiry(key("s1"), Expiry(ttl_seconds=600), None, NOW) == 0
    relabelled = await _changed(store, cursor)
    assert [row.id for row in relabelled.sessions] == ["s3", "s1"]
    cursor = _last(relabelled)

    removed = await store.remove_events(key("s2"), 0, 1, None, NOW)
    assert removed is not None
    after_removal = await _changed(store, cursor)
    assert [(row.id, row.revision, row.removed) for row in after_removal.sessions] == [
        ("s2", 2, True)
    ]
    cursor = _last(after_removal)

    # A pop (the newest events removed and returned, in one store call).
    await append(store, key("s1"), event("e2"))
    popped = await store.pop_newest(key("s1"), 1, None, 1 << 20, NOW)
    assert popped is not None and popped.removed == 1
    assert [
        (row.id, row.revision, row.removed) for row in (await _changed(store, cursor)).sessions
    ] == [("s1", 2, True)]


async def test_a_cursor_within_a_page_takes_the_rest_of_it(store: Store):
    for name in ("a", "b", "c"):
        await create(store, key(name))
    page = await read_settled(store, START, limit=2)
    assert [row.id for row in page.sessions] == ["a", "b"] and page.more_sessions
    rest = await _changed(store, _last(page))
    assert [row.id for row in rest.sessions] == ["c"]


async def test_a_number_is_not_given_again_when_the_newest_session_is_deleted(store: Store):
    """A reader past the deleted session's number must find a write made
    after the deletion, whatever its session id."""
    await create(store, key("m"))
    await create(store, key("z"))
    cursor = _last(await _changed(store, START))
    assert cursor[1] == "z"
    assert await store.delete_session(key("z"), with_memories=False, now=NOW)
    await create(store, key("a"))
    assert [row.id for row in (await _changed(store, cursor)).sessions] == ["a"]


async def test_other_users_sessions_are_not_read(store: Store):
    await create(store, key("s1"))
    await create(store, key("b1", "bob"))
    assert [row.id for row in (await _changed(store, START, "bob")).sessions] == ["b1"]
