"""Each fast path serves its route only as the app really has it: the
handler, path, methods and dependencies of the route as assembled
(include_router's prefix and dependencies, the app's). A route changed in a
way its fast path does not follow turns that fast path off, and FastAPI
serves the route; a change to a handler's code fails the pin below until
someone has checked its fast path still does the same."""

import hashlib
import inspect
import logging
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from functools import wraps
from typing import Annotated, Any

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI, Header, Request
from fastapi.routing import APIRoute

from session_state import main
from session_state.core.config import Settings
from session_state.http import bodies
from session_state.langgraph.checkpoints import fast_path as checkpoint_fast_path
from session_state.langgraph.checkpoints import routes as checkpoints
from session_state.main import create_app
from session_state.sessions import append_fast_path, read_fast_path
from session_state.sessions import routes as sessions
from session_state.sessions.fast_path_routes import SessionRouteMatch
from tests.test_append_fast_path import _answered_in_process

ASGI_URL = "http://127.0.0.1"
SESSION_ROUTES = {"append_event", "append_events", "append_to_sessions", "get_session"}
CHECKPOINT_ROUTES = {
    "put_checkpoint",
    "put_writes",
    "apply_operations",
    "apply_thread_operations",
    "get_checkpoint",
    "list_checkpoints",
}
SERVED = SESSION_ROUTES | CHECKPOINT_ROUTES


def _fast_paths(app: FastAPI) -> dict[str, SessionRouteMatch]:
    """Each fast path of the app's middleware, as the app builds it at its
    start, by the name of the handler it stands in for."""
    found = {}
    layer: Any = app.build_middleware_stack()
    while layer is not None:
        matches = [getattr(layer, "_match", None), getattr(layer, "thread_batches", None)]
        matches += [served.match for served in getattr(layer, "served", [])]
        for match in matches:
            if isinstance(match, SessionRouteMatch):
                found[match.stand_in.endpoint.__name__] = match
        layer = getattr(layer, "app", None)
    return found


def _serving(app: FastAPI) -> set[str]:
    return {name for name, match in _fast_paths(app).items() if match.serving}


@pytest.fixture
def offline_settings(tmp_path) -> Settings:
    """Settings of an app that is built, never started (no database)."""
    return Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'unused.db'}")


def test_every_fast_path_serves_its_route_in_the_app_as_shipped(offline_settings, caplog):
    with caplog.at_level(logging.WARNING, logger="session_state"):
        fast_paths = _fast_paths(create_app(offline_settings))
    assert set(fast_paths) == SERVED
    assert {name for name, match in fast_paths.items() if match.serving} == SERVED
    assert not [r for r in caplog.records if "fast path off" in r.getMessage()]


def _checked_by_hand() -> None:
    """A dependency without parameters, as an auth check or a rate limit is."""


def _tenant(x_tenant: Annotated[str | None, Header()] = None) -> str | None:
    return x_tenant


def _including(**extra: Any) -> type[FastAPI]:
    """FastAPI, including the sessions router with `extra` (prefix, dependencies)."""

    class Including(FastAPI):
        def include_router(self, router: APIRouter, **kwargs: Any) -> None:
            if router is sessions.router:
                kwargs = {**kwargs, **extra}
            super().include_router(router, **kwargs)

    return Including


class _WithAppDependency(FastAPI):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(dependencies=[Depends(_checked_by_hand)], **kwargs)


def _route_of(endpoint: Callable[..., Any]) -> APIRoute:
    return next(
        r for r in sessions.router.routes if isinstance(r, APIRoute) and r.endpoint is endpoint
    )


def _at_the_route(dependency: Callable[..., Any]) -> Callable[[pytest.MonkeyPatch], None]:
    def change(monkeypatch: pytest.MonkeyPatch) -> None:
        route = _route_of(sessions.append_event)
        monkeypatch.setattr(route, "dependencies", [*route.dependencies, Depends(dependency)])

    return change


