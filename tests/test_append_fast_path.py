"""The append route as the fast path in front of FastAPI serves it, over a
real socket to a started server: what an ASGI test client cannot show."""

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from urllib.parse import quote

import httpx
from fastapi import FastAPI
from prometheus_client import Counter

from session_state.core.metrics import FAST_PATH_APPENDS
from session_state.main import create_app
from session_state.sessions.append_fast_path import AppendFastPath, AppendsFastPath
from tests.test_observability import _metric

FAST_PATH = "session_state_append_fast_path_total"
ASGI_URL = "http://127.0.0.1"


async def _fast_path_count(client: httpx.AsyncClient, server_url: str, outcome: str) -> float:
    metrics = await client.get(f"{server_url}/metrics")
    return _metric(metrics.text, FAST_PATH, outcome=outcome)


async def test_a_body_cut_short_by_a_disconnect_stores_nothing(server):
    base = f"{server.base_url}/apps/cut/users/u/sessions"
    async with httpx.AsyncClient() as client:
        created = await client.post(base, json={"sessionId": "s"})
        assert created.status_code == 201
        gone_before = await _fast_path_count(client, server.base_url, "client_gone")
        # A complete JSON event, but the request announced more bytes than that
        # and the client went away before sending them.
        event = b'{"id": "half", "author": "a", "actions": {"stateDelta": {"k": 1}}}'
        host, port = server.base_url.removeprefix("http://").split(":")
        _, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"POST /apps/cut/users/u/sessions/s/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (len(event) + 100, event)
        )
        await writer.drain()
        writer.close()
        await writer.wait_closed()
        # The outcome to wait for: the fast path saw the client go.
        deadline = time.monotonic() + 10
        while await _fast_path_count(client, server.base_url, "client_gone") == gone_before:
            assert time.monotonic() < deadline, "the server never saw the request end"
            await asyncio.sleep(0.02)
        session = await client.get(f"{base}/s")
    assert session.json()["events"] == []
    assert session.json()["state"] == {}
    assert session.headers["ETag"] == '"0"'


# -- the fast path answers exactly as the FastAPI route it stands in front of --

# Each session id as sent (percent-encoded but for '%'), and whether the
# fast path takes its appends: only those the route would accept.
SESSION_IDS = {
    "s": True,
    "a b": True,
    " leading-space": False,
    "\u00a0leading-nbsp": False,
    "tab\there": False,
    "é中😀": True,
    "x" * 128: True,
    "x" * 129: False,
    "a%2Fb": True,  # sent as is: the session a/b
    "a/b": True,
    "%41": True,  # sent as is: the session A
    "A": True,
    "%zz": False,  # sent as is: not percent-encoding
    "%C3": False,  # sent as is: not UTF-8
    "trailing-newline\n": False,
    "": False,
    "missing": True,  # never created
}
CREATED = ["s", "a b", "é中😀", "x" * 128, "a/b", "A"]
# '"0"' first: a new event is then refused as stale (412).
IF_MATCHES = {'"0"': True, None: True, "*": True, '"1"': True, "nonsense": False, '"999"': True}
# Near misses of the append path: FastAPI's to answer.
OTHER_PATHS = ["/events/", "/events/batch/", "/events%2F", "/event", ""]
MAX_EVENT_BYTES = 4096  # the apps' limit: one body passes it
FIRST = b'{"id": "e1", "author": "a", "timestamp": 1.5, "actions": {"stateDelta": {"k": 1}}}'
BODIES = [
    FIRST,
    FIRST,  # a retry
    b'{"id": "e4", "author": "a", "timestamp": 5, "actions": {"stateDelta": {"temp:t": 2}}}',
    b'{"id": "e1", "author": "someone else", "timestamp": 2}',
    b'{"id": "e2", "author": "a", "timestamp": 3, "partial": true}',
    b"{not json",
    b"[]",
    b'{"author": 5, "timestamp": "noon"}',
    b"",
    b'{"id": "e3", "author": "a", "timestamp": 4, "actions": {"stateDelta": {"k": "\\u0000"}}}',
    b'{"id": "e5", "author": "a", "timestamp": 6, "content": "%s"}' % (b"x" * MAX_EVENT_BYTES),
]
# Bodies of the batch route (the same fast path, in front of that route).
_TWO = b'[{"id": "b1", "author": "a", "timestamp": 7}, {"id": "b2", "author": "a", "timestamp": 8}]'
_INFINITE = (
    b'[{"id": "b3", "author": "a", "timestamp": 10, "actions": {"stateDelta": {"k": 1e999}}}]'
)
BATCH_BODIES = [
    b'{"events": %s}' % _TWO,
    b'{"events": %s}' % _TWO,  # a retry
    b'{"events": [{"id": "b1", "author": "someone else", "timestamp": 9}]}',
    b'{"events": []}',
    b'{"events": %s}' % _INFINITE,
    b'{"events": "none"}',
    FIRST,
    b"{not json",
    b"",
]


