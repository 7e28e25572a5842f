"""Store contract: appending one event or several, with the revision check,
event ids, expiry, scope size limits, and appends racing each other."""

import asyncio

import pytest

from session_state.core.errors import StateTooLarge
from session_state.sessions.domain import (
    AppendNotApplied,
    Expiry,
    NewEvent,
    SessionKey,
    StoredEvent,
)
from session_state.sessions.state import ScopedDelta, merge_deltas
from session_state.stores import Store

from .scenes import APP, LIMIT, NOW, append, create, entry_bytes, event, key, outcome_of


async def _append_many(
    store: Store,
    session_key: SessionKey,
    events: list[NewEvent],
    expected_revision: int | None = None,
    limit: int = LIMIT,
    now: float = NOW,
) -> int:
    delta = merge_deltas(one.delta for one in events)
    return await store.append_events(session_key, events, delta, expected_revision, limit, now)


async def _unchanged(store: Store, revision: int, state: dict, app: dict, user: dict) -> None:
    found = await store.read_session(key(), NOW)
    assert (found.revision, found.state) == (revision, state)
    assert await store.read_app_state(APP) == app
    assert await store.read_user_state(APP, "ada") == user


async def test_an_append_stores_the_event_and_applies_its_delta(store: Store):
    await create(store, key(), session={"keep": 1, "step": 0}, app={"tz": "UTC"})
    first = event("e1", session={"step": 1}, app={"mode": "fast"}, user={"seen": 1})
    second = event("e2", session={"step": 2, "extra": None}, timestamp=NOW + 5)

    assert await store.append_event(key(), first, None, LIMIT, NOW) == 1
    assert await store.append_event(key(), second, 1, LIMIT, NOW + 6) == 2

    found = await store.read_session(key(), NOW + 6)
    assert found.state == {"keep": 1, "step": 2, "extra": None}
    # The update time is the last event's time, not the time of the write.
    assert (found.revision, found.update_time) == (2, NOW + 5)
    assert await store.read_app_state(APP) == {"tz": "UTC", "mode": "fast"}
    assert await store.read_user_state(APP, "ada") == {"seen": 1}
    assert await store.find_event(key(), "e2") == StoredEvent(2, second.data)
    assert await store.find_events(key(), ["e1", "e2", "nope"]) == {
        "e1": StoredEvent(1, first.data),
        "e2": StoredEvent(2, second.data),
    }


async def test_event_text_comes_back_byte_for_byte(store: Store):
    await create(store, key())
    data = (
        '{"id":"e1",  "text": "caf\\u00e9 \u2603 \U0001f600", "n": 1.50,'
        ' "big": 123456789012345678901234567890}'
    )
    stored = NewEvent("e1", "inv", "planner", NOW, data, ScopedDelta())

    await store.append_event(key(), stored, None, LIMIT, NOW)

    assert (await store.find_event(key(), "e1")).data == data
    assert (await store.read_snapshot(key(), None, None, LIMIT, NOW)).events_json == data


async def test_a_stale_append_writes_nothing(store: Store):
    await create(store, key(), session={"step": 0})
    await append(store, key(), event("e1"))

    refused = await outcome_of(
        store.append_event(key(), event("e2", session={"step": 9}, app={"a": 1}), 0, LIMIT, NOW)
    )

    assert isinstance(refused, AppendNotApplied)
    await _unchanged(store, 1, {"step": 0}, {}, {})
    assert await store.find_event(key(), "e2") is None


@pytest.mark.parametrize("expected_revision", [None, 1])
async def test_a_stored_event_id_is_not_stored_again(store: Store, expected_revision):
    await create(store, key(), session={"step": 0})
    await append(store, key(), event("e1", session={"step": 1}))

    again = event("e1", session={"step": 2}, user={"u": 1})
    refused = await outcome_of(store.append_event(key(), again, expected_revision, LIMIT, NOW))

    assert isinstance(refused, AppendNotApplied)
    await _unchanged(store, 1, {"step": 1}, {}, {})


async def test_an_append_to_a_missing_session_writes_nothing(store: Store):
    refused = await outcome_of(
        store.append_event(key(), event("e1", app={"a": 1}), None, LIMIT, NOW)
    )

    assert isinstance(refused, AppendNotApplied)
    assert await store.read_app_state(APP) == {}


