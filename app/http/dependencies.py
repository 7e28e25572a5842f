"""Request parameters shared by the routes: identifiers decoded from their path
segment and validated, and the If-Match precondition.

Plain parameters rather than nested dependencies: FastAPI resolves each
dependency separately, the largest server-side cost of a request
(docs/performance.md, "Where the time goes").
"""

import re
from collections.abc import Callable
from typing import Annotated

from fastapi import Header, Path
from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from ..core.errors import BadRequest
from ..core.identifiers import (
    IDENTIFIER_MAX_LENGTH,
    NAME_PATTERN,
    NAME_RULE,
    SESSION_ID_PATTERN,
    SESSION_ID_RULE,
    name_problem,
    session_id_problem,
)
from ..core.limits import MAX_INT64
from .encoded_paths import decode_segment


def _from_segment(problem: Callable[[str], str | None]) -> BeforeValidator:
    # Routes under /apps/ match the path as sent (app.http.encoded_paths): the
    # segment arrives still percent-encoded and is decoded here, once.
    def decoded(segment: str) -> str:
        identifier = decode_segment(segment)
        message = problem(identifier)
        if message is not None:
            raise PydanticCustomError("identifier", message)
        return identifier

    return BeforeValidator(decoded)


def _identifier(what: str, rule: str, pattern: str) -> object:
    return Path(
        description=f"{what}: {rule}. Percent-encode it ('/' as %2F, '%' as %25).",
        json_schema_extra={
            "minLength": 1,
            "maxLength": IDENTIFIER_MAX_LENGTH,
            "pattern": pattern,
        },
    )


AppName = Annotated[
    str, _from_segment(name_problem), _identifier("Application name", NAME_RULE, NAME_PATTERN)
]
UserId = Annotated[
    str, _from_segment(name_problem), _identifier("User id", NAME_RULE, NAME_PATTERN)
]
SessionId = Annotated[
    str,
    _from_segment(session_id_problem),
    _identifier("Session id", SESSION_ID_RULE, SESSION_ID_PATTERN),
]
MemoryId = Annotated[
    str,
    _from_segment(name_problem),
    _identifier("A memory's id, as search returns it", NAME_RULE, NAME_PATTERN),
]
ThreadId = Annotated[
    str,
    _from_segment(name_problem),
    _identifier("A LangGraph thread id (configurable.thread_id)", NAME_RULE, NAME_PATTERN),
]
CheckpointId = Annotated[
    str,
    _from_segment(name_problem),
    _identifier("A LangGraph checkpoint id", NAME_RULE, NAME_PATTERN),
]

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
