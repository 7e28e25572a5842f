"""Which requests a fast path may serve: those FastAPI would route to the
route it stands in front of, with identifiers the route would accept.

A fast path answers through the same code as its route, without FastAPI's
routing, parameter solving and validation (most of a request's server CPU,
docs/performance.md); anything it does not take goes on to FastAPI
unchanged, so FastAPI's answers to bad requests stay FastAPI's."""

from collections.abc import Awaitable, Sequence
from typing import TypeVar

from fastapi.responses import Response
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, compile_path
from starlette.types import Scope

from ..domain import SessionKey
from ..identifiers import name_problem, session_id_problem
from .encoded_paths import decode_segment, route_path
from .problems import error_response

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


class SessionRouteMatch:
    """The session (or app) of a request for `route`: its method, its path,
    and no route declared before it (`earlier`) that matches the path too."""

    def __init__(self, route: APIRoute, earlier: Sequence[BaseRoute] = ()) -> None:
        self.route = route
        self.path_regex, _, self.convertors = compile_path(route.path)
        self.methods = frozenset(route.methods or ())
        self._earlier = [
            compile_path(other.path)[0]
            for other in earlier
            if isinstance(other, APIRoute) and self.methods & set(other.methods or ())
        ]

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
        (app.api.encoded_paths) and each segment decoded here, as the
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
