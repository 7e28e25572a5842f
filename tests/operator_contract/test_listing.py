"""Operator store contract: `apps` and `sessions list` read across apps.
Every app with a live session, by name, with its counts; a page of live
sessions by last update (then app, user, id), either way, from a position,
and whether more follow; narrowed by app, user, labels and update times;
each with the number of keys a read of it returns. Expired sessions are
neither listed nor counted."""

from typing import Any

from session_state.admin.store import AppSummary, ListedSession, OperatorStore
from session_state.sessions.domain import Expiry, SessionQuery
from session_state.sessions.labels import LabelFilter
from session_state.sessions.state import ScopedDelta
from session_state.stores import Store

from ..store_contract.scenes import LIMIT, key
from .scenes import APP, NOW, collect, import_sessions, session


async def _import_apps(operator: OperatorStore) -> None:
    await import_sessions(
        operator,
        session("a1", "ada", "alpha", update_time=NOW - 30, labels={"env": "prod"}),
        session("a2", "ada", "alpha", update_time=NOW - 10, labels={"env": "dev", "team": "x"}),
        session("a3", "bob", "alpha", update_time=NOW - 20, expire_time=NOW + 60),
        session("b1", "ada", "beta", update_time=NOW - 10, labels={"env": "prod"}),
        session("b2", "cy", "beta", update_time=NOW - 40),
        # Expired: never listed, never counted.
        session("x1", "ada", "alpha", update_time=NOW - 5, expire_time=NOW),
        session("g1", "ada", "gamma", update_time=NOW - 1, expire_time=NOW - 1),
    )


def _ids(page: list[ListedSession]) -> list[str]:
    return [listed.id for listed in page]


async def _page(operator: OperatorStore, **options: Any) -> tuple[list[str], bool]:
    arguments = {
        "app_name": None,
        "user_id": None,
        "newest_first": False,
        "after": None,
        "limit": 100,
        "now": NOW,
        **options,
    }
    page, more = await operator.page_sessions(**arguments)
    return _ids(page), more


async def test_every_app_with_a_live_session_is_summed_up_by_name(operator: OperatorStore):
    assert await operator.app_summaries(NOW) == []
    await _import_apps(operator)

    assert await operator.app_summaries(NOW) == [
        AppSummary("alpha", 3, 2, NOW - 10),
        AppSummary("beta", 2, 2, NOW - 10),
    ]
    assert [summary.app_name for summary in await operator.app_summaries(NOW - 2)] == [
        "alpha",
        "beta",
        "gamma",
    ]


async def test_sessions_are_listed_by_last_update_then_app_user_and_id_either_way(
    operator: OperatorStore,
):
    await _import_apps(operator)

    oldest_first = ["b2", "a1", "a3", "a2", "b1"]
    assert await _page(operator) == (oldest_first, False)
    assert await _page(operator, newest_first=True) == (oldest_first[::-1], False)
    assert await _page(operator, now=NOW + 60) == (["b2", "a1", "a2", "b1"], False)


async def test_pages_from_a_position_walk_every_session_once(operator: OperatorStore):
    await _import_apps(operator)

    for newest_first in (False, True):
        walked: list[str] = []
        after = None
        while True:
            page, more = await operator.page_sessions(
                app_name=None,
                user_id=None,
                newest_first=newest_first,
                after=after,
                limit=2,
                now=NOW,
            )
            walked += _ids(page)
            if not more:
                break
            last = page[-1]
            after = (last.last_update_time, last.app_name, last.user_id, last.id)
        whole, _ = await _page(operator, newest_first=newest_first)
        assert walked == whole
    assert await _page(operator, limit=5) == (["b2", "a1", "a3", "a2", "b1"], False)
    assert await _page(operator, limit=4) == (["b2", "a1", "a3", "a2"], True)


async def test_a_list_is_narrowed_by_app_user_labels_and_update_times(operator: OperatorStore):
    await _import_apps(operator)

    assert await _page(operator, app_name="alpha") == (["a1", "a3", "a2"], False)
    assert await _page(operator, app_name="alpha", user_id="ada") == (["a1", "a2"], False)
    assert await _page(operator, user_id="ada") == (["a1", "a2", "b1"], False)
    assert await _page(operator, app_name="gamma") == ([], False)
    assert await _page(operator, app_name="nobody") == ([], False)
    for where, expected in [
        (SessionQuery(labels=LabelFilter(equal={"env": "prod"})), ["a1", "b1"]),
        (SessionQuery(labels=LabelFilter(present=("team",))), ["a2"]),
        (SessionQuery(labels=LabelFilter(equal={"env": "prod"}, present=("team",))), []),
        # After: from that time on; before: until it, not at it.
        (SessionQuery(updated_after=NOW - 20), ["a3", "a2", "b1"]),
        (SessionQuery(updated_before=NOW - 20), ["b2", "a1"]),
        # Its order is not read: newest_first is.
        (SessionQuery(updated_after=NOW - 30, updated_before=NOW - 10, order="desc"), ["a1", "a3"]),
    ]:
        assert await _page(operator, where=where) == (expected, False), where


async def test_a_listed_session_holds_its_row_and_counts_every_key_a_read_returns(
    operator: OperatorStore, store: Store
):
    # Written through the API's store: app and user keys are their scopes' own rows.
    await store.create_session(
        key("s1", "ada", APP),
        ScopedDelta({"currency": "eur"}, {"seat": "aisle", "meal": "veg"}, {"a": 1, "b": 2}),
        NOW,
        Expiry(ttl_seconds=60),
        LIMIT,
        forget_expired_memories=False,
    )
    await store.set_labels(key("s1", "ada", APP), {"env": "prod"}, None, None, NOW)
    await store.create_session(
        key("s2", "bob", APP), ScopedDelta(), NOW, Expiry(), LIMIT, forget_expired_memories=False
    )

    page, more = await operator.page_sessions(
        app_name=APP, user_id=None, newest_first=False, after=None, limit=10, now=NOW
    )

    by_id = {listed.id: listed for listed in page}
    assert more is False
    # Labels move neither the revision nor the update time.
    assert by_id["s1"] == ListedSession(
        app_name=APP,
        user_id="ada",
        id="s1",
        last_update_time=NOW,
        revision=0,
        expire_time=NOW + 60,
        state_keys=5,
        labels={"env": "prod"},
    )
    # bob has no user keys; the app's key is his too.
    assert (by_id["s2"].state_keys, by_id["s2"].labels, by_id["s2"].expire_time) == (1, {}, None)
    exported = await collect(operator.live_sessions(APP, "ada", NOW))
    assert [(record.id, record.state, record.labels) for record in exported] == [
        ("s1", {"a": 1, "b": 2}, {"env": "prod"})
    ]