async def test_an_append_restarts_an_idle_timeout_or_replaces_the_expiry(store: Store):
    await create(store, key("idle"), expiry=Expiry(ttl_seconds=10))
    await create(store, key("fixed"), expiry=Expiry(expire_time=NOW + 10))

    await store.append_event(key("idle"), event("e1"), None, LIMIT, NOW + 5)
    await store.append_event(key("fixed"), event("e1"), None, LIMIT, NOW + 5)
    assert (await store.read_session(key("idle"), NOW + 5)).expire_time == NOW + 15
    assert (await store.read_session(key("fixed"), NOW + 5)).expire_time == NOW + 10

    await store.append_event(key("fixed"), event("e2"), None, LIMIT, NOW + 6, Expiry(ttl_seconds=3))
    assert (await store.read_session(key("fixed"), NOW + 6)).expire_time == NOW + 9
    await store.append_event(key("fixed"), event("e3"), None, LIMIT, NOW + 7, Expiry())
    assert (await store.read_session(key("fixed"), NOW + 10**6)).expire_time is None
    await store.append_event(
        key("idle"), event("e2"), None, LIMIT, NOW + 7, Expiry(expire_time=NOW + 8)
    )
    assert await store.read_session(key("idle"), NOW + 8) is None


# -- scope size limits --------------------------------------------------------

SCOPES = ["session", "app", "user"]


@pytest.mark.parametrize("scope", SCOPES)
async def test_an_append_past_a_scope_limit_is_not_applied(store: Store, scope: str):
    """The protocol's promise: AppendNotApplied, saying which limit, with
    nothing written; the caller reads to tell it from a retry."""
    await create(store, key(), session={"s": 1}, app={"a": 1}, user={"u": 1}, limit=200)
    big = event("e1", **{scope: {"big": "x" * 300}})

    refused = await outcome_of(store.append_event(key(), big, None, 200, NOW))

    assert isinstance(refused, AppendNotApplied), repr(refused)
    assert isinstance(refused.state_error, StateTooLarge)
    await _unchanged(store, 0, {"s": 1}, {"a": 1}, {"u": 1})
    assert await store.find_event(key(), "e1") is None


@pytest.mark.parametrize("scope", SCOPES)
async def test_a_batch_past_a_scope_limit_is_not_applied(store: Store, scope: str):
    await create(store, key(), session={"s": 1}, app={"a": 1}, user={"u": 1}, limit=200)
    # Each fits; together they pass the limit.
    events = [
        event("e1", **{scope: {"one": "x" * 120}}),
        event("e2", **{scope: {"two": "y" * 120}}),
    ]

    refused = await outcome_of(_append_many(store, key(), events, limit=200))

    assert isinstance(refused, AppendNotApplied), repr(refused)
    await _unchanged(store, 0, {"s": 1}, {"a": 1}, {"u": 1})
    assert await store.find_events(key(), ["e1", "e2"]) == {}


@pytest.mark.parametrize("scope", ["app", "user"])
async def test_a_shared_scope_may_reach_its_limit_exactly(store: Store, scope: str):
    limit = 100
    await create(store, key(), limit=limit)
    value = "x" * (limit - entry_bytes("k", ""))
    assert entry_bytes("k", value) == limit

    assert await store.append_event(key(), event("e1", **{scope: {"k": value}}), None, limit, NOW)
    refused = await outcome_of(
        store.append_event(key(), event("e2", **{scope: {"k2": 0}}), None, limit, NOW)
    )
    assert isinstance(refused, AppendNotApplied), repr(refused)


@pytest.mark.parametrize("scope", ["app", "user"])
async def test_a_delta_that_does_not_grow_a_full_scope_is_applied(store: Store, scope: str):
    """Only growth is checked: a scope already over a lowered limit can
    still be written to when the write makes it no bigger."""
    await create(store, key(), **{scope: {"k": "x" * 100}})

    shrink = event("e1", **{scope: {"k": "y" * 10}})
    assert await store.append_event(key(), shrink, None, 50, NOW) == 1
    same = event("e2", **{scope: {"k": "z" * 10}})
    assert await store.append_event(key(), same, None, 50, NOW) == 2


async def test_the_session_scope_counts_its_compact_json(store: Store):
    """A session's state is measured as its compact JSON, as a create
    measures it: an append that leaves it exactly at the limit is taken."""
    state = {"a": 1, "b": [1, 2], "c": {"d": "e"}}
    await create(store, key(), session=state)
    grown = {**state, "f": "g"}
    limit = len('{"a":1,"b":[1,2],"c":{"d":"e"},"f":"g"}')

    revision = await outcome_of(
        store.append_event(key(), event("e1", session={"f": "g"}), None, limit, NOW)
    )

    assert revision == 1, f"an append to {limit} bytes of compact JSON was refused: {revision!r}"
    assert (await store.read_session(key(), NOW)).state == grown


# -- batches ------------------------------------------------------------------


