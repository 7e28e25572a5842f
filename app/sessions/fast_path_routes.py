"""Which requests a fast path may serve: those FastAPI would route to the
route it stands in front of, with identifiers the route would accept.

A fast path answers through the same code as its route, without FastAPI's
routing, parameter solving and validation (most of a request's server CPU,
docs/performance.md); anything it does not take goes on to FastAPI
unchanged, so FastAPI's answers to bad requests stay FastAPI's.

Each fast path declares what it stands in for (`StandIn`): the route's
handler by identity, its path and method, the parameters it reads itself
and the dependencies it runs (none). It finds that route among the app's
routes as assembled (`app.router.routes`, include_router's prefixes and
dependencies applied, app-level dependencies too), and serves only if the
route is exactly what it declares; otherwise it switches itself off, logs
once, and FastAPI serves the route. Checked when the app builds its
middleware, not per request, so the hot loop is unchanged; off rather than
failing the start-up, because the route is still served correctly, only
slower. A prefix turns it off too rather than being followed: the encoded
paths and API key checks it relies on are anchored at /apps/. What a
runtime check cannot see (new logic in the handler) is pinned by a
fingerprint of the handler's and the fast path's source in
tests/test_fast_path_routes.py."""

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastapi.dependencies.models import Dependant
from fastapi.responses import Response
from fastapi.routing import APIRoute, RouteContext, iter_route_contexts
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute, compile_path
from starlette.types import Scope

from ..core.identifiers import name_problem, session_id_problem
from ..http.encoded_paths import decode_segment, route_path
from ..http.problems import error_response
from .domain import SessionKey

logger = logging.getLogger("session_state")

# What a fast path's work gives: a response, or (None) nobody to answer.
Answer = TypeVar("Answer", bound=Response | None)


async def answered(work: Awaitable[Answer]) -> Answer | Response:
    """`work`'s answer, or the problem response of the error it raised, as
    FastAPI's handlers would give it; anything else (a bug) is raised on."""
    try:
        return await work
    except Exception as error:
        known = error_response(error)
        if known is None:
            raise
        return known


@dataclass(frozen=True)
class StandIn:
    """The route a fast path stands in for, as the app must have it."""

    endpoint: Callable[..., Awaitable[Response]]
    path: str
    method: str
    # Every parameter of the route, as (where, name), its dependencies' too:
    # the fast path reads each of these itself.
    parameters: frozenset[tuple[str, str]]
    # The dependencies (by their callable) the fast path runs itself.
    dependencies: frozenset[Callable[..., Any]] = field(default_factory=frozenset)


def declared_parameters(dependant: Dependant) -> set[tuple[str, str]]:
    """A route's parameters as FastAPI resolves them, its dependencies' too."""
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
        declared |= declared_parameters(dependency)
    return declared


def declared_dependencies(dependant: Dependant) -> set[Callable[..., Any]]:
    """The callables of a route's dependencies, nested ones included."""
    calls: set[Callable[..., Any]] = set()
    for dependency in dependant.dependencies:
        if dependency.call is not None:
            calls.add(dependency.call)
        calls |= declared_dependencies(dependency)
    return calls


def differences(context: RouteContext, stand_in: StandIn) -> list[str]:
    """How the app's route differs from what the fast path stands in for."""
    found: list[str] = []
    if type(context.original_route) is not APIRoute:
        found.append(f"a route class of its own ({type(context.original_route).__name__})")
    if context.path != stand_in.path:
        found.append(f"the path {context.path} (a prefix?)")
    if context.methods != {stand_in.method}:
        found.append(f"the methods {sorted(context.methods or ())}")
    dependant: Dependant | None = context.dependant
    if dependant is None:
        return [*found, "no dependant"]
    parameters = declared_parameters(dependant)
    if parameters != stand_in.parameters:
        found.append(f"the parameters {sorted(parameters ^ stand_in.parameters)}")
    dependencies = declared_dependencies(dependant)
    if dependencies != stand_in.dependencies:
        names = sorted(getattr(call, "__name__", repr(call)) for call in dependencies)
        found.append(f"the dependencies {names}")
    if context.max_body_size is not None:
        found.append(f"a body size limit of its own ({context.max_body_size})")
    return found


