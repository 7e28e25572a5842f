"""Store contract: session labels (stored with a create, a fork, replaced by
set_labels), label and time filters and order of a listing, and the apps and
users with live sessions."""

from session_state.sessions.domain import (
    ALL_SESSIONS,
    AppendNotApplied,
    Expiry,
    ForkSource,
    SessionPosition,
    SessionQuery,
)
from session_state.sessions.labels import LabelFilter
from session_state.sessions.state import ScopedDelta
from session_state.stores import Store

from .scenes import APP, LIMIT, NOW, create, event, key, outcome_of


async def _labelled(store: Store, session_id: str, user_id: str, labels: dict, now: float):
    created = await store.create_session(
        key(session_id, user_id),
        ScopedDelta({}, {}, {}),
        now,
        Expiry(),
        LIMIT,
        forget_expired_memories=False,
        labels=labels,
    )
    assert created is not None


async def test_labels_are_stored_replaced_and_copied_by_a_fork(store: Store):
    await _labelled(store, "s1", "ada", {"env": "prod"}, NOW)
    assert (await store.read_session(key(), NOW)).labels == {"env": "prod"}
    # Replaced whole, the revision unmoved, only at the expected revision.
    assert await store.set_labels(key(), {"team": "x"}, None, 5, NOW) is None
    assert await store.set_labels(key(), {"team": "x"}, Expiry(ttl_seconds=60), 0, NOW) == 0
    found = await store.read_session(key(), NOW)
    assert (found.labels, found.revision, found.expire_time) == ({"team": "x"}, 0, NOW + 60)
    assert await store.set_labels(key("none"), {}, None, None, NOW) is None
    # A fork copies them unless given its own.
    assert await store.fork_session(ForkSource(key(), None, None), "f1", NOW, Expiry(),
                                    forget_expired_memories=False) == "forked"  # fmt: skip
    assert (await store.read_session(key("f1"), NOW)).labels == {"team": "x"}
    given = ForkSource(key(), None, None, {})
    assert await store.fork_session(given, "f2", NOW, Expiry(), forget_expired_memories=False) == (
        "forked"
    )
    assert (await store.read_session(key("f2"), NOW)).labels == {}
    assert await store.set_labels(key(), {}, None, None, NOW) == 0
    assert (await store.read_session(key(), NOW)).labels == {}


async def test_a_listing_keeps_what_its_query_selects_in_its_order(store: Store):
    for index, (user_id, labels) in enumerate(
        [("ada", {"env": "prod"}), ("bob", {"env": "dev"}), ("ada", {}),
         ("bob", {"env": "prod", "team": ""}), ("ada", {"team": "x"})]
    ):  # fmt: skip
        await _labelled(store, f"s{index}", user_id, labels, NOW + index)
    prod = SessionQuery(LabelFilter({"env": "prod"}))
    listed = await store.page_sessions(APP, None, None, 10, LIMIT, NOW + 9, prod)
    assert [row.id for row in listed.sessions] == ["s0", "s3"]
    assert listed.sessions[1].labels == {"env": "prod", "team": ""}
    team = SessionQuery(LabelFilter({}, ("team",)), order="desc", include_state=False)
    listed = await store.page_sessions(APP, None, None, 1, LIMIT, NOW + 9, team)
    assert ([row.id for row in listed.sessions], listed.more) == (["s4"], True)
    assert (listed.app_state, listed.user_states) == ({}, {})
    last = listed.sessions[-1]
    assert listed.horizon is not None
    after = SessionPosition((last.update_time, last.user_id, last.id), listed.horizon)
    rest = await store.page_sessions(APP, None, after, 5, LIMIT, NOW + 9, team)
    assert [row.id for row in rest.sessions] == ["s3"]
    window = SessionQuery(updated_after=NOW + 1, updated_before=NOW + 3)
    listed = await store.page_sessions(APP, "ada", None, 10, LIMIT, NOW + 9, window)
    assert [row.id for row in listed.sessions] == ["s2"]
    everything = await store.page_sessions(APP, None, None, 10, LIMIT, NOW + 9, ALL_SESSIONS)
    assert len(everything.sessions) == 5


async def test_apps_and_users_with_live_sessions_are_paged_with_counts(store: Store):
    await create(store, key("a", "ada"))
    await create(store, key("b", "ada"), now=NOW + 2)
    await create(store, key("c", "bob"), now=NOW + 1)
    await create(store, key("x", "cy", "other"))
    await create(store, key("y", "cy", "gone"), now=NOW - 20, expiry=Expiry(ttl_seconds=10))
    apps, more = await store.page_apps(None, None, 1, NOW + 5)
    assert ([(a.app_name, a.session_count) for a in apps], more) == ([(APP, 3)], True)
    apps, more = await store.page_apps(None, APP, 10, NOW + 5)
    assert ([(a.app_name, a.session_count) for a in apps], more) == ([("other", 1)], False)
    apps, _ = await store.page_apps(frozenset({"other", "gone"}), None, 10, NOW + 5)
    assert [a.app_name for a in apps] == ["other"]
    users, more = await store.page_users(APP, None, 10, NOW + 5)
    assert [(u.user_id, u.session_count, u.last_update_time) for u in users] == [
        ("ada", 2, NOW + 2),
        ("bob", 1, NOW + 1),
    ]
    users, more = await store.page_users(APP, "ada", 10, NOW + 5)
    assert ([u.user_id for u in users], more) == (["bob"], False)


async def test_a_filtered_listing_follows_every_write_of_labels_and_update_time(store: Store):
    """The filters answer from what each write left: appends move a session
    in the order, labels written with an append or alone replace the old
    ones, a refused append changes nothing, a delete and an erasure take
    the session (SQLite answers from label rows kept by triggers, 0016)."""

    async def listed(*, present: tuple[str, ...] = (), **options) -> list[str]:
        query = SessionQuery(LabelFilter({} if present else {"env": "prod"}, present), **options)
        page = await store.page_sessions(APP, None, None, 10, LIMIT, NOW + 50, query)
        return [row.id for row in page.sessions]

    for index, labels in enumerate([{"env": "prod"}, {"env": "prod"}, {}]):
        await _labelled(store, f"s{index + 1}", "ada" if index else "bob", labels, NOW + index)
    assert await listed() == ["s1", "s2"]
    await store.append_event(key("s1", "bob"), event("e1", timestamp=NOW + 5), None, LIMIT, NOW)
    assert await listed() == ["s2", "s1"]
    assert await listed(order="desc") == ["s1", "s2"]
    assert await listed(updated_after=NOW + 2) == ["s1"]
    # Labels with an event: one write; a refused one writes neither.
    new_labels = {"team": "x"}
    assert await store.append_event(key("s2"), event("e2", timestamp=NOW + 6), None, LIMIT, NOW,
                                    new_labels=new_labels) == 1  # fmt: skip
    assert await listed() == ["s1"] and await listed(present=("team",)) == ["s2"]
    stale = store.append_event(key("s3"), event("e3"), 4, LIMIT, NOW, new_labels={"env": "prod"})
    assert isinstance(await outcome_of(stale), AppendNotApplied)
    assert (await store.read_session(key("s3"), NOW)).labels == {}
    assert await store.set_labels(key("s3"), {"env": "prod", "team": ""}, None, None, NOW) == 0
    assert await listed() == ["s3", "s1"] and await listed(present=("team",)) == ["s3", "s2"]
    assert await store.delete_session(key("s3"), with_memories=False, now=NOW)
    await store.erase_user(APP, "bob", 100)
    assert await listed() == [] and await listed(present=("team",)) == ["s2"]
