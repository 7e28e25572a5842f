"""Finding sessions (issue 29): both session lists filtered by labels and
update time, ordered either way, paged with tokens bound to their filter;
GET /apps and GET /apps/{app}/users. On SQLite and PostgreSQL."""

import asyncio

from session_state.core.config import Settings
from tests.conftest import asgi_client
from tests.paging import every_item

APP = "/apps/travel"

# (user, session id, labels): created in this order, a second apart.
SESSIONS = [
    ("ada", "a1", {"env": "prod", "team": "x"}),
    ("bob", "b1", {"env": "dev"}),
    ("ada", "a2", {}),
    ("bob", "b2", {"env": "prod"}),
    ("ada", "a3", {"env": "prod", "team": "y"}),
    ("bob", "b3", {"team": "x"}),
    ("ada", "a4", {"env": "prod", "team": "x"}),
    ("bob", "b4", {"env": "prod", "team": ""}),
]


async def seed(client, clock):
    """SESSIONS, at the clock's time plus their index; returns that start."""
    start = clock.now
    for user, session_id, labels in SESSIONS:
        body = {"sessionId": session_id, "labels": labels, "state": {"n": session_id}}
        created = await client.post(f"{APP}/users/{user}/sessions", json=body)
        assert created.status_code == 201, created.text
        clock.advance(1)
    return start


def expected(keep, user=None, descending=False):
    found = [s for s in SESSIONS if keep(s) and user in (None, s[0])]
    return [s[1] for s in (reversed(found) if descending else found)]


async def ids(client, path, **params):
    return [s["id"] for s in await every_item(client, path, "sessions", pageSize=2, **params)]


async def test_filters_and_order_give_exactly_the_matching_sessions_across_pages(
    clocked_client, clock
):
    client = clocked_client
    start = await seed(client, clock)
    app_list, ada_list = f"{APP}/sessions", f"{APP}/users/ada/sessions"
    prod = lambda s: s[2].get("env") == "prod"  # noqa: E731
    assert await ids(client, app_list, label="env:prod") == expected(prod)
    assert await ids(client, ada_list, label="env:prod") == expected(prod, "ada")
    has_team = lambda s: "team" in s[2]  # noqa: E731
    assert await ids(client, app_list, label="team") == expected(has_team)
    # Every filter must match; an empty value is a value.
    both = lambda s: prod(s) and s[2].get("team") == "x"  # noqa: E731
    assert await ids(client, app_list, label=["env:prod", "team:x"]) == expected(both)
    assert await ids(client, app_list, label=["env:prod", "team"]) == expected(
        lambda s: prod(s) and has_team(s)
    )
    assert await ids(client, app_list, label="team:") == ["b4"]
    assert await ids(client, app_list, label="nothing") == []
    # Newest first; with filters too.
    assert await ids(client, app_list, order="desc") == expected(lambda s: True, descending=True)
    assert await ids(client, ada_list, label="env", order="desc") == expected(
        lambda s: "env" in s[2], "ada", descending=True
    )
    # updatedAfter is inclusive, updatedBefore exclusive: [start + 2, start + 5).
    window = {"updatedAfter": start + 2, "updatedBefore": start + 5}
    assert await ids(client, app_list, **window) == ["a2", "b2", "a3"]
    assert await ids(client, app_list, label="env:prod", order="desc", **window) == ["a3", "b2"]
    # An append moves a session to its new update time.
    clock.advance(10)
    appended = await client.post(f"{APP}/users/ada/sessions/a1/events", json={"author": "u"})
    assert appended.status_code == 201
    assert (await ids(client, app_list, label="env:prod"))[-1] == "a1"
    assert await ids(client, app_list, updatedAfter=start + 9) == ["a1"]