def assembled_route(
    routes: Sequence[BaseRoute], stand_in: StandIn
) -> tuple[APIRoute, list[RouteContext]] | None:
    """The app's route for `stand_in`'s handler and the routes FastAPI tries
    before it; None (logged) when there is none, or it is not exactly what
    the fast path stands in for."""
    earlier: list[RouteContext] = []
    for context in iter_route_contexts(routes):
        if context.endpoint is not stand_in.endpoint:
            earlier.append(context)
            continue
        found = differences(context, stand_in)
        if found:
            break
        route = context.original_route
        assert isinstance(route, APIRoute)  # checked by `differences`
        return route, earlier
    else:
        found = ["no such route"]
    logger.warning(
        "fast path off for %s %s (%s): the app's route has %s; FastAPI serves it",
        stand_in.method,
        stand_in.path,
        stand_in.endpoint.__name__,
        ", ".join(found),
    )
    return None


def _could_match_first(earlier: RouteContext, path: str, method: str) -> bool | None:
    """Whether a route FastAPI tries first could take a request of `path`
    (a template) and `method`: templates of as many segments whose fixed
    segments agree (a guess on the safe side); None for a kind of route
    this cannot tell."""
    route = earlier.original_route
    if isinstance(route, WebSocketRoute):
        return False
    if isinstance(route, Mount):
        return True
    if not isinstance(route, Route) or earlier.path is None:
        return None
    if earlier.methods and method not in earlier.methods:
        return False  # at most a partial match: FastAPI goes on to ours
    theirs, ours = earlier.path.split("/"), path.split("/")
    if any(":path}" in segment for segment in theirs):
        return True
    if len(theirs) != len(ours):
        return False
    return all(a == b or "{" in a or "{" in b for a, b in zip(theirs, ours, strict=True))


def _path_regex(route: RouteContext) -> Any:
    """The regex FastAPI matches a route's path with, as the app has it."""
    if isinstance(route.original_route, Mount):
        return route.path_regex
    return compile_path(route.path or "")[0]


class SessionRouteMatch:
    """The session (or app) of a request for the app's route a fast path
    stands in for: its method, its path, and no route FastAPI tries
    before it that matches the path too. Matches nothing when the app's
    route is not what the fast path stands in for."""

    def __init__(self, routes: Sequence[BaseRoute], stand_in: StandIn) -> None:
        self.stand_in = stand_in
        found = assembled_route(routes, stand_in)
        self.route: APIRoute | None = None
        self.methods: frozenset[str] = frozenset()
        self._earlier: list[Any] = []
        if found is None:
            self.path_regex, _, self.convertors = compile_path(stand_in.path)
            return
        route, earlier = found
        shadowing = [_could_match_first(other, stand_in.path, stand_in.method) for other in earlier]
        if None in shadowing:
            logger.warning(
                "fast path off for %s %s (%s): a route of a kind it cannot match comes first",
                stand_in.method,
                stand_in.path,
                stand_in.endpoint.__name__,
            )
            self.path_regex, _, self.convertors = compile_path(stand_in.path)
            return
        self.route = route
        self.methods = frozenset({stand_in.method})
        self.path_regex, _, self.convertors = compile_path(stand_in.path)
        self._earlier = [
            _path_regex(other) for other, first in zip(earlier, shadowing, strict=True) if first
        ]

    @property
    def serving(self) -> bool:
        """Whether the fast path takes requests (the app's route is the one
        it stands in for)."""
        return self.route is not None

    def session_of(self, scope: Scope) -> SessionKey | None:
        """The session named by the path, when every identifier in it is
        valid."""
        parameters = self.parameters_of(scope)
        if parameters is None:
            return None
        key = SessionKey(parameters["app_name"], parameters["user_id"], parameters["session_id"])
        if name_problem(key.user_id):
            return None
        return None if session_id_problem(key.session_id) else key

    def app_of(self, scope: Scope) -> str | None:
        """The app named by the path of a route of one app, when valid."""
        parameters = self.parameters_of(scope)
        return None if parameters is None else parameters["app_name"]

    def parameters_of(self, scope: Scope) -> dict[str, str] | None:
        """The path's parameters, decoded, with a valid app name; None for a
        request of another route or method. The path is percent-encoded
        (app.http.encoded_paths) and each segment decoded here, as the
        route's parameters decode theirs."""
        if scope["type"] != "http" or scope["method"] not in self.methods:
            return None
        path = route_path(scope)
        match = self.path_regex.match(path)
        if match is None or any(earlier.match(path) for earlier in self._earlier):
            return None
        parameters: dict[str, str] = {
            name: self.convertors[name].convert(decode_segment(segment))
            for name, segment in match.groupdict().items()
        }
        return None if name_problem(parameters["app_name"]) else parameters
