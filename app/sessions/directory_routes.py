"""What is stored, by app and by user: GET /apps and GET /apps/{app}/users,
for operators and platforms that must find sessions without knowing the
names first."""

from fastapi import APIRouter, Request, Response
from pydantic import Field

from ..http.authentication import VISIBLE_APPS
from ..http.dependencies import AppName
from ..http.rendering import json_response
from ..http.wire import WireModel
from . import page_tokens
from .routes import DEFAULT_PAGE_SIZE, PageSize, PageToken, problem_responses, service_of

router = APIRouter(tags=["apps and users"])


class AppEntry(WireModel):
    app_name: str
    session_count: int = Field(description="Live (not expired) sessions of the app.")


class AppList(WireModel):
    apps: list[AppEntry]
    next_page_token: str | None


class UserEntry(WireModel):
    user_id: str
    session_count: int = Field(description="Live (not expired) sessions of the user in the app.")
    last_update_time: float = Field(description="The latest lastUpdateTime among them.")


class UserList(WireModel):
    users: list[UserEntry]
    next_page_token: str | None


@router.get(
    "/apps",
    response_model=AppList,
    responses=problem_responses(400),
    summary="List the apps the API key may use that have sessions, with session counts",
)
async def list_apps(
    request: Request,
    page_size: PageSize = DEFAULT_PAGE_SIZE,
    page_token: PageToken = None,
) -> Response:
    # Set by ApiKeyMiddleware: the key's apps (None: every app, or no keys).
    visible: frozenset[str] | None = getattr(request.state, VISIBLE_APPS, None)
    after = page_tokens.name_cursor(page_token, page_tokens.APPS_TOKEN)
    apps, next_after = await service_of(request).list_apps(visible, page_size, after)
    return json_response(
        {
            "apps": [{"appName": app.app_name, "sessionCount": app.session_count} for app in apps],
            "nextPageToken": page_tokens.name_token(next_after, page_tokens.APPS_TOKEN),
        }
    )


@router.get(
    "/apps/{app_name}/users",
    response_model=UserList,
    responses=problem_responses(400),
    summary="List an app's users that have sessions, with session counts and last update",
)
async def list_users(
    app_name: AppName,
    request: Request,
    page_size: PageSize = DEFAULT_PAGE_SIZE,
    page_token: PageToken = None,
) -> Response:
    after = page_tokens.name_cursor(page_token, page_tokens.USERS_TOKEN, app_name)
    users, next_after = await service_of(request).list_users(app_name, page_size, after)
    return json_response(
        {
            "users": [
                {
                    "userId": user.user_id,
                    "sessionCount": user.session_count,
                    "lastUpdateTime": user.last_update_time,
                }
                for user in users
            ],
            "nextPageToken": page_tokens.name_token(next_after, page_tokens.USERS_TOKEN, app_name),
        }
    )
