"""Session lists never depend on an agent's clock (issue 39): events carry
the time of the host that made them, ahead of the server's or behind it,
and a walk of a list is pinned by the change numbers the server gives its
writes (docs/api.md, "Walking a list"). Both lists, both backends, over
real HTTP to a started server."""

import asyncio
import base64
import time
import uuid

import asyncpg
import httpx

from session_state.core import json_codec
from session_state.core.pagination import encode_token
from session_state.sessions.domain import ALL_SESSIONS
from session_state.sessions.page_tokens import SESSIONS_TOKEN, _sessions_list
from tests.paging import every_item

# How far ahead of (or behind) the server's clock agents stamp their events.
SKEWS = (1000.0, 0.05, -3600.0)
USERS = ("ada", "bob")


def _app() -> str:
    # The PostgreSQL server's database is the whole run's: an app per test.
    return f"clocks-{uuid.uuid4().hex[:10]}"


def _lists(app: str) -> list[str]:
    return [f"/apps/{app}/sessions", *(f"/apps/{app}/users/{user}/sessions" for user in USERS)]


async def _create(http: httpx.AsyncClient, app: str, user: str, session_id: str) -> None:
    created = await http.post(f"/apps/{app}/users/{user}/sessions", json={"sessionId": session_id})
    assert created.status_code == 201, created.text


async def _stamp(
    http: httpx.AsyncClient, app: str, user: str, session_id: str, skew: float
) -> float:
    """Appends an event stamped `skew` seconds off this host's clock (the
    server's: one machine); returns the session's lastUpdateTime."""
    stamp = await _append(http, app, user, session_id, skew)
    read = await http.get(f"/apps/{app}/users/{user}/sessions/{session_id}")
    last_update: float = read.json()["lastUpdateTime"]
    assert abs(last_update - stamp) < 1e-3  # the agent's clock is the session's time
    return last_update


async def _append(
    http: httpx.AsyncClient, app: str, user: str, session_id: str, skew: float
) -> float:
    stamp = time.time() + skew
    appended = await http.post(
        f"/apps/{app}/users/{user}/sessions/{session_id}/events",
        json={"author": "agent", "timestamp": stamp},
    )
    assert appended.status_code == 201, appended.text
    return stamp


async def test_sessions_stamped_ahead_or_behind_are_each_listed_once(server):
    app = _app()
    owners: dict[str, str] = {}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        for index, skew in enumerate(SKEWS * 2):
            user, session_id = USERS[index % 2], f"s{index}"
            await _create(http, app, user, session_id)
            owners[session_id] = user
            stamped = await _stamp(http, app, user, session_id, skew)
            if skew > 1:
                assert stamped > time.time()  # still ahead of the server as it lists
        # A list made right after the last append (stamped 50 ms ahead).
        late = "s-late"
        await _create(http, app, "ada", late)
        owners[late] = "ada"
        await _stamp(http, app, "ada", late, 0.05)
        for path in _lists(app):
            user = path.split("/users/")[1].split("/")[0] if "/users/" in path else None
            expected = sorted(s for s, owner in owners.items() if user in (None, owner))
            for order in ("asc", "desc"):
                walked = await every_item(http, path, "sessions", pageSize=2, order=order)
                found = [s["id"] for s in walked]
                assert sorted(found) == expected, (path, order)
                times = [s["lastUpdateTime"] for s in walked]
                assert times == sorted(times, reverse=order == "desc")
            first = (await http.get(path, params={"pageSize": 1000})).json()
            assert sorted(s["id"] for s in first["sessions"]) == expected


