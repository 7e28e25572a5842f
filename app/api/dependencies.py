"""Request dependencies: the service, validated identifiers and preconditions."""

from typing import Annotated

from fastapi import Depends, Header, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.auth import ApiKeys
from app.db.repository import SessionKey
from app.errors import BadRequest
from app.schemas import IDENTIFIER_MAX_LENGTH, IDENTIFIER_PATTERN
from app.service import SessionService


async def get_service(request: Request) -> SessionService:
    service: SessionService = request.app.state.service
    return service


ServiceDep = Annotated[SessionService, Depends(get_service)]


def _identifier(description: str) -> object:
    return Path(
        min_length=1,
        max_length=IDENTIFIER_MAX_LENGTH,
        pattern=IDENTIFIER_PATTERN,
        description=description,
    )


AppName = Annotated[str, _identifier("Application name.")]
UserId = Annotated[str, _identifier("User id.")]
SessionId = Annotated[str, _identifier("Session id.")]


async def session_key(app_name: AppName, user_id: UserId, session_id: SessionId) -> SessionKey:
    return SessionKey(app_name, user_id, session_id)


SessionKeyDep = Annotated[SessionKey, Depends(session_key)]


async def expected_revision(
    if_match: Annotated[
        str | None,
        Header(
            description='The session revision the write is based on, as its ETag: "3". '
            "The write fails with 412 if the session has moved on."
        ),
    ] = None,
) -> int | None:
    if if_match is None or if_match.strip() == "*":
        return None
    value = if_match.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    if not value.isdigit():
        raise BadRequest('If-Match must be a session revision as sent in ETag, such as "3"')
    return int(value)


ExpectedRevisionDep = Annotated[int | None, Depends(expected_revision)]


bearer_scheme = HTTPBearer(auto_error=False, description="An API key, when keys are configured.")


async def authorize(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
) -> None:
    api_keys: ApiKeys = request.app.state.api_keys
    api_keys.authorize(
        credentials.credentials if credentials else None, request.path_params.get("app_name")
    )
