"""Store contract: creating, reading, listing and deleting sessions, their
expiry, and the app and user scopes' state."""

import pytest

from session_state.core.errors import StateTooLarge
from session_state.sessions.domain import Expiry, SessionPosition, SessionRow
from session_state.sessions.state import ScopedDelta
from session_state.stores import Store

from .scenes import (
    APP,
    LIMIT,
    NOW,
    append,
    compact_json_bytes,
    create,
    entry_bytes,
    event,
    key,
    memories_of,
    outcome_of,
)


async def test_a_created_session_holds_its_three_scopes(store: Store):
    shared = await create(store, key(), session={"step": 1}, app={"tz": "UTC"}, user={"lang": "fr"})

    assert (shared.app_state, shared.user_state) == ({"tz": "UTC"}, {"lang": "fr"})
    assert await store.read_session(key(), NOW) == SessionRow(
        APP, "ada", "s1", {"step": 1}, revision=0, update_time=NOW, expire_time=None
    )
    assert await store.read_app_state(APP) == {"tz": "UTC"}
    assert await store.read_user_state(APP, "ada") == {"lang": "fr"}


async def test_scopes_of_unknown_apps_and_users_are_empty(store: Store):
    assert await store.read_app_state("nobody") == {}
    assert await store.read_user_state(APP, "nobody") == {}
    assert await store.read_session(key("none"), NOW) is None


async def test_a_taken_id_creates_nothing_and_writes_no_scope(store: Store):
    await create(store, key(), session={"first": True})

    again = await store.create_session(
        key(), ScopedDelta({"a": 1}, {"u": 1}, {"second": True}), NOW + 1, Expiry(), LIMIT,
        forget_expired_memories=False,
    )  # fmt: skip

    assert again is None
    assert (await store.read_session(key(), NOW + 1)).state == {"first": True}
    assert await store.read_app_state(APP) == {}
    assert await store.read_user_state(APP, "ada") == {}


@pytest.mark.parametrize("forget", [False, True])
async def test_an_expired_sessions_id_is_taken_whole_by_a_new_session(store: Store, forget: bool):
    await create(store, key(), session={"old": True}, expiry=Expiry(ttl_seconds=10))
    await append(store, key(), event("e1"), event("e2"))
    assert await store.ingest_session(key(), memories_of("s1"), NOW) == 2

    created = await store.create_session(
        key(), ScopedDelta(session={"new": True}), NOW + 10, Expiry(), LIMIT,
        forget_expired_memories=forget,
    )  # fmt: skip

    assert created is not None
    found = await store.read_session(key(), NOW + 10)
    assert (found.state, found.revision, found.update_time) == ({"new": True}, 0, NOW + 10)
    assert await store.find_events(key(), ["e1", "e2"]) == {}
    remembered = await store.search_memories(APP, "ada", "flight", 10, LIMIT)
    assert len(remembered) == (0 if forget else 2)


@pytest.mark.parametrize("scope", ["session", "app", "user"])
async def test_a_create_past_a_scope_limit_is_refused_with_nothing_written(
    store: Store, scope: str
):
    value = {"big": "x" * 200}
    delta = ScopedDelta(**{scope: value})

    refused = await outcome_of(
        store.create_session(key(), delta, NOW, Expiry(), 100, forget_expired_memories=False)
    )

    assert isinstance(refused, StateTooLarge), refused
    assert await store.read_session(key(), NOW) is None
    assert await store.read_app_state(APP) == {}
    assert await store.read_user_state(APP, "ada") == {}


async def test_a_create_at_exactly_the_limit_is_taken(store: Store):
    session = {"note": "x" * 50}
    limit = compact_json_bytes(session)
    app = {"k": "y" * (limit - entry_bytes("k", "") - 2 + 2)}
    assert entry_bytes("k", app["k"]) == limit

    await create(store, key(), session=session, app=app, user=app, limit=limit)

    refused = await outcome_of(
        store.create_session(
            key("s2"), ScopedDelta(session={"note": "x" * 51}), NOW, Expiry(), limit,
            forget_expired_memories=False,
        )
    )  # fmt: skip
    assert isinstance(refused, StateTooLarge)


async def test_expiry_is_a_timeout_from_now_or_a_time(store: Store):
    await create(store, key("idle"), expiry=Expiry(ttl_seconds=30))
    await create(store, key("until"), expiry=Expiry(expire_time=NOW + 5))

    assert (await store.read_session(key("idle"), NOW)).expire_time == NOW + 30
    assert (await store.read_session(key("until"), NOW)).expire_time == NOW + 5
    assert await store.read_session(key("until"), NOW + 4.999) is not None
    assert await store.read_session(key("until"), NOW + 5) is None
    assert await store.read_session(key("idle"), NOW + 30) is None


async def test_set_expiry_replaces_it_if_the_revision_matches(store: Store):
    await create(store, key(), expiry=Expiry(ttl_seconds=10))
    await append(store, key(), event("e1"))

    assert await store.set_expiry(key(), Expiry(ttl_seconds=100), 0, NOW + 1) is None
    assert await store.set_expiry(key(), Expiry(ttl_seconds=100), 1, NOW + 1) == 1
    assert (await store.read_session(key(), NOW + 1)).expire_time == NOW + 101
    assert await store.set_expiry(key(), Expiry(expire_time=NOW + 7), None, NOW + 2) == 1
    assert (await store.read_session(key(), NOW + 2)).expire_time == NOW + 7
    assert await store.set_expiry(key(), Expiry(), None, NOW + 3) == 1
    assert (await store.read_session(key(), NOW + 10**6)).expire_time is None
    assert await store.set_expiry(key("none"), Expiry(), None, NOW) is None


