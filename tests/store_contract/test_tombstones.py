"""Store contract: what left a user's sessions is kept as tombstones,
numbered per user in order, read with the user's sessions in one snapshot,
collapsed by an erasure and pruned after a window (user streams resume from
them, app.streams.live)."""

import asyncio

from session_state.sessions.domain import Expiry, ForkSource, SessionKey, Tombstone
from session_state.sessions.state import ScopedDelta
from session_state.stores import Store

from .scenes import APP, LIMIT, NOW, create, key
from .test_change_numbers import read_settled

FAR = (1 << 62, "")  # after every session: tombstones only


async def _gone(store: Store, user_id: str = "ada", after_seq: int = 0) -> list[tuple[object, ...]]:
    changes = await store.read_user_changes(APP, user_id, after_seq, FAR, 100, NOW + 100)
    return [(t.seq, t.session_id, t.kind) for t in changes.tombstones]


async def test_deletions_expiries_and_sweeps_leave_numbered_tombstones(store: Store):
    await create(store, key("s1"))
    await create(store, key("s2"), expiry=Expiry(ttl_seconds=10))
    await create(store, key("s3"), expiry=Expiry(ttl_seconds=10))
    await create(store, key("b1", "bob"))

    assert await store.delete_session(key("s1"), with_memories=False, now=NOW)
    swept: list[SessionKey] = []
    await store.sweep_expired(NOW + 20, 100, with_memories=False, expired=swept)
    await store.delete_session(key("b1", "bob"), with_memories=False, now=NOW)

    assert sorted(k.session_id for k in swept) == ["s2", "s3"]
    gone = await _gone(store)
    assert gone[0] == (1, "s1", "deleted")
    # One sweep batch: its sessions' order is the database's, their numbers follow.
    assert [(seq, kind) for seq, _, kind in gone[1:]] == [(2, "expired"), (3, "expired")]
    assert {session_id for _, session_id, _ in gone[1:]} == {"s2", "s3"}
    assert await _gone(store, after_seq=1) == gone[1:]
    assert await _gone(store, "bob") == [(1, "b1", "deleted")]


async def test_an_expired_session_taken_over_or_deleted_leaves_an_expired_tombstone(
    store: Store,
):
    await create(store, key("source"))
    for session_id in ("created", "forked", "deleted"):
        await create(store, key(session_id), expiry=Expiry(ttl_seconds=10))
    later = NOW + 10

    assert await store.create_session(
        key("created"), ScopedDelta(), later, Expiry(), LIMIT, forget_expired_memories=False
    )
    forked = await store.fork_session(
        ForkSource(key("source"), None, None), "forked", later, Expiry(),
        forget_expired_memories=False,
    )  # fmt: skip
    assert forked == "forked"
    assert not await store.delete_session(key("deleted"), with_memories=False, now=later)

    assert await _gone(store) == [
        (1, "created", "expired"),
        (2, "forked", "expired"),
        (3, "deleted", "expired"),
    ]


async def test_an_erasure_leaves_one_tombstone_per_user_without_session_ids(store: Store):
    await create(store, key("s1"))
    await store.delete_session(key("s1"), with_memories=False, now=NOW)
    await create(store, key("s2"))
    await create(store, key("s3"))

    await store.erase_user(APP, "ada", batch_events=1)

    changes = await store.read_user_changes(APP, "ada", 0, FAR, 100, NOW)
    assert [(t.seq, t.session_id, t.kind) for t in changes.tombstones] == [(4, None, "erased")]
    assert changes.newest_seq == 4


async def test_pruning_keeps_each_users_newest_tombstone(store: Store):
    for number in range(3):
        await create(store, key(f"s{number}"))
        await store.delete_session(key(f"s{number}"), with_memories=False, now=NOW + number)

    assert await store.prune_tombstones(NOW + 10) == 2

    changes = await store.read_user_changes(APP, "ada", 0, FAR, 100, NOW)
    assert changes.tombstones == [Tombstone(3, "s2", "deleted", NOW + 2)]
    assert changes.newest_seq == 3


async def test_sessions_are_read_with_the_tombstones_without_state(store: Store):
    await create(store, key("s1"), session={"big": "x"})
    changes = await read_settled(store, (0, ""), after_seq=0)
    assert [row.id for row in changes.sessions] == ["s1"]
    assert changes.tombstones == [] and changes.newest_seq == 0


async def test_concurrent_deletions_and_a_sweep_number_tombstones_without_gap_or_repeat(
    store: Store,
):
    """Deletions racing the sweeper over one user's sessions (some expired,
    deleted by either): each session's tombstone once, numbered 1..n."""
    for number in range(12):
        expiry = Expiry(ttl_seconds=10) if number % 2 else Expiry()
        await create(store, key(f"s{number}"), expiry=expiry)
    later = NOW + 20

    async def delete(number: int) -> bool:
        return await store.delete_session(key(f"s{number}"), with_memories=False, now=later)

    deleting = [delete(number) for number in range(0, 12, 3)]
    swept: list[SessionKey] = []
    await asyncio.gather(
        *deleting, store.sweep_expired(later, 100, with_memories=False, expired=swept)
    )

    changes = await store.read_user_changes(APP, "ada", 0, FAR, 100, later)
    assert [t.seq for t in changes.tombstones] == list(range(1, len(changes.tombstones) + 1))
    gone = [t.session_id for t in changes.tombstones]
    assert len(gone) == len(set(gone))
    # Every expired session is gone with one tombstone, and each deleted one.
    expected = {f"s{n}" for n in range(12) if n % 2} | {f"s{n}" for n in range(0, 12, 3)}
    assert set(gone) == expected
    assert swept  # the sweep ran beside the deletions
