"""The append route as the fast path in front of FastAPI serves it, over a
real socket to a started server: what an ASGI test client cannot show."""

import asyncio
from contextlib import AsyncExitStack
from urllib.parse import quote

import httpx
from fastapi import FastAPI
from fastapi.dependencies.models import Dependant

from session_state.api.append_fast_path import ROUTE_PARAMETERS, AppendFastPath
from session_state.api.routes.sessions import append_route
from session_state.config import Settings
from session_state.main import create_app


async def test_a_body_cut_short_by_a_disconnect_stores_nothing(server):
    base = f"{server.base_url}/apps/cut/users/u/sessions"
    async with httpx.AsyncClient() as client:
        await client.post(base, json={"sessionId": "s"})
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
        await asyncio.sleep(0.2)
        writer.close()
        await writer.wait_closed()
        await asyncio.sleep(0.2)
        session = (await client.get(f"{base}/s")).json()
    assert session["events"] == []
    assert session["state"] == {}


# -- the fast path answers exactly as the FastAPI route it stands in front of --

SESSION_IDS = [
    "s",
    "a b",
    " leading-space",
    "\u00a0leading-nbsp",
    "tab\there",
    "é中😀",
    "x" * 128,
    "x" * 129,
    "a%2Fb",  # sent as is: the session a/b
    "a/b",
    "%41",  # sent as is: the session A
    "A",
    "%zz",  # sent as is: not percent-encoding
    "%C3",  # sent as is: not UTF-8
    "trailing-newline\n",
    "",
]
IF_MATCHES = [None, '"0"', "*", '"1"', "nonsense", '"999"']
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
]


def _declared_parameters(dependant: Dependant) -> set[tuple[str, str]]:
    """The route's parameters as FastAPI resolves them, its dependencies' too."""
    declared = {
        (where, parameter.name)
        for where, parameters in (
            ("path", dependant.path_params),
            ("query", dependant.query_params),
            ("header", dependant.header_params),
            ("cookie", dependant.cookie_params),
            ("body", dependant.body_params),
        )
        for parameter in parameters
    }
    for dependency in dependant.dependencies:
        declared |= _declared_parameters(dependency)
    return declared


def test_the_fast_path_reads_every_parameter_the_route_declares():
    """Pins the fast path to the route: a query, header, cookie or body
    parameter added to the append route would be ignored by the fast path,
    which answers most appends without FastAPI's parameter handling."""
    assert _declared_parameters(append_route().dependant) == set(ROUTE_PARAMETERS)


def _without_fast_path(app: FastAPI) -> FastAPI:
    app.user_middleware = [m for m in app.user_middleware if m.cls is not AppendFastPath]
    return app


def _outcome(response: httpx.Response) -> tuple[object, ...]:
    body = response.json() if response.content else None
    if isinstance(body, dict):
        body.pop("requestId", None)
    headers = tuple(
        response.headers.get(name) for name in ("content-type", "etag", "session-state-persisted")
    )
    return response.status_code, headers, body


async def test_the_fast_path_answers_as_the_route_does(tmp_path):
    apps = [
        create_app(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'fast.db'}")),
        _without_fast_path(
            create_app(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'route.db'}"))
        ),
    ]
    async with AsyncExitStack() as stack:
        clients = []
        for app in apps:
            await stack.enter_async_context(app.router.lifespan_context(app))
            clients.append(
                await stack.enter_async_context(
                    httpx.AsyncClient(
                        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
                    )
                )
            )
        for client in clients:
            for session_id in SESSION_IDS:
                await client.post("/apps/app/users/u/sessions", json={"sessionId": session_id})
        compared = 0
        for session_id in SESSION_IDS:
            path = f"/apps/app/users/u/sessions/{quote(session_id, safe='%')}/events"
            for if_match in IF_MATCHES:
                for body in BODIES:
                    headers = {} if if_match is None else {"If-Match": if_match}
                    fast, route = [
                        _outcome(await client.post(path, content=body, headers=headers))
                        for client in clients
                    ]
                    assert fast == route, (session_id, if_match, body)
                    compared += 1
        statuses = set()
        for client in clients:
            sessions = (await client.get("/apps/app/users/u/sessions")).json()["sessions"]
            statuses.add(tuple(sorted((s["id"], str(s["state"])) for s in sessions)))
        assert len(statuses) == 1  # both databases hold the same sessions and state
    assert compared == len(SESSION_IDS) * len(IF_MATCHES) * len(BODIES)