async def test_include_state_false_leaves_state_out(clocked_client, clock):
    await seed(clocked_client, clock)
    await clocked_client.post(
        f"{APP}/users/ada/sessions/a1/events",
        json={"author": "u", "actions": {"stateDelta": {"user:tier": "gold", "app:v": 1}}},
    )
    full = (await clocked_client.get(f"{APP}/sessions", params={"label": "team:x"})).json()
    # a1 moved to the end with its event.
    assert [s["state"] for s in full["sessions"]] == [
        {"n": "b3", "app:v": 1},
        {"n": "a4", "user:tier": "gold", "app:v": 1},
        {"n": "a1", "user:tier": "gold", "app:v": 1},
    ]
    bare = await clocked_client.get(
        f"{APP}/sessions", params={"label": "team:x", "includeState": "false"}
    )
    # Left out, not shown as an empty state.
    assert ["state" in s for s in bare.json()["sessions"]] == [False, False, False]
    assert [s["id"] for s in bare.json()["sessions"]] == [s["id"] for s in full["sessions"]]
    assert [s["labels"] for s in bare.json()["sessions"]] == [s["labels"] for s in full["sessions"]]


async def test_a_walk_ends_where_it_began_so_an_update_never_lists_a_session_twice(
    clocked_client, clock
):
    await seed(clocked_client, clock)
    for path, order in ((f"{APP}/sessions", "asc"), (f"{APP}/users/ada/sessions", "desc")):
        params = {"pageSize": 2, "order": order}
        there = {s["id"] for s in await every_item(clocked_client, path, "sessions", **params)}
        first = (await clocked_client.get(path, params=params)).json()
        listed = [s["id"] for s in first["sessions"]]
        # During the walk: the listed sessions are updated (moving past the
        # walk's position) and a new one is created.
        clock.advance(1)
        for session in first["sessions"]:
            appended = await clocked_client.post(
                f"{APP}/users/{session['userId']}/sessions/{session['id']}/events",
                json={"author": "u"},
            )
            assert appended.status_code == 201
        new_id = f"new-{order}"
        created = await clocked_client.post(f"{APP}/users/ada/sessions", json={"sessionId": new_id})
        assert created.status_code == 201
        rest = await every_item(
            clocked_client, path, "sessions", pageToken=first["nextPageToken"], **params
        )
        walked = listed + [s["id"] for s in rest]
        # Each session there when the walk began, once; not the new one.
        assert len(walked) == len(set(walked)) and set(walked) == there
        # The next walk sees what changed.
        again = await every_item(clocked_client, path, "sessions", **params)
        assert {s["id"] for s in again} == there | {new_id} and len(again) == len(there) + 1


async def test_a_page_token_is_refused_by_a_list_of_another_filter(clocked_client, clock):
    client = clocked_client
    await seed(client, clock)
    path = f"{APP}/sessions"
    first = await client.get(path, params={"label": "env:prod", "pageSize": 1})
    token = first.json()["nextPageToken"]
    assert token is not None
    same = await client.get(path, params={"label": "env:prod", "pageSize": 3, "pageToken": token})
    assert same.status_code == 200
    assert (
        await client.get(
            path, params={"pageToken": token, "label": "env:prod", "includeState": "false"}
        )
    ).status_code == 200  # what is shown is not which
    for other in (
        {"label": "env:dev"},
        {},
        {"label": ["env:prod", "team"]},
        {"label": "env:prod", "order": "desc"},
        {"label": "env:prod", "updatedAfter": 0},
        {"label": "env:prod", "updatedBefore": 1e12},
    ):
        refused = await client.get(path, params={**other, "pageToken": token})
        assert refused.status_code == 400, other
        assert refused.json()["detail"] == "pageToken does not belong to this list"
    # Nor by another list, and not by the lists of apps and users.
    user_list = f"{APP}/users/ada/sessions"
    assert (
        await client.get(user_list, params={"label": "env:prod", "pageToken": token})
    ).status_code == 400
    assert (await client.get("/apps", params={"pageToken": token})).status_code == 400
    assert (await client.get(f"{APP}/users", params={"pageToken": token})).status_code == 400