async def test_a_walk_beside_skewed_writers_lists_every_untouched_session_once(server):
    """Writers append to some sessions (stamps far ahead, far behind, a
    little ahead) and create others while the lists are walked, at least one
    write between every two pages."""
    app = _app()
    stable: dict[str, str] = {}
    busy: dict[str, str] = {}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        for index in range(12):
            user, session_id = USERS[index % 2], f"stable-{index}"
            await _create(http, app, user, session_id)
            await _stamp(http, app, user, session_id, SKEWS[index % 3])
            stable[session_id] = user
        for index in range(4):
            # Early in the order: listed on the first pages, then moved.
            user, session_id = USERS[index % 2], f"busy-{index}"
            await _create(http, app, user, session_id)
            await _stamp(http, app, user, session_id, -7200.0 + index)
            busy[session_id] = user

        writes = 0
        created: set[str] = set()
        walking = True

        async def writer(number: int) -> None:
            nonlocal writes
            round_ = 0
            async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as own:
                while walking:
                    round_ += 1
                    target = sorted(busy)[(number + round_) % len(busy)]
                    # Ahead moves a session past the walk's position, behind
                    # before it; each stamp newer than the last ahead.
                    skew = (1000.0 + writes, -3600.0 - writes, 0.05)[round_ % 3]
                    await _append(own, app, busy[target], target, skew)
                    if round_ % 4 == 0:
                        fresh = f"new-{number}-{round_}"
                        created.add(fresh)
                        await _create(own, app, USERS[round_ % 2], fresh)
                    writes += 1

        async def walk(path: str, order: str) -> tuple[list[str], int]:
            """The ids a walk lists; and the writes done between its first
            page and its last (it waits for one between every two pages)."""
            found: list[str] = []
            token = None
            started = None
            for _ in range(100):
                params = {"pageSize": 2, "order": order}
                if token is not None:
                    params["pageToken"] = token
                page = await http.get(path, params=params)
                assert page.status_code == 200, page.text
                body = page.json()
                found += [s["id"] for s in body["sessions"]]
                token = body["nextPageToken"]
                if started is None:
                    started = writes
                if token is None:
                    return found, writes - started
                seen = writes
                deadline = time.monotonic() + 20
                while writes == seen:
                    assert time.monotonic() < deadline, "no write between two pages"
                    await asyncio.sleep(0.005)
            raise AssertionError("the pages never end")

        writers = [asyncio.create_task(writer(number)) for number in range(3)]
        try:
            walks = [
                (path, order, *await walk(path, order))
                for path in _lists(app)
                for order in ("asc", "desc")
            ]
        finally:
            walking = False
            await asyncio.gather(*writers)

    for path, order, found, overlapping in walks:
        user = path.split("/users/")[1].split("/")[0] if "/users/" in path else None
        mine = {s for s, owner in stable.items() if user in (None, owner)}
        pages = -(-len(found) // 2)
        # The scenario happened: writes between every two of its pages.
        assert overlapping >= pages - 1 >= 2, (path, order)
        # Every session there all along and untouched: exactly once; none twice.
        assert len(found) == len(set(found)), (path, order, found)
        assert mine <= set(found), (path, order, found)
        assert set(found) <= set(stable) | set(busy) | created


async def test_page_tokens_of_clock_pinned_walks_are_a_clear_400(server):
    app = _app()
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        for index in range(3):
            await _create(http, app, "ada", f"s{index}")
        for user in (None, "ada"):
            path = _lists(app)[0 if user is None else 1]
            identity = _sessions_list(app, user, ALL_SESSIONS)
            # Before walks were pinned, and pinned at the server's time.
            for position in (
                [time.time(), "ada", "s0"],
                [time.time(), "ada", "s0", time.time() + 1],
            ):
                token = encode_token(SESSIONS_TOKEN, identity, position)
                refused = await http.get(path, params={"pageToken": token})
                assert refused.status_code == 400
                assert refused.headers["content-type"] == "application/problem+json"
                problem = refused.json()
                assert problem["code"] == "bad_request"
                assert "earlier version" in problem["detail"]
                assert "start the list again without pageToken" in problem["detail"]
            # A horizon that is not one (an offset past its bound, a string).
            for horizon in ([5, [6]], [5, ["1"]], [-1, []], [5, [0]], [5, list(range(1, 200))]):
                token = encode_token(SESSIONS_TOKEN, identity, [1.0, "ada", "s0", *horizon])
                refused = await http.get(path, params={"pageToken": token})
                assert refused.status_code == 400, horizon
                assert refused.json()["detail"] == "pageToken is not a valid page token"
            # The tokens made now lead on.
            first = (await http.get(path, params={"pageSize": 1})).json()
            rest = await every_item(
                http, path, "sessions", pageSize=1, pageToken=first["nextPageToken"]
            )
            assert [s["id"] for s in first["sessions"] + rest] == ["s0", "s1", "s2"]


async def test_a_write_in_flight_as_a_walk_begins_is_left_out_of_it(
    postgresql_server, postgres_url
):
    """PostgreSQL: a transaction that wrote a session before the walk's
    first page and commits after it is not counted as before the walk, so
    the session it moved is not met again. (SQLite has one writer, whose
    numbers are past the horizon a reader takes.)"""
    app = _app()
    async with httpx.AsyncClient(base_url=postgresql_server.base_url, timeout=30) as http:
        for index in range(4):
            await _create(http, app, "ada", f"s{index}")
            await _stamp(http, app, "ada", f"s{index}", -100.0 + index)
        writer = await asyncpg.connect(postgres_url.replace("+asyncpg", ""))
        try:
            in_flight = writer.transaction()
            await in_flight.start()
            # As an append stamped far ahead writes the row (not committed yet).
            await writer.execute(
                "UPDATE sessions SET update_time = update_time + 5000,"
                " change_number = pg_current_xact_id()::text::bigint"
                " WHERE app_name = $1 AND id = 's0'",
                app,
            )
            writer_xid = int(await writer.fetchval("SELECT pg_current_xact_id()::text"))
            # A later transaction that completes: the snapshot's xmax passes the
            # writer's id, so the writer is among its in-flight ids (an id at
            # or past xmax is left out by the bound alone).
            later = await asyncpg.connect(postgres_url.replace("+asyncpg", ""))
            try:
                async with later.transaction():
                    await later.fetchval("SELECT pg_current_xact_id()")
            finally:
                await later.close()
            first = (await http.get(f"/apps/{app}/sessions", params={"pageSize": 2})).json()
            await in_flight.commit()
        finally:
            await writer.close()
        # The scenario: s0 listed as it was, with the writer in flight.
        assert [s["id"] for s in first["sessions"]] == ["s0", "s1"]
        token = first["nextPageToken"]
        position = json_codec.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))["p"]
        bound, offsets = position[3], position[4]
        assert writer_xid in {bound - offset for offset in offsets}, (
            "the writer was not in flight as the walk began"
        )
        moved = (await http.get(f"/apps/{app}/users/ada/sessions/s0")).json()["lastUpdateTime"]
        assert moved > time.time() + 4000
        rest = await every_item(
            http, f"/apps/{app}/sessions", "sessions", pageSize=2, pageToken=token
        )
        assert [s["id"] for s in rest] == ["s2", "s3"]