async def test_a_batch_is_stored_in_order_as_one_change(store: Store):
    await create(store, key(), session={"step": 0})
    await append(store, key(), event("e0"))
    events = [
        event("e1", session={"step": 1}, app={"k": 1}, timestamp=NOW + 1),
        event("e2", session={"step": 2}, app={"k": 2}, user={"u": 1}, timestamp=NOW + 2),
        event("e3", timestamp=NOW + 3),
    ]

    assert await _append_many(store, key(), events, expected_revision=1) == 4

    found = await store.read_session(key(), NOW)
    assert (found.state, found.revision, found.update_time) == ({"step": 2}, 4, NOW + 3)
    assert await store.read_app_state(APP) == {"k": 2}
    assert await store.read_user_state(APP, "ada") == {"u": 1}
    stored = await store.find_events(key(), ["e1", "e2", "e3"])
    assert {event_id: one.seq for event_id, one in stored.items()} == {"e1": 2, "e2": 3, "e3": 4}


async def test_a_batch_is_stored_whole_or_not_at_all(store: Store):
    await create(store, key(), session={"step": 0})
    await append(store, key(), event("e2"))
    events = [event("e1", session={"step": 1}), event("e2"), event("e3")]

    taken = await outcome_of(_append_many(store, key(), events))
    stale = await outcome_of(_append_many(store, key(), [event("e4")], expected_revision=0))
    missing = await outcome_of(_append_many(store, key("none"), [event("e5")]))

    for refused in (taken, stale, missing):
        assert isinstance(refused, AppendNotApplied), repr(refused)
    await _unchanged(store, 1, {"step": 0}, {}, {})
    assert set(await store.find_events(key(), ["e1", "e3", "e4"])) == set()


async def test_a_batch_restarts_an_idle_timeout(store: Store):
    await create(store, key(), expiry=Expiry(ttl_seconds=10))

    await _append_many(store, key(), [event("e1"), event("e2")], now=NOW + 8)

    assert (await store.read_session(key(), NOW + 8)).expire_time == NOW + 18


# -- races --------------------------------------------------------------------

CONTENDERS = 6


async def test_of_appends_racing_at_one_revision_exactly_one_applies(
    store: Store, second_store: Store
):
    await create(store, key(), session={"winner": None})
    stores = [store, second_store]

    outcomes = await asyncio.gather(
        *(
            outcome_of(
                stores[number % 2].append_event(
                    key(), event(f"e{number}", session={"winner": number}), 0, LIMIT, NOW
                )
            )
            for number in range(CONTENDERS)
        )
    )

    applied = [number for number, outcome in enumerate(outcomes) if outcome == 1]
    assert len(applied) == 1, outcomes
    assert all(isinstance(outcome, AppendNotApplied) for outcome in outcomes if outcome != 1)
    found = await store.read_session(key(), NOW)
    assert (found.revision, found.state) == (1, {"winner": applied[0]})
    assert list(await store.find_events(key(), [f"e{n}" for n in range(CONTENDERS)])) == [
        f"e{applied[0]}"
    ]


async def test_of_batches_racing_at_one_revision_exactly_one_applies(
    store: Store, second_store: Store
):
    await create(store, key())
    stores = [store, second_store]

    outcomes = await asyncio.gather(
        *(
            outcome_of(
                _append_many(
                    stores[number % 2], key(), [event(f"a{number}"), event(f"b{number}")], 0
                )
            )
            for number in range(CONTENDERS)
        )
    )

    assert sorted(map(repr, outcomes)).count("2") == 1, outcomes
    assert (await store.read_session(key(), NOW)).revision == 2


async def test_racing_appends_without_a_revision_are_all_stored_in_some_order(
    store: Store, second_store: Store
):
    await create(store, key())
    stores = [store, second_store]

    revisions = await asyncio.gather(
        *(
            stores[number % 2].append_event(
                key(), event(f"e{number}", user={f"k{number}": number}), None, LIMIT, NOW
            )
            for number in range(CONTENDERS)
        )
    )

    assert sorted(revisions) == list(range(1, CONTENDERS + 1))
    stored = await store.find_events(key(), [f"e{n}" for n in range(CONTENDERS)])
    assert {event_id: one.seq for event_id, one in stored.items()} == {
        f"e{number}": revision for number, revision in enumerate(revisions)
    }
    assert len(await store.read_user_state(APP, "ada")) == CONTENDERS


async def test_racing_appends_of_one_event_id_store_it_once(store: Store, second_store: Store):
    await create(store, key())
    stores = [store, second_store]

    outcomes = await asyncio.gather(
        *(
            outcome_of(stores[number % 2].append_event(key(), event("same"), None, LIMIT, NOW))
            for number in range(CONTENDERS)
        )
    )

    assert outcomes.count(1) == 1, outcomes
    assert all(isinstance(o, AppendNotApplied) for o in outcomes if o != 1), outcomes
    assert (await store.read_session(key(), NOW)).revision == 1