async def test_a_snapshot_is_the_session_its_scopes_and_its_last_events(store: Store):
    await create(store, key(), app={"tz": "UTC"}, user={"lang": "fr"})
    events = [event(f"e{n}", session={"n": n}, timestamp=NOW + n) for n in range(1, 5)]
    await append(store, key(), *events)

    whole = await store.read_snapshot(key(), None, None, LIMIT, NOW)
    assert whole.session.state == {"n": 4} and whole.session.revision == 4
    assert (whole.app_state, whole.user_state) == ({"tz": "UTC"}, {"lang": "fr"})
    assert whole.events_json == ",".join(one.data for one in events)
    assert whole.events_bytes == sum(len(one.data.encode()) for one in events)

    last_two = await store.read_snapshot(key(), 2, None, LIMIT, NOW)
    assert last_two.events_json == ",".join(one.data for one in events[2:])
    since = await store.read_snapshot(key(), None, NOW + 3, LIMIT, NOW)
    assert since.events_json == ",".join(one.data for one in events[2:])
    none = await store.read_snapshot(key(), 0, None, LIMIT, NOW)
    assert (none.events_json, none.events_bytes) == ("", 0)


async def test_a_snapshot_whose_events_pass_the_budget_carries_no_events(store: Store):
    await create(store, key())
    events = [event(f"e{n}") for n in range(3)]
    await append(store, key(), *events)
    size = sum(len(one.data.encode()) for one in events)

    exact = await store.read_snapshot(key(), None, None, size, NOW)
    over = await store.read_snapshot(key(), None, None, size - 1, NOW)

    assert exact.events_json is not None
    assert (over.events_json, over.events_bytes) == (None, size)
    assert over.session.revision == 3


async def test_sessions_are_listed_in_update_order_by_pages(store: Store):
    # Update times tie on purpose: user id, then session id, break the tie.
    for user_id, session_id in [("bob", "b"), ("ada", "z"), ("ada", "a"), ("bob", "a")]:
        await create(store, key(session_id, user_id))
    await create(store, key("late", "ada"), now=NOW + 1)
    await create(store, key("other-app", "ada", "elsewhere"))
    await create(store, key("gone", "ada"), now=NOW - 20, expiry=Expiry(ttl_seconds=10))
    expected = [("ada", "a"), ("ada", "z"), ("bob", "a"), ("bob", "b"), ("ada", "late")]

    first = await store.page_sessions(APP, None, None, 3, LIMIT, NOW + 2)
    cursor = (first.sessions[-1].update_time, first.sessions[-1].user_id, first.sessions[-1].id)
    assert first.horizon is not None
    after = SessionPosition(cursor, first.horizon)
    rest = await store.page_sessions(APP, None, after, 3, LIMIT, NOW + 2)

    assert [(row.user_id, row.id) for row in first.sessions + rest.sessions] == expected
    assert (first.more, rest.more) == (True, False)
    adas = await store.page_sessions(APP, "ada", None, 10, LIMIT, NOW + 2)
    assert [row.id for row in adas.sessions] == ["a", "z", "late"]


async def test_a_listing_carries_the_scopes_it_merges(store: Store):
    await create(store, key("s1", "ada"), app={"tz": "UTC"}, user={"lang": "fr"})
    await create(store, key("s2", "bob"), user={"lang": "de"})
    await create(store, key("s3", "cy"))

    listing = await store.page_sessions(APP, None, None, 2, LIMIT, NOW)

    assert listing.app_state == {"tz": "UTC"}
    assert listing.user_states == {"ada": {"lang": "fr"}, "bob": {"lang": "de"}}


async def test_a_listing_stops_at_its_byte_budget_but_always_carries_one(store: Store):
    for number in range(4):
        await create(store, key(f"s{number}"), session={"blob": "x" * 2000})

    tight = await store.page_sessions(APP, None, None, 10, 1, NOW)
    roomy = await store.page_sessions(APP, None, None, 10, 6000, NOW)

    assert (len(tight.sessions), tight.more) == (1, True)
    assert 1 < len(roomy.sessions) < 4 and roomy.more


async def test_deleting_a_session_takes_its_events_and_if_asked_its_memories(store: Store):
    for session_id in ("s1", "s2", "s3"):
        await create(store, key(session_id))
        await append(store, key(session_id), event(f"{session_id}-e"))
        await store.ingest_session(key(session_id), memories_of(session_id), NOW)

    assert await store.delete_session(key("s1"), with_memories=False, now=NOW)
    assert await store.delete_session(key("s2"), with_memories=True, now=NOW)
    assert not await store.delete_session(key("s2"), with_memories=True, now=NOW)

    assert await store.read_session(key("s1"), NOW) is None
    assert await store.find_event(key("s1"), "s1-e") is None
    remembered = await store.search_memories(APP, "ada", "flight", 10, LIMIT)
    assert sorted(record.session_id for record, _share in remembered) == ["s1", "s3"]


async def test_deleting_an_expired_session_reports_it_missing_and_deletes_it(store: Store):
    await create(store, key(), expiry=Expiry(ttl_seconds=10))
    assert await store.count_expired(NOW + 10) == 1

    assert not await store.delete_session(key(), with_memories=False, now=NOW + 10)

    assert await store.count_expired(NOW + 10) == 0