@asynccontextmanager
async def _fast_and_route(settings, prefix: str) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """Clients of two apps on `settings`, started: "fast" as served, "route"
    without the fast paths; each client's base URL ends in `prefix` with its
    name in place of {} ("/apps/{}": sessions of its own)."""
    settings = settings.model_copy(update={"max_event_bytes": MAX_EVENT_BYTES})
    apps = {"fast": create_app(settings), "route": _without_fast_path(create_app(settings))}
    async with AsyncExitStack() as stack:
        clients = {}
        for name, app in apps.items():
            await stack.enter_async_context(app.router.lifespan_context(app))
            clients[name] = await stack.enter_async_context(
                httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=app),
                    base_url=ASGI_URL + prefix.format(name),
                )
            )
        yield clients


def _without_fast_path(app: FastAPI) -> FastAPI:
    fast_paths = (AppendFastPath, AppendsFastPath)
    app.user_middleware = [m for m in app.user_middleware if m.cls not in fast_paths]
    return app


def _outcome(response: httpx.Response) -> tuple[object, ...]:
    body = response.json() if response.content else None
    if isinstance(body, dict):
        body.pop("requestId", None)
    headers = tuple(
        response.headers.get(name) for name in ("content-type", "etag", "session-state-persisted")
    )
    return response.status_code, headers, body


def _counted(counter: Counter, name: str, labels: dict[str, str]) -> float:
    """A sample of one counter, as /metrics would show it (collecting only
    that counter: a test worker's whole registry is large)."""
    for metric in counter.collect():
        for sample in metric.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return 0.0


def _answered_in_process() -> float:
    """The fast path's count of answered appends."""
    return _counted(FAST_PATH_APPENDS, FAST_PATH, {"outcome": "answered"})


# Each route's path suffix, every body (sent on "s"), a few (on the other
# valid ids) and one (on the ids the fast path leaves alone); the batch
# route's requests come after the single appends'.
ROUTES = [
    ("/events", BODIES, [FIRST, FIRST, BODIES[3], BODIES[5], BODIES[-1]], BODIES[:1] + BODIES[-1:]),
    ("/events/batch", BATCH_BODIES, [BATCH_BODIES[i] for i in (0, 2, -1)], BATCH_BODIES[:1]),
]


def _requests() -> list[tuple[str, str | None, bytes, bool]]:
    """(path after /apps/{app}, If-Match, body, whether the fast path takes it)."""
    requests = []
    for suffix, every_body, some_bodies, one_body in ROUTES:
        for session_id, valid_id in SESSION_IDS.items():
            path = f"/users/u/sessions/{quote(session_id, safe='%')}{suffix}"
            # The id is decided before the body is read: every If-Match with
            # every body on one session, a few of each on the others, and an
            # id the fast path leaves alone is left alone whatever the rest.
            if session_id == "s":
                if_matches, bodies = IF_MATCHES, every_body
            elif valid_id:
                if_matches = {key: IF_MATCHES[key] for key in ('"0"', None, "nonsense")}
                bodies = some_bodies
            else:
                if_matches, bodies = {None: True, "nonsense": False}, one_body
            for if_match, valid_if_match in if_matches.items():
                for body in bodies:
                    requests.append((path, if_match, body, valid_id and valid_if_match))
    for suffix in OTHER_PATHS:
        requests.append((f"/users/u/sessions/s{suffix}", None, BODIES[2], False))
    return requests


