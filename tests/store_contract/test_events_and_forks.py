"""Store contract: paging through events, removing the newest ones, and
forking a session from its history."""

import pytest

from session_state.core.errors import ResponseTooLarge
from session_state.sessions.domain import (
    EventsRemoved,
    Expiry,
    ForkSource,
    NewEvent,
    Popped,
    Removal,
    SessionRow,
    SessionSnapshot,
    StoredEvent,
)
from session_state.sessions.state import StateDict
from session_state.stores import Store

from .scenes import APP, LIMIT, NOW, append, create, event, key, memories_of, outcome_of


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


# -- a pop: the newest events read and removed in one call -------------------


LABELS = {"team": "blue"}


async def _popping_scene(store: Store, *newest: NewEvent) -> list[StoredEvent]:
    """A session with state, labels, an idle timeout and shared state: e1,
    then the events given, appended at NOW (so it expires at NOW + 60)."""
    await create(store, key(), session={"step": 0}, app={"hits": 1}, user={"visits": 2})
    assert await store.set_labels(key(), LABELS, Expiry(ttl_seconds=60), None, NOW) == 0
    events = [event("e1"), *newest]
    assert await append(store, key(), *events) == len(events)
    return [StoredEvent(seq, one.data) for seq, one in enumerate(events, start=1)]


def _session(revision: int, update_time: float, state: StateDict, hits: int = 1) -> SessionSnapshot:
    """The session a pop answers with: without events, with its scopes."""
    row = SessionRow(APP, "ada", "s1", state, revision, update_time, update_time + 60, LABELS)
    return SessionSnapshot(row, {"hits": hits}, {"visits": 2}, "", 0)


async def _nothing_written(store: Store, stored: list[StoredEvent]) -> None:
    """The session as the appends left it: no revision, time, expiry or
    removal of a pop's."""
    found = await store.read_session(key(), NOW + 10)
    assert found is not None
    assert (found.revision, found.update_time, found.expire_time) == (len(stored), NOW, NOW + 60)
    assert await store.read_events(key(), 0, 10, 10) == stored
    changes = await store.read_changes(key(), 0, 10, LIMIT, NOW + 10)
    assert changes is not None and changes.removals == []


async def test_a_pop_removes_the_newest_events_as_one_change_and_answers_with_the_session(
    store: Store,
):
    stored = await _popping_scene(store, event("e2", app={"hits": 2}), event("e3"))

    popped = await store.pop_newest(key(), 2, 3, LIMIT, NOW + 10)

    # The events read at the revision, removed as remove_events removes
    # them: one change (revision, update time, idle timeout restarted);
    # shared state stays as their appends left it.
    after = _session(4, NOW + 10, {"step": 0}, hits=2)
    assert popped == Popped(3, stored[1:], 2, after, changes_state=False)
    assert await store.read_session(key(), NOW + 10) == after.session
    assert await store.read_events(key(), 0, 10, 10) == stored[:1]
    changes = await store.read_changes(key(), 0, 10, LIMIT, NOW + 10)
    assert changes is not None and changes.removals == [Removal(4, ["e2", "e3"])]
    assert await store.append_event(key(), event("e4"), 4, LIMIT, NOW + 11) == 5


async def test_a_pop_of_an_event_that_changed_session_state_writes_nothing(store: Store):
    """The state after must be derived from the history (the service's
    general removal): the store says so and answers the session as read."""
    stored = await _popping_scene(store, event("e2", session={"step": 1}), event("e3"))

    popped = await store.pop_newest(key(), 2, None, LIMIT, NOW + 10)

    as_read = _session(3, NOW, {"step": 1})
    assert popped == Popped(3, stored[1:], None, as_read, changes_state=True)
    await _nothing_written(store, stored)
    # The newest alone changed none: it goes.
    newest = await store.pop_newest(key(), 1, None, LIMIT, NOW + 10)
    assert newest == Popped(3, stored[2:], 1, _session(4, NOW + 10, {"step": 1}), False)


async def test_a_pop_at_a_stale_revision_or_past_its_budget_writes_nothing(store: Store):
    stored = await _popping_scene(store, event("e2"))
    as_read = _session(2, NOW, {"step": 0})
    newest_bytes = len(stored[1].data.encode())

    stale = await store.pop_newest(key(), 1, 1, LIMIT, NOW + 10)
    too_large = await store.pop_newest(key(), 1, None, newest_bytes - 1, NOW + 10)

    assert stale == too_large == Popped(2, stored[1:], None, as_read, changes_state=False)
    await _nothing_written(store, stored)
    # Exactly the budget is within it.
    popped = await store.pop_newest(key(), 1, 2, newest_bytes, NOW + 10)
    assert popped is not None and popped.removed == 1


async def test_a_pop_of_no_events_writes_nothing(store: Store):
    await create(store, key())

    popped = await store.pop_newest(key(), 3, None, LIMIT, NOW)

    assert popped is not None
    assert (popped.revision, popped.events, popped.removed) == (0, [], None)
    assert popped.session is not None and popped.session.session.revision == 0


async def test_a_pop_of_a_missing_or_expired_session_is_none(store: Store):
    await create(store, key("old"), expiry=Expiry(ttl_seconds=1))
    await append(store, key("old"), event("e1"))

    assert await store.pop_newest(key("none"), 1, None, LIMIT, NOW) is None
    assert await store.pop_newest(key("old"), 1, None, LIMIT, NOW + 2) is None
    assert await store.read_events(key("old"), 0, 10, 10) == [StoredEvent(1, event("e1").data)]


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
