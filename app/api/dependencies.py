"""Request parameters shared by the routes: validated identifiers, the
If-Match precondition, and the service.

Plain parameters rather than nested dependencies: FastAPI resolves each
dependency separately, which measured as the largest server-side cost of a
request here.
"""

import re
from typing import Annotated

from fastapi import Header, Path, Request

from app.errors import BadRequest
from app.limits import MAX_INT64
from app.schemas import IDENTIFIER_MAX_LENGTH, IDENTIFIER_PATTERN
from app.service import SessionService


def service_of(request: Request) -> SessionService:
    service: SessionService = request.app.state.service
    return service


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

IfMatch = Annotated[
    str | None,
    Header(
        alias="If-Match",
        description='The session revision the write is based on, as its ETag: "3". '
        "The write fails with 412 if the session has moved on.",
    ),
]


# ASCII digits only (str.isdigit also takes "²" and other scripts' digits),
# at most what a bigint holds.
_REVISION = re.compile(r'"?([0-9]{1,19})"?')
IF_MATCH_MESSAGE = 'If-Match must be a session revision as sent in ETag, such as "3"'


def expected_revision(if_match: str | None) -> int | None:
    """The revision an If-Match header names; None when there is no condition."""
    if if_match is None or if_match.strip() == "*":
        return None
    value = if_match.strip()
    match = _REVISION.fullmatch(value)
    if match is None or (value[0] == '"') != (value[-1] == '"'):
        raise BadRequest(IF_MATCH_MESSAGE)
    revision = int(match.group(1))
    if revision > MAX_INT64:
        raise BadRequest(IF_MATCH_MESSAGE)
    return revision