async def test_the_fast_path_answers_as_the_route_does(settings):
    """The same requests to an app with the fast path and to one without it,
    each app on sessions of its own: the same answers, the fast path having
    answered exactly those it should (its counter moves by one for each)."""
    async with _fast_and_route(settings, "/apps/{}") as clients:
        for name in clients:
            for session_id in CREATED:
                created = await clients[name].post(
                    "/users/u/sessions", json={"sessionId": session_id}
                )
                assert created.status_code == 201, session_id
        served = 0
        statuses = set()
        for path, if_match, body, fast_path_takes_it in _requests():
            headers = {} if if_match is None else {"If-Match": if_match}
            answered_before = _answered_in_process()
            fast = await clients["fast"].post(path, content=body, headers=headers)
            answered = _answered_in_process() - answered_before
            route = await clients["route"].post(path, content=body, headers=headers)
            assert answered == fast_path_takes_it, (path, if_match, body)
            assert _outcome(fast) == _outcome(route), (path, if_match, body)
            served += fast_path_takes_it
            statuses.add(fast.status_code)
        held = {}
        for name, client in clients.items():
            held[name] = []
            for session_id in CREATED:
                stored = await client.get(f"/users/u/sessions/{quote(session_id, safe='')}")
                held[name].append(
                    (stored.headers["ETag"], stored.json()["events"], stored.json()["state"])
                )
        assert held["fast"] == held["route"]  # the same events and state stored
    # Valid If-Match values: five with every body on "s", two with five bodies
    # (three of a batch) on each of the eight other valid session ids.
    assert served == 5 * len(BODIES) + 8 * 2 * 5 + 5 * len(BATCH_BODIES) + 8 * 2 * 3
    assert statuses >= {200, 201, 400, 404, 409, 412, 413, 422}


# The route of appends to several sessions: each app name as sent, and
# whether its fast path takes the request (the app of a valid name only);
# each app (with or without the fast path) has its own, on one database.
APP_NAMES = {
    "{}": True,
    "{}%2Fb": True,
    "%41{}": True,
    "%zz{}": False,
    "%C3{}": False,
    "%0A{}": False,
}
CREATED_APPS = ["{}", "{}/b", "A{}"]
_ONE = b'{"userId": "u", "sessionId": "s", "event": %s}'
APPENDS_BODIES = [
    b'{"appends": [%s, %s]}' % (_ONE % FIRST, _ONE % BODIES[3]),
    b'{"appends": [%s]}' % (_ONE % BODIES[4]),
    b'{"appends": [%s]}' % (_ONE % BODIES[-1]),
    b'{"appends": [%s]}' % (b'{"userId": "u", "sessionId": " s", "event": {}}'),
    b'{"appends": []}',
    b'{"appends": [%s]}' % (_ONE % BODIES[9]),
    b"{not json",
    b"",
]


def _appends_outcome(response: httpx.Response) -> tuple[object, ...]:
    """`_outcome`, without the request ids of the results' problems."""
    status, headers, body = _outcome(response)
    if isinstance(body, dict):
        for result in body.get("results", []):
            result.get("problem", {}).pop("requestId", None)
    return status, headers, body


async def test_the_appends_fast_path_answers_as_its_route_does(settings):
    async with _fast_and_route(settings, "") as clients:
        for name in clients:
            for app_name in CREATED_APPS:
                created = await clients[name].post(
                    f"/apps/{quote(app_name.format(name), safe='')}/users/u/sessions",
                    json={"sessionId": "s"},
                )
                assert created.status_code == 201
        statuses = set()
        for app_name, taken in APP_NAMES.items():
            for suffix in ("/appends", "/appends/", "/append"):
                for body in APPENDS_BODIES:
                    path = f"/apps/{quote(app_name, safe='%{}')}{suffix}"
                    answered_before = _answered_in_process()
                    fast = await clients["fast"].post(path.format("fast"), content=body)
                    answered = _answered_in_process() - answered_before
                    route = await clients["route"].post(path.format("route"), content=body)
                    assert answered == (taken and suffix == "/appends"), (path, body)
                    assert _appends_outcome(fast) == _appends_outcome(route), (path, body)
                    statuses.add(fast.status_code)
        for app_name in CREATED_APPS:
            reads = [
                (await c.get(f"/apps/{quote(app_name.format(n), safe='')}/users/u/sessions/s"))
                for n, c in clients.items()
            ]
            assert reads[0].json()["events"] == reads[1].json()["events"]
            assert reads[0].json()["events"], app_name
    assert statuses >= {200, 400, 404, 422}
