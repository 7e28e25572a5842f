"""Session expiry, on a clock the test moves: an idle timeout that every
stored append pushes out, an absolute time, PATCH changing either, the
deployment's and the app's defaults; an expired session is missing for
every call at once, before any sweep, and its id is free again."""

import asyncio

import httpx
import pytest

from session_state.core.config import Settings
from session_state.main import create_app

from .conftest import Clock
from .test_observability import _metric

APP = "/apps/travel"
ADA = f"{APP}/users/ada"


def _at(moment: float) -> object:
    """A time to the millisecond (pytest.approx's default tolerance, relative,
    is half an hour at today's epoch seconds)."""
    return pytest.approx(moment, rel=0, abs=0.001)


async def _create(client: httpx.AsyncClient, session_id: str, **body) -> dict:
    created = await client.post(f"{ADA}/sessions", json={"sessionId": session_id, **body})
    assert created.status_code == 201, created.text
    return created.json()


async def _append(client: httpx.AsyncClient, session_id: str, **delta) -> httpx.Response:
    event = {"author": "planner", "actions": {"stateDelta": delta}}
    return await client.post(f"{ADA}/sessions/{session_id}/events", json=event)


async def _listed(client: httpx.AsyncClient, path: str) -> list[str]:
    return [session["id"] for session in (await client.get(path)).json()["sessions"]]


async def _every_call_finds_it_missing(client: httpx.AsyncClient, session_id: str) -> None:
    path = f"{ADA}/sessions/{session_id}"
    assert (await client.get(path)).status_code == 404
    assert (await client.get(f"{path}/events")).status_code == 404
    assert (await _append(client, session_id, step=99)).status_code == 404
    assert (await client.patch(path, json={"stateDelta": {"k": 1}})).status_code == 404
    assert (await client.patch(path, json={"ttlSeconds": 60})).status_code == 404
    ingest = await client.post(f"{ADA}/memory", json={"sessionId": session_id})
    assert ingest.status_code == 404
    fork = await client.post(f"{path}/fork", json={})
    assert fork.status_code == 404
    assert session_id not in await _listed(client, f"{ADA}/sessions")
    assert session_id not in await _listed(client, f"{APP}/sessions")
    assert (await client.delete(path)).status_code == 404


async def test_an_idle_timeout_is_pushed_out_by_every_stored_append(clocked_client, clock: Clock):
    start = clock.now
    created = await _create(clocked_client, "s", ttlSeconds=60)
    assert created["expireTime"] == _at(start + 60)

    clock.advance(59)
    assert (await _append(clocked_client, "s", step=1)).status_code == 201
    read = (await clocked_client.get(f"{ADA}/sessions/s")).json()
    assert read["expireTime"] == _at(start + 59 + 60)

    clock.advance(59)  # 118 s after creation, 59 after the append
    assert (await clocked_client.get(f"{ADA}/sessions/s")).status_code == 200
    assert "s" in await _listed(clocked_client, f"{ADA}/sessions")

    clock.advance(1)  # exactly the expiry time: expired
    await _every_call_finds_it_missing(clocked_client, "s")


async def test_an_idle_timeout_is_pushed_out_by_a_batch_of_events(clocked_client, clock: Clock):
    start = clock.now
    await _create(clocked_client, "s", ttlSeconds=60)

    clock.advance(59)
    events = [{"author": "planner", "actions": {"stateDelta": {"step": n}}} for n in range(3)]
    stored = await clocked_client.post(f"{ADA}/sessions/s/events/batch", json={"events": events})
    assert stored.status_code == 201, stored.text
    read = (await clocked_client.get(f"{ADA}/sessions/s")).json()
    assert read["expireTime"] == _at(start + 59 + 60)

    clock.advance(60)
    await _every_call_finds_it_missing(clocked_client, "s")


async def test_an_idle_timeout_is_pushed_out_by_appends_sent_together(
    clocked_client, clock: Clock, database_url
):
    """On PostgreSQL, concurrent appends share statements (group commit):
    each of their sessions' timeouts restarts as for an append alone."""
    start = clock.now
    names = [f"s{index}" for index in range(12)]
    for name in names:
        await _create(clocked_client, name, ttlSeconds=60)

    clock.advance(59)
    before = (await clocked_client.get("/metrics")).text
    appended = await asyncio.gather(*(_append(clocked_client, name, step=1) for name in names))
    after = (await clocked_client.get("/metrics")).text
    assert [response.status_code for response in appended] == [201] * len(names)
    if database_url.startswith("postgresql"):
        # At least one statement carried more than one append.
        statements = _metric(after, "session_state_append_batch_size_count") - _metric(
            before, "session_state_append_batch_size_count"
        )
        assert statements < len(names)
    for name in names:
        read = (await clocked_client.get(f"{ADA}/sessions/{name}")).json()
        assert read["expireTime"] == _at(start + 59 + 60), name

    clock.advance(60)
    for name in names:
        assert (await clocked_client.get(f"{ADA}/sessions/{name}")).status_code == 404


