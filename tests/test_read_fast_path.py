"""The session read route as the fast path in front of FastAPI serves it:
the same answer as the route to every request, and taken only for the
requests it reads exactly as FastAPI would."""

import json
from contextlib import AsyncExitStack
from urllib.parse import quote

import httpx
from fastapi import FastAPI

from session_state.core.metrics import FAST_PATH_READS
from session_state.main import create_app
from session_state.sessions.read_fast_path import ReadFastPath
from tests.test_append_fast_path import _counted

FAST_PATH = "session_state_read_fast_path_total"
ASGI_URL = "http://127.0.0.1"

# Each session id as sent (percent-encoded but for '%'), and whether the
# fast path takes its reads: only those the route would accept.
SESSION_IDS = {
    "s": True,
    "a b": True,
    "é中😀": True,
    "a%2Fb": True,  # sent as is: the session a/b
    "%41": True,  # sent as is: the session A
    "missing": True,  # never created: the route's 404
    # The user stream's path, a route declared before this one; it answers
    # a read of the session named "stream" itself (with a hint when missing).
    "stream": False,
    "x" * 129: False,
    " leading-space": False,
    "%zz": False,
    "%C3": False,
    "": False,
}
CREATED = ["s", "a b", "é中😀", "a/b", "A", "stream"]
# Queries, and whether the fast path reads them (those it does not go to
# FastAPI whole: its answers, its validation errors).
QUERIES = {
    "": True,
    "numRecentEvents=2": True,
    "numRecentEvents=0": True,
    "numRecentEvents=007": True,
    "numRecentEvents=%32": True,
    "%6EumRecentEvents=1": True,
    "numRecentEvents=1&minRevision=3": True,
    "minRevision=2": True,
    "minRevision=999": True,  # a revision this server never had
    "numRecentEvents=999999999999999999": True,
    "numRecentEvents=9223372036854775808": False,  # past 2**63 - 1: FastAPI's 422
    "numRecentEvents=-1": False,
    "numRecentEvents=abc": False,
    "numRecentEvents=1e3": False,
    "numRecentEvents=+2": False,
    "numRecentEvents=": False,
    "numRecentEvents": False,
    "numRecentEvents=1&numRecentEvents=2": False,
    "afterTimestamp=1.5": False,
    "numRecentEvents=1&afterTimestamp=nan": False,
    "other=1": False,
    # A compacted read is the route's (its headers included).
    "compacted=true": False,
    "compacted=false": False,
    "numRecentEvents=1&compacted=1": False,
    "compacted=maybe": False,
    "numRecentEvents=2&": False,
    # Hostile: NUL, a lone surrogate's bytes, other scripts' digits, a long
    # query: all FastAPI's to answer.
    "numRecentEvents=1%00": False,
    "numRecentEvents%00=1": False,
    "numRecentEvents=%ED%A0%80": False,
    "numRecentEvents=%D9%A3": False,
    "minRevision=1&" + "x=1&" * 5000 + "numRecentEvents=1": False,
}
EVENTS = [
    {"id": f"e{number}", "author": "a", "timestamp": float(number), "actions": {}}
    for number in range(1, 4)
]


def _without_fast_path(app: FastAPI) -> FastAPI:
    app.user_middleware = [m for m in app.user_middleware if m.cls is not ReadFastPath]
    return app


def _outcome(response: httpx.Response, app_name: str) -> tuple[object, ...]:
    """The answer, with the app's name (in bodies and problem details) made
    the same for both apps."""
    body = json.loads(response.text.replace(app_name, "APP")) if response.content else None
    if isinstance(body, dict):
        body.pop("requestId", None)
    names = ("content-type", "etag", "session-state-events-left-out")
    headers = tuple(response.headers.get(name) for name in names)
    return response.status_code, headers, body


def _answered_in_process() -> float:
    """The fast path's count, read from its own counter: collecting the
    whole registry, grown by every app of a test worker, took longer than
    the requests (most of this test's 30 s in CI)."""
    return _counted(FAST_PATH_READS, FAST_PATH, {})


async def test_the_fast_path_answers_as_the_route_does(settings):
    """The same reads of an app with the fast path and of one without it,
    each holding the same sessions: the same answers, the fast path having
    answered exactly those it should (its counter moves by one for each)."""
    # One database, an app name of each.
    apps = {"fastapp": create_app(settings), "routeapp": _without_fast_path(create_app(settings))}
    async with AsyncExitStack() as stack:
        clients = {}
        for name, app in apps.items():
            await stack.enter_async_context(app.router.lifespan_context(app))
            client = await stack.enter_async_context(
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ASGI_URL)
            )
            clients[name] = client
            for session_id in CREATED:
                sessions = f"/apps/{name}/users/u/sessions"
                created = await client.post(sessions, json={"sessionId": session_id})
                assert created.status_code == 201, session_id
                batch = {"events": EVENTS}
                path = f"{sessions}/{quote(session_id, safe='')}/events/batch"
                assert (await client.post(path, json=batch)).status_code == 201
        served = 0
        statuses = set()
        for session_id, valid_id in SESSION_IDS.items():
            for query, read_here in QUERIES.items():
                for accept in (None, "text/event-stream"):
                    if accept is not None and session_id == "stream":
                        continue  # the user stream itself: a stream that never ends
                    path = f"/users/u/sessions/{quote(session_id, safe='%')}"
                    url = f"{path}?{query}" if query else path
                    headers = {} if accept is None else {"Accept": accept}
                    answered_before = _answered_in_process()
                    fast = await clients["fastapp"].get(f"/apps/fastapp{url}", headers=headers)
                    answered = _answered_in_process() - answered_before
                    case = (session_id, query, accept)
                    route = await clients["routeapp"].get(f"/apps/routeapp{url}", headers=headers)
                    assert answered == (valid_id and read_here), case
                    assert _outcome(fast, "fastapp") == _outcome(route, "routeapp"), case
                    served += answered
                    statuses.add(fast.status_code)
    taken_ids = sum(SESSION_IDS.values())
    taken_queries = sum(QUERIES.values())
    assert served == taken_ids * taken_queries * 2
    assert statuses >= {200, 404, 422}