HOSTILE_QUERIES = [
    {"label": "Env:prod"},
    {"label": "env:Prod"},
    {"label": ":prod"},
    {"label": "env:prod:x"},
    {"label": "e" * 64},
    {"label": "env:" + "v" * 64},
    {"label": "env\n"},
    {"label": "env:\u0000"},
    {"label": "k" * 10_000},
    {"label": [f"k{i}" for i in range(17)]},
    {"label": ["env:prod", "env:dev"]},
    {"updatedAfter": "nan"},
    {"updatedBefore": "inf"},
    {"updatedAfter": "yesterday"},
    {"order": "sideways"},
    {"includeState": "maybe"},
    {"pageToken": "x" * 5000},
    {"pageToken": "eyJrIjoic2Vzc2lvbnMifQ"},
]


async def test_hostile_filters_are_a_clear_4xx(client):
    for path in (f"{APP}/sessions", f"{APP}/users/ada/sessions"):
        for query in HOSTILE_QUERIES:
            response = await client.get(path, params=query)
            assert response.status_code in (400, 422), (query, response.text)
            assert response.headers["content-type"] == "application/problem+json"
            assert len(response.content) < 10_000
    named = await client.get(f"{APP}/sessions", params={"label": "Env:prod"})
    assert "label filter 'Env:prod'" in named.json()["detail"]


async def test_filtered_pages_miss_nothing_and_repeat_nothing_under_concurrent_writes(client):
    """Walks of the prod sessions while other requests create sessions of
    both labels and append to existing ones (moving them in the order)."""
    users = ("ada", "bob")
    for index in range(24):
        body = {"sessionId": f"s{index:02d}", "labels": {"env": "prod" if index % 2 else "dev"}}
        assert (
            await client.post(f"{APP}/users/{users[index % 3 % 2]}/sessions", json=body)
        ).status_code == 201
    before = (await client.get(f"{APP}/sessions", params={"pageSize": 100})).json()["sessions"]
    prod_before = {s["id"] for s in before if s.get("labels") == {"env": "prod"}}
    cutoff = max(s["lastUpdateTime"] for s in before) + 1e-6
    touched: dict[str, int] = {}
    created: set[str] = set()
    writes_during_walks = 0
    walking = True

    async def writer(number):
        nonlocal writes_during_walks
        round_ = 0
        while walking:
            round_ += 1
            env = "prod" if round_ % 2 else "dev"
            body = {"sessionId": f"w{number}-{round_}", "labels": {"env": env}}
            created.add(body["sessionId"])
            assert (await client.post(f"{APP}/users/ada/sessions", json=body)).status_code == 201
            target = sorted(prod_before)[(number * 7 + round_) % len(prod_before)]
            owner = next(s["userId"] for s in before if s["id"] == target)
            touched[target] = touched.get(target, 0) + 1
            appended = await client.post(
                f"{APP}/users/{owner}/sessions/{target}/events", json={"author": "u"}
            )
            assert appended.status_code == 201
            writes_during_walks += 1
            await asyncio.sleep(0)

    async def walk(**params):
        return await every_item(
            client, f"{APP}/sessions", "sessions", pageSize=3, label="env:prod", **params
        )

    writers = [asyncio.create_task(writer(number)) for number in range(3)]
    try:
        await asyncio.sleep(0)
        writes_before = writes_during_walks
        ascending = await walk()
        descending = await walk(order="desc")
        bounded = await walk(updatedBefore=cutoff)
    finally:
        walking = False
        await asyncio.gather(*writers)
    # The writes interleaved with the walks (on a fast machine the first walk
    # can end before the first write does: counted over the three).
    assert writes_during_walks > writes_before
    assert touched
    stable = prod_before - set(touched)
    # Each walk is pinned where it began (by the server's change numbers):
    # every session that stayed put exactly once, none twice (the walks may
    # list writers' sessions created before they began;
    # test_a_walk_ends_where_it_began... shows none created during one is).
    for listed in (ascending, descending, bounded):
        assert all(s["labels"] == {"env": "prod"} for s in listed)
        found = [s["id"] for s in listed]
        assert len(found) == len(set(found))
        assert stable <= set(found) <= prod_before | created


