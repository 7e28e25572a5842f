"""Store contract: paging through events, removing the newest ones, and
forking a session from its history."""

import pytest

from session_state.db.store import Store
from session_state.domain import EventsRemoved, Expiry, ForkSource, Removal, StoredEvent
from session_state.errors import ResponseTooLarge

from .scenes import LIMIT, NOW, append, create, event, key, memories_of, outcome_of


async def _five_events(store: Store) -> list[StoredEvent]:
    await create(store, key(), session={"step": 0})
    events = [event(f"e{n}", session={"step": n}, timestamp=NOW + n) for n in range(1, 6)]
    await append(store, key(), *events)
    return [StoredEvent(seq, one.data) for seq, one in enumerate(events, start=1)]


async def test_events_are_paged_in_either_order_after_a_position(store: Store):
    stored = await _five_events(store)

    assert await store.page_events(key(), "asc", None, None, 2, LIMIT, NOW) == (
        stored[:2], True, 5
    )  # fmt: skip
    assert await store.page_events(key(), "asc", 2, None, 10, LIMIT, NOW) == (stored[2:], False, 5)
    assert await store.page_events(key(), "desc", None, None, 2, LIMIT, NOW) == (
        [stored[4], stored[3]], True, 5
    )  # fmt: skip
    assert await store.page_events(key(), "desc", 3, None, 10, LIMIT, NOW) == (
        [stored[1], stored[0]], False, 5
    )  # fmt: skip
    assert await store.page_events(key(), "asc", None, NOW + 4, 10, LIMIT, NOW) == (
        stored[3:], False, 5
    )  # fmt: skip
    assert await store.page_events(key(), "asc", 5, None, 10, LIMIT, NOW) == ([], False, 5)
    assert await store.page_events(key("none"), "asc", None, None, 10, LIMIT, NOW) is None


async def test_an_event_page_stops_at_its_byte_budget(store: Store):
    stored = await _five_events(store)
    two = sum(len(one.data.encode()) for one in stored[:2])

    assert await store.page_events(key(), "asc", None, None, 10, two, NOW) == (
        stored[:2], True, 5
    )  # fmt: skip
    refused = await outcome_of(store.page_events(key(), "asc", None, None, 10, 10, NOW))
    assert isinstance(refused, ResponseTooLarge), refused


async def test_events_are_read_between_two_positions_in_bounded_batches(store: Store):
    stored = await _five_events(store)

    assert await store.read_events(key(), 1, 4, 10) == stored[1:4]
    assert await store.read_events(key(), 0, 5, 2) == stored[:2]
    assert await store.read_events(key("none"), 0, 5, 2) == []


async def test_changes_after_a_revision_are_events_and_removals_in_one_read(store: Store):
    stored = await _five_events(store)
    await store.remove_events(key(), 3, 5, None, NOW)  # revision 6 removes e4, e5
    last = event("e7", timestamp=NOW + 7)
    await append(store, key(), last)  # revision 7

    changes = await store.read_changes(key(), 2, 10, LIMIT, NOW)
    assert changes is not None
    assert (changes.revision, changes.more, changes.up_to) == (7, False, 7)
    assert changes.events == [stored[2], StoredEvent(7, last.data)]
    assert changes.removals == [Removal(6, ["e4", "e5"])]
    # A batch that stops at its count or its bytes says so, and has read up to its last event.
    first = await store.read_changes(key(), 0, 2, LIMIT, NOW)
    assert first is not None
    assert (first.events, first.more, first.up_to, first.removals) == (stored[:2], True, 2, [])
    one = await store.read_changes(key(), 0, 10, 1, NOW)
    assert one is not None and (one.events, one.more) == (stored[:1], True)
    assert await store.read_changes(key(), 7, 10, LIMIT, NOW) is not None
    assert await store.read_changes(key("none"), 0, 10, LIMIT, NOW) is None


async def test_where_to_cut_to_remove_the_newest_events(store: Store):
    await _five_events(store)

    assert await store.newest_kept_seq(key(), 2, NOW) == (5, 3)
    assert await store.newest_kept_seq(key(), 0, NOW) == (5, 5)
    assert await store.newest_kept_seq(key(), 9, NOW) == (5, 0)
    assert await store.newest_kept_seq(key("none"), 1, NOW) is None