def _app_class(app_class: type[FastAPI]) -> Callable[[pytest.MonkeyPatch], None]:
    def change(monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(main, "FastAPI", app_class)

    return change


def _wrapped_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    """Logic added around the handler (a decorator): same signature, another
    function."""
    route = _route_of(sessions.append_event)
    handler = route.endpoint

    @wraps(handler)
    async def logged(*args: Any, **kwargs: Any) -> Any:
        return await handler(*args, **kwargs)

    monkeypatch.setattr(route, "endpoint", logged)


# A change to the app, and the handlers whose fast paths it turns off.
CHANGES: dict[str, tuple[Callable[[pytest.MonkeyPatch], None], set[str]]] = {
    "a dependency without parameters at the route": (
        _at_the_route(_checked_by_hand),
        {"append_event"},
    ),
    "a dependency reading a header at the route": (_at_the_route(_tenant), {"append_event"}),
    "a dependency at include_router": (
        _app_class(_including(dependencies=[Depends(_checked_by_hand)])),
        SESSION_ROUTES,
    ),
    "a dependency of the app": (_app_class(_WithAppDependency), SERVED),
    "a prefix at include_router": (_app_class(_including(prefix="/v1")), SESSION_ROUTES),
    "a prefix with a parameter": (_app_class(_including(prefix="/t/{tenant}")), SESSION_ROUTES),
    "a body size limit at include_router": (
        _app_class(_including(max_body_size=10)),
        SESSION_ROUTES,
    ),
    "a handler wrapped in another function": (_wrapped_handler, {"append_event"}),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_route_changed_turns_its_fast_path_off(offline_settings, monkeypatch, caplog, change):
    apply, turned_off = CHANGES[change]
    apply(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="session_state"):
        app = create_app(offline_settings)
        serving = _serving(app)
    assert serving == SERVED - turned_off
    logged = [r.getMessage() for r in caplog.records if "fast path off" in r.getMessage()]
    assert len(logged) == len(turned_off), logged  # once each
    assert {next(n for n in turned_off if f"({n})" in line) for line in logged} == turned_off


async def test_a_dependency_at_include_router_runs_for_every_append(settings, monkeypatch):
    """The app with a dependency added where the sessions router is
    included: FastAPI serves the appends, and the dependency runs for each."""
    calls: list[str] = []

    def recorded(request: Request) -> None:
        calls.append(request.url.path)

    monkeypatch.setattr(main, "FastAPI", _including(dependencies=[Depends(recorded)]))
    app = create_app(settings)
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(app.router.lifespan_context(app))
        client = await stack.enter_async_context(
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ASGI_URL)
        )
        base = "/apps/a/users/u/sessions"
        assert (await client.post(base, json={"sessionId": "s"})).status_code == 201
        answered_before = _answered_in_process()
        event = {"id": "e1", "author": "a", "timestamp": 1.0}
        assert (await client.post(f"{base}/s/events", json=event)).status_code == 201
        batch = {"events": [{"id": "e2", "author": "a", "timestamp": 2.0}]}
        assert (await client.post(f"{base}/s/events/batch", json=batch)).status_code == 201
        assert (await client.get(f"{base}/s")).json()["events"][-1]["id"] == "e2"
        assert _answered_in_process() == answered_before  # no fast path took them
    assert calls == [base, f"{base}/s/events", f"{base}/s/events/batch", f"{base}/s"]


async def test_a_route_declared_first_keeps_its_requests(settings, monkeypatch):
    """A route included before the sessions router whose path the append
    route's also matches: FastAPI gives it those requests, and so does the
    fast path, which still takes the others."""
    first = APIRouter()

    @first.post("/apps/{app_name}/users/{user_id}/sessions/special/events")
    async def special(app_name: str, user_id: str) -> dict[str, str]:
        return {"special": app_name}

    class FirstThen(FastAPI):
        def include_router(self, router: APIRouter, **kwargs: Any) -> None:
            if router is sessions.router:
                super().include_router(first)
            super().include_router(router, **kwargs)

    monkeypatch.setattr(main, "FastAPI", FirstThen)
    app = create_app(settings)
    assert _serving(app) == SERVED
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(app.router.lifespan_context(app))
        client = await stack.enter_async_context(
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ASGI_URL)
        )
        base = "/apps/a/users/u/sessions"
        event = {"id": "e1", "author": "a", "timestamp": 1.0}
        for session_id in ("s", "special"):
            assert (await client.post(base, json={"sessionId": session_id})).status_code == 201
        answered_before = _answered_in_process()
        shadowed = await client.post(f"{base}/special/events", json=event)
        assert shadowed.json() == {"special": "a"}
        assert _answered_in_process() == answered_before
        assert (await client.post(f"{base}/s/events", json=event)).status_code == 201
        assert _answered_in_process() == answered_before + 1