async def test_apps_and_users_are_listed_with_counts_and_paged(clocked_client, clock):
    client = clocked_client
    start = await seed(client, clock)
    for app in ("shop", "zoo"):
        assert (
            await client.post(f"/apps/{app}/users/cy/sessions", json={"sessionId": "s"})
        ).status_code == 201
    expiring = await client.post(
        "/apps/zoo/users/dee/sessions", json={"sessionId": "t", "ttlSeconds": 5}
    )
    assert expiring.status_code == 201
    apps = await every_item(client, "/apps", "apps", pageSize=1)
    assert apps == [
        {"appName": "shop", "sessionCount": 1},
        {"appName": "travel", "sessionCount": 8},
        {"appName": "zoo", "sessionCount": 2},
    ]
    users = await every_item(client, f"{APP}/users", "users", pageSize=1)
    assert users == [
        {"userId": "ada", "sessionCount": 4, "lastUpdateTime": start + 6},
        {"userId": "bob", "sessionCount": 4, "lastUpdateTime": start + 7},
    ]
    # An expired session is not counted; an app with none left is not listed.
    clock.advance(10)
    assert await every_item(client, "/apps/zoo/users", "users") == [
        {"userId": "cy", "sessionCount": 1, "lastUpdateTime": start + 8}
    ]
    assert await every_item(client, "/apps/nothing/users", "users") == []
    # A users token is its app's.
    token = (await client.get(f"{APP}/users", params={"pageSize": 1})).json()["nextPageToken"]
    assert (await client.get("/apps/shop/users", params={"pageToken": token})).status_code == 400
    assert (await client.get("/apps", params={"pageToken": token})).status_code == 400


async def test_apps_shows_only_the_apps_of_the_caller_s_key(database_url):
    keys = {"k" * 20: ["travel", "zoo"], "a" * 20: ["*"]}
    settings = Settings(database_url=database_url, api_keys=keys)
    async with asgi_client(settings) as client:
        for app in ("travel", "shop"):
            created = await client.post(
                f"/apps/{app}/users/u/sessions", headers={"Authorization": f"Bearer {'a' * 20}"}
            )
            assert created.status_code == 201
        listed = await client.get("/apps", headers={"Authorization": f"Bearer {'k' * 20}"})
        assert listed.json()["apps"] == [{"appName": "travel", "sessionCount": 1}]
        every = await client.get("/apps", headers={"Authorization": f"Bearer {'a' * 20}"})
        assert [app["appName"] for app in every.json()["apps"]] == ["shop", "travel"]
        assert (await client.get("/apps")).status_code == 401
        wrong = await client.get("/apps", headers={"Authorization": f"Bearer {'w' * 20}"})
        assert wrong.status_code == 401
        forbidden = await client.get(
            "/apps/shop/users", headers={"Authorization": f"Bearer {'k' * 20}"}
        )
        assert forbidden.status_code == 403


async def test_erasure_takes_the_labels_with_the_sessions(clocked_client, clock):
    client = clocked_client
    await seed(client, clock)
    assert (await client.delete(f"{APP}/users/ada")).status_code == 204
    remaining = await ids(client, f"{APP}/sessions", label="env:prod")
    assert remaining == ["b2", "b4"]
    assert [u["userId"] for u in (await client.get(f"{APP}/users")).json()["users"]] == ["bob"]
    # A new session of the erased user's id starts with no labels.
    again = await client.post(f"{APP}/users/ada/sessions", json={"sessionId": "a1"})
    assert "labels" not in again.json()
    assert await ids(client, f"{APP}/users/ada/sessions", label="env") == []