async def test_a_partial_event_is_not_stored_and_does_not_push_the_expiry(
    clocked_client, clock: Clock
):
    start = clock.now
    await _create(clocked_client, "s", ttlSeconds=60)
    clock.advance(30)
    partial = {"author": "planner", "partial": True, "content": {"parts": [{"text": "typ"}]}}
    sent = await clocked_client.post(f"{ADA}/sessions/s/events", json=partial)
    assert sent.status_code == 200
    read = (await clocked_client.get(f"{ADA}/sessions/s")).json()
    assert read["expireTime"] == _at(start + 60)


async def test_an_absolute_expiry_is_not_moved_by_appends(clocked_client, clock: Clock):
    expire_time = clock.now + 100
    created = await _create(clocked_client, "s", expireTime=expire_time)
    assert created["expireTime"] == expire_time
    clock.advance(99)
    assert (await _append(clocked_client, "s", step=1)).status_code == 201
    assert (await clocked_client.get(f"{ADA}/sessions/s")).json()["expireTime"] == expire_time
    clock.advance(1)
    await _every_call_finds_it_missing(clocked_client, "s")


async def test_a_session_without_expiry_has_exactly_adks_six_fields(clocked_client, clock: Clock):
    created = await _create(clocked_client, "s")
    assert set(created) == {"id", "appName", "userId", "state", "events", "lastUpdateTime"}
    clock.advance(100 * 365 * 24 * 3600)
    read = (await clocked_client.get(f"{ADA}/sessions/s")).json()
    assert set(read) == set(created)
    listed = (await clocked_client.get(f"{ADA}/sessions")).json()["sessions"]
    assert set(listed[0]) == set(created)


async def test_listings_hide_expired_sessions_and_page_past_them(clocked_client, clock: Clock):
    for number in range(6):
        expiring = {"ttlSeconds": 10} if number % 2 else {}
        await _create(clocked_client, f"s{number}", **expiring)
    clock.advance(10)
    seen: list[str] = []
    token = None
    while True:
        params = {"pageSize": 1} | ({"pageToken": token} if token else {})
        page = (await clocked_client.get(f"{APP}/sessions", params=params)).json()
        seen += [session["id"] for session in page["sessions"]]
        token = page["nextPageToken"]
        if token is None:
            break
    assert seen == ["s0", "s2", "s4"]


async def test_patch_sets_changes_and_removes_the_expiry_without_moving_the_revision(
    clocked_client, clock: Clock
):
    path = f"{ADA}/sessions/s"
    await _create(clocked_client, "s")
    assert (await _append(clocked_client, "s", step=1)).status_code == 201

    patched = await clocked_client.patch(path, json={"ttlSeconds": 30}, headers={"If-Match": '"1"'})
    assert patched.status_code == 200, patched.text
    assert patched.headers["ETag"] == '"1"'
    assert patched.json()["expireTime"] == _at(clock.now + 30)
    assert len(patched.json()["events"]) == 1  # no event recorded for an expiry

    absolute = clock.now + 500
    patched = await clocked_client.patch(path, json={"expireTime": absolute})
    assert patched.json()["expireTime"] == absolute
    clock.advance(100)
    assert (await _append(clocked_client, "s", step=2)).status_code == 201
    assert (await clocked_client.get(path)).json()["expireTime"] == absolute  # not an idle one

    patched = await clocked_client.patch(path, json={"expireTime": None})
    assert "expireTime" not in patched.json()
    clock.advance(10_000)
    assert (await clocked_client.get(path)).status_code == 200


async def test_patch_of_state_and_expiry_is_one_write(clocked_client, clock: Clock):
    path = f"{ADA}/sessions/s"
    await _create(clocked_client, "s", ttlSeconds=60)
    both = await clocked_client.patch(path, json={"stateDelta": {"stage": "paid"}, "ttlSeconds": 5})
    assert both.status_code == 200, both.text
    assert both.json()["state"] == {"stage": "paid"}
    assert both.json()["expireTime"] == _at(clock.now + 5)

    # A stale If-Match changes neither the state nor the expiry.
    stale = await clocked_client.patch(
        path, json={"stateDelta": {"stage": "lost"}, "ttlSeconds": 900}, headers={"If-Match": '"0"'}
    )
    assert stale.status_code == 412
    stale = await clocked_client.patch(path, json={"ttlSeconds": 900}, headers={"If-Match": '"0"'})
    assert stale.status_code == 412
    read = (await clocked_client.get(path)).json()
    assert read["state"] == {"stage": "paid"}
    assert read["expireTime"] == _at(clock.now + 5)