# -- what a check at start-up cannot see: the code of a handler -------------

# Each handler a fast path stands in for, with what it calls that its fast
# path does in its own way (the body read), and the fast path's module.
STANDS_IN = {
    sessions.append_event: ([bodies.read_json], append_fast_path),
    sessions.append_events: ([bodies.read_json], append_fast_path),
    sessions.append_to_sessions: ([bodies.limits_of], append_fast_path),
    sessions.get_session: ([], read_fast_path),
    checkpoints.put_checkpoint: ([bodies.read_json], checkpoint_fast_path),
    checkpoints.put_writes: ([bodies.read_json], checkpoint_fast_path),
    checkpoints.apply_operations: ([bodies.read_json], checkpoint_fast_path),
    checkpoints.apply_thread_operations: ([bodies.read_json], checkpoint_fast_path),
    checkpoints.get_checkpoint: ([], checkpoint_fast_path),
    checkpoints.list_checkpoints: ([], checkpoint_fast_path),
}
# (handler's fingerprint, fast path's fingerprint) by handler. When either
# changes, read both: the fast path must do exactly what the handler does;
# then pin the new fingerprints.
PINS = {
    "append_event": ("532a00a9e8758600", "fe0145763d4853b7"),
    "append_events": ("3247ea50bc79f8ed", "fe0145763d4853b7"),
    "append_to_sessions": ("ace0076ea5085af5", "fe0145763d4853b7"),
    "get_session": ("b32b17156ab7fedf", "dbe538457ebd17bb"),
    "put_checkpoint": ("474c3ace8f093cdb", "c6b3200f5fb682a1"),
    "put_writes": ("31eb409f09ebe8b5", "c6b3200f5fb682a1"),
    "apply_operations": ("f57a38768e79cc39", "c6b3200f5fb682a1"),
    "apply_thread_operations": ("124fbeb86b34682d", "c6b3200f5fb682a1"),
    "get_checkpoint": ("00368c10f43d9cee", "c6b3200f5fb682a1"),
    "list_checkpoints": ("c031662348a28b88", "c6b3200f5fb682a1"),
}


def _fingerprint(*sources: Any) -> str:
    text = "\n".join(inspect.getsource(source) for source in sources)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _fingerprints() -> Iterator[tuple[str, tuple[str, str]]]:
    for handler, (helpers, fast_path) in STANDS_IN.items():
        yield handler.__name__, (_fingerprint(handler, *helpers), _fingerprint(fast_path))


def test_each_handler_and_its_fast_path_are_pinned_together():
    stand_ins = [append_fast_path.APPEND, append_fast_path.BATCH, append_fast_path.APPENDS]
    stand_ins.append(read_fast_path.READ)
    stand_ins += [checkpoint_fast_path.PUT, checkpoint_fast_path.WRITES]
    stand_ins += [checkpoint_fast_path.OPERATIONS, checkpoint_fast_path.THREAD_BATCHES]
    stand_ins += [checkpoint_fast_path.GET, checkpoint_fast_path.LATEST]
    assert {stand_in.endpoint for stand_in in stand_ins} == set(STANDS_IN)
    fingerprints = dict(_fingerprints())
    assert fingerprints == PINS, (
        "a handler or its fast path changed: check the fast path still does exactly "
        f"what its handler does, then pin the new fingerprints: {fingerprints}"
    )
