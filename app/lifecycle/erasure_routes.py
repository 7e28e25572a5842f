"""Erasure: everything a user left in an app, or a whole app, deleted."""

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from ..core.errors import BadRequest
from ..http.dependencies import AppName, UserId
from ..sessions.routes import problem_responses
from .erasure import Erasure

router = APIRouter(tags=["erasure"])


@router.delete(
    "/apps/{app_name}/users/{user_id}",
    status_code=204,
    responses=problem_responses(),
    summary="Erase a user: sessions, events, user state, memories, threads, store items",
)
async def erase_user(app_name: AppName, user_id: UserId, request: Request) -> Response:
    await _erasure(request).erase_user(app_name, user_id)
    return Response(status_code=204)


@router.delete(
    "/apps/{app_name}",
    status_code=204,
    responses=problem_responses(400),
    summary="Erase an app: every user's sessions, events, state, memories, threads and store items",
)
async def erase_app(
    app_name: AppName,
    request: Request,
    confirm: Annotated[
        str | None,
        Query(description="The app's name again: without it, nothing is erased (400)."),
    ] = None,
) -> Response:
    if confirm != app_name:
        raise BadRequest(
            f"erasing an app needs ?confirm= with its name ({app_name!r}): nothing was erased"
        )
    await _erasure(request).erase_app(app_name)
    return Response(status_code=204)


def _erasure(request: Request) -> Erasure:
    erasure: Erasure = request.app.state.erasure
    return erasure