async def test_the_newest_events_are_read_with_the_revision(store: Store):
    stored = await _five_events(store)

    assert await store.newest_events(key(), 2, NOW) == (5, stored[3:])
    assert await store.newest_events(key(), 9, NOW) == (5, stored)
    await store.remove_events(key(), 0, 5, None, NOW)
    assert await store.newest_events(key(), 1, NOW) == (6, [])
    assert await store.newest_events(key("none"), 1, NOW) is None


async def test_removing_the_newest_events_is_one_change_guarded_by_the_revision(store: Store):
    stored = await _five_events(store)
    await store.set_expiry(key(), Expiry(ttl_seconds=60), None, NOW)

    assert await store.remove_events(key(), 3, 4, {"step": 3}, NOW + 10) is None
    removed = await store.remove_events(key(), 3, 5, {"step": 3}, NOW + 10)

    assert removed == EventsRemoved(revision=6, count=2)
    found = await store.read_session(key(), NOW + 10)
    assert (found.state, found.revision, found.update_time) == ({"step": 3}, 6, NOW + 10)
    assert found.expire_time == NOW + 70
    assert await store.read_events(key(), 0, 10, 10) == stored[:3]
    # A seq is never used twice: the next append comes after the removal.
    assert await store.append_event(key(), event("e6"), 6, LIMIT, NOW + 11) == 7


async def test_removing_events_without_a_state_keeps_the_state(store: Store):
    await _five_events(store)

    assert await store.remove_events(key(), 0, 5, None, NOW) == EventsRemoved(6, 5)

    assert (await store.read_session(key(), NOW)).state == {"step": 5}
    assert await store.remove_events(key("none"), 0, 0, None, NOW) is None


async def test_the_initial_state_is_the_one_a_session_was_created_with(store: Store):
    await _five_events(store)

    assert await store.read_initial_state(key(), NOW) == {"step": 0}
    assert await store.read_initial_state(key("none"), NOW) is None


async def test_a_fork_copies_the_history_up_to_a_point_with_its_state(store: Store):
    stored = await _five_events(store)

    whole = await store.fork_session(
        ForkSource(key(), None, None), "copy", NOW + 20, Expiry(ttl_seconds=5),
        forget_expired_memories=False,
    )  # fmt: skip
    part = await store.fork_session(
        ForkSource(key(), 3, {"step": 3}), "part", NOW + 20, Expiry(),
        forget_expired_memories=False,
    )  # fmt: skip

    assert (whole, part) == ("forked", "forked")
    copy = await store.read_session(key("copy"), NOW + 20)
    assert (copy.state, copy.revision, copy.update_time) == ({"step": 5}, 5, NOW + 20)
    assert copy.expire_time == NOW + 25
    assert await store.read_events(key("copy"), 0, 10, 10) == stored
    partial = await store.read_session(key("part"), NOW + 20)
    assert (partial.state, partial.revision) == ({"step": 3}, 3)
    assert await store.read_events(key("part"), 0, 10, 10) == stored[:3]
    # The fork keeps the source's initial state, for its own partial forks.
    assert await store.read_initial_state(key("part"), NOW + 20) == {"step": 0}
    assert (await store.read_session(key(), NOW + 20)).revision == 5


async def test_a_fork_is_refused_when_its_source_or_its_id_is_not_right(store: Store):
    await _five_events(store)
    await create(store, key("taken"))
    await store.remove_events(key(), 3, 5, None, NOW)

    def fork(source, session_id: str = "new"):
        return store.fork_session(source, session_id, NOW, Expiry(), forget_expired_memories=False)

    assert await fork(ForkSource(key("none"), None, None)) == "source_missing"
    assert await fork(ForkSource(key(), 4, {"step": 4})) == "source_changed"
    assert await fork(ForkSource(key(), None, None), "taken") == "id_taken"
    assert await store.read_session(key("new"), NOW) is None


@pytest.mark.parametrize("forget", [False, True])
async def test_a_fork_takes_an_expired_sessions_id_whole(store: Store, forget: bool):
    await _five_events(store)
    await create(store, key("old"), expiry=Expiry(ttl_seconds=1))
    await append(store, key("old"), event("old-e"))
    await store.ingest_session(key("old"), memories_of("old"), NOW)

    outcome = await store.fork_session(
        ForkSource(key(), None, None), "old", NOW + 1, Expiry(), forget_expired_memories=forget
    )

    assert outcome == "forked"
    assert await store.find_event(key("old"), "old-e") is None
    assert (await store.read_session(key("old"), NOW + 1)).revision == 5
    remembered = await store.search_memories("contract", "ada", "flight", 10, LIMIT)
    assert len(remembered) == (0 if forget else 1)
