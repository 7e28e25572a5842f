"""A 405 names every method of its path: the `Allow` header holds exactly the
methods the app answers on that path, and the problem's detail lists them.
Checked over every path the app routes, by sending every method to it."""

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi.routing import iter_route_contexts

from session_state.core.config import Settings
from session_state.main import create_app

PROBLEM_MEDIA_TYPE = "application/problem+json"
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
# A value for each path parameter the app declares; the mount's `path` names
# a file it serves.
PARAMETER_VALUES = {
    "app_name": "app",
    "user_id": "u",
    "session_id": "s",
    "memory_id": "m",
    "thread_id": "t",
    "checkpoint_id": "c",
    "path": "swagger-ui.css",
    "name": "app.js",  # a file of the inspector (/ui/static/{name})
}
_PARAMETER = re.compile(r"{(\w+)(?::\w+)?}")


@pytest.fixture
async def app_and_client(settings: Settings) -> AsyncIterator[tuple[Any, httpx.AsyncClient]]:
    app = create_app(settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as http,
    ):
        yield app, http


def routed_methods(app: Any) -> dict[str, set[str] | None]:
    """A concrete path for each path template of the app, with the union of
    the methods of every route matching it (`/memory/events` is also
    `/memory/{memory_id}`); None for a mount's path: what it answers is its own."""
    templates = [(route.path_format, route.methods) for route in iter_route_contexts(app.routes)]
    paths: dict[str, set[str] | None] = {}
    for template, _ in templates:
        path = _PARAMETER.sub(lambda found: PARAMETER_VALUES[found[1]], template)
        matching = [
            methods
            for other, methods in templates
            if re.fullmatch(_PARAMETER.sub("[^/]+", other), path)
        ]
        paths[path] = None if None in matching else set().union(*matching)
    return paths


def allowed(response: httpx.Response) -> set[str]:
    return {method.strip() for method in response.headers["allow"].split(",")}


async def test_every_405_allows_exactly_the_methods_its_path_answers(app_and_client):
    app, client = app_and_client
    paths = routed_methods(app)
    # The paths of the issue, whose 405s named one route's method only.
    assert paths["/apps/app/users/u/sessions/s"] == {"GET", "PATCH", "DELETE"}
    assert paths["/apps/app/users/u/sessions"] == {"GET", "POST"}
    assert len(paths) > 20, sorted(paths)
    for path, routed in paths.items():
        # A live stream's GET never ends (tests/test_live_streams.py sends it).
        streams = path.endswith("/stream")
        sent = [method for method in METHODS if not (streams and method == "GET")]
        responses = {method: await client.request(method, path) for method in sent}
        answered = {method for method, response in responses.items() if response.status_code != 405}
        answered |= {"GET"} if streams else set()
        refusals = [response for response in responses.values() if response.status_code == 405]
        assert answered and refusals, (path, answered)
        if routed is not None:
            # HEAD is answered where the route says so (Starlette's own routes
            # and the mount answer it, FastAPI's GET routes do not).
            assert answered == routed, (path, answered, routed)
        for response in refusals:
            method = response.request.method
            assert allowed(response) == answered, (method, path)
            assert response.headers["content-type"] == PROBLEM_MEDIA_TYPE
            if method == "HEAD":
                continue  # no body
            body = response.json()
            assert (body["status"], body["code"]) == (405, "method_not_allowed")
            listed = set(re.findall(r"\b[A-Z]{3,7}\b", body["detail"])) - {method}
            assert listed == answered, (method, path, body["detail"])


async def test_the_405_of_the_issue_names_patch_and_delete(app_and_client):
    _, client = app_and_client
    response = await client.put("/apps/app/users/u/sessions/s", json={})
    assert response.status_code == 405
    assert response.headers["allow"] == "DELETE, GET, PATCH"
    assert response.json()["detail"] == (
        "PUT is not allowed on this path; it allows DELETE, GET, PATCH"
    )
    listing = await client.put("/apps/app/users/u/sessions", json={})
    assert listing.headers["allow"] == "GET, POST"