async def test_a_state_too_large_leaves_the_expiry_as_it_was(database_url, clock: Clock):
    settings = Settings(database_url=database_url, max_state_bytes=2048, sweep_interval_seconds=0)
    app = create_app(settings, clock=clock)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
    ):
        await _create(client, "s", ttlSeconds=60)
        too_large = await client.patch(
            f"{ADA}/sessions/s", json={"stateDelta": {"blob": "x" * 4096}, "ttlSeconds": 5}
        )
        assert too_large.status_code == 422
        read = (await client.get(f"{ADA}/sessions/s")).json()
        assert read["expireTime"] == _at(clock.now + 60) and read["state"] == {}


async def test_the_id_of_an_expired_session_is_free_again(clocked_client, clock: Clock):
    await _create(clocked_client, "s", ttlSeconds=10, state={"old": True})
    assert (await _append(clocked_client, "s", step=1)).status_code == 201
    clock.advance(10)
    again = await _create(clocked_client, "s", state={"new": True})
    assert again["state"] == {"new": True} and "expireTime" not in again
    read = (await clocked_client.get(f"{ADA}/sessions/s")).json()
    assert read["events"] == [] and read["state"] == {"new": True}
    # A live session's id is still taken.
    taken = await clocked_client.post(f"{ADA}/sessions", json={"sessionId": "s"})
    assert taken.status_code == 409


async def test_defaults_of_the_deployment_and_of_an_app(database_url, clock: Clock):
    settings = Settings(
        database_url=database_url,
        default_ttl_seconds=3600,
        app_ttl_seconds={"chat": 60},
        sweep_interval_seconds=0,
    )
    app = create_app(settings, clock=clock)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
    ):
        travel = (await client.post(f"{ADA}/sessions", json={})).json()
        assert travel["expireTime"] == _at(clock.now + 3600)
        chat = (await client.post("/apps/chat/users/ada/sessions")).json()
        assert chat["expireTime"] == _at(clock.now + 60)
        asked = (await client.post(f"{ADA}/sessions", json={"ttlSeconds": 5})).json()
        assert asked["expireTime"] == _at(clock.now + 5)
        # Null asks for no expiry: the defaults are for requests that name none.
        kept = (await client.post(f"{ADA}/sessions", json={"ttlSeconds": None})).json()
        assert "expireTime" not in kept
        # The default is an idle timeout: an append pushes it out.
        clock.advance(50)
        appended = await client.post(
            f"/apps/chat/users/ada/sessions/{chat['id']}/events", json={"author": "user"}
        )
        assert appended.status_code == 201
        clock.advance(50)
        assert (await client.get(f"/apps/chat/users/ada/sessions/{chat['id']}")).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {"ttlSeconds": 0},
        {"ttlSeconds": -5},
        {"ttlSeconds": "60"},
        {"ttlSeconds": True},
        {"ttlSeconds": 1e20},
        {"ttlSeconds": [60]},
        {"expireTime": "tomorrow"},
        {"expireTime": 1.0},
        {"expireTime": 1e300},
        {"ttlSeconds": 60, "expireTime": 4_000_000_000},
    ],
)
async def test_bad_expiry_is_a_422_and_writes_nothing(clocked_client, body):
    created = await clocked_client.post(f"{ADA}/sessions", json={"sessionId": "s", **body})
    assert created.status_code == 422, created.text
    assert created.headers["content-type"] == "application/problem+json"
    assert (await clocked_client.get(f"{ADA}/sessions/s")).status_code == 404
    await _create(clocked_client, "s")
    patched = await clocked_client.patch(f"{ADA}/sessions/s", json=body)
    assert patched.status_code == 422, patched.text
    assert "expireTime" not in (await clocked_client.get(f"{ADA}/sessions/s")).json()


@pytest.mark.parametrize("body", [{}, {"stateDelta": None}, {"other": 1}, [], 5])
async def test_a_patch_that_changes_nothing_is_a_422(clocked_client, body):
    await _create(clocked_client, "s")
    patched = await clocked_client.patch(f"{ADA}/sessions/s", json=body)
    assert patched.status_code == 422, patched.text


async def test_an_expire_time_in_the_past_is_refused_with_the_servers_clock(
    clocked_client, clock: Clock
):
    late = await clocked_client.post(f"{ADA}/sessions", json={"expireTime": clock.now})
    assert late.status_code == 422
    assert late.json()["errors"][0]["loc"] == ["body", "expireTime"]
    assert "DELETE" in late.json()["errors"][0]["msg"]
