"""Live streams: a session's changes as Server-Sent Events (app.streams.live)."""

import re
import time
from collections.abc import AsyncGenerator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from starlette.responses import Response

from ..core.end_user_tokens import acting_end_user
from ..core.errors import BadRequest, SessionNotFound
from ..core.limits import MAX_INT64
from ..http.dependencies import AppName, SessionId, UserId
from ..sessions import routes as sessions
from ..sessions.domain import SessionKey
from ..sessions.routes import problem_responses, service_of
from .changes import ChangeHub
from .live import FollowedStore, SessionStream, StreamItem, UserCursor, UserStream
from .sse import EVENT_STREAM_MEDIA_TYPE, EventStreamResponse

router = APIRouter(tags=["streams"])

STREAM_PATH = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events/stream"
LAST_EVENT_ID_MESSAGE = "Last-Event-ID must be a revision as a stream sends it in id, such as 3"

_STREAM_DESCRIPTION = """\
The session's changes as Server-Sent Events, read from storage in revision
order, then live: `event: appended` (`id:` the revision the append made, its
ETag; `data:` the event JSON as GET returns it), `event: removed` (`id:` the
revision; `data:` `{"removedEventIds": [...], "revision": n}`) and, when the
session is deleted, expires or is erased, `event: deleted`, after which the
stream ends. A comment line goes out at least every 15 s. Resume with
`Last-Event-ID` (as EventSource sends it) or `?after=`: every change after
that revision, nothing twice; without either the stream starts at the
revision current when it opens (docs/api.md, "Live streams")."""

After = Annotated[
    int | None,
    Query(
        ge=0,
        le=MAX_INT64,
        description="Start after this revision (a stream id, or an ETag as a number); "
        "Last-Event-ID, when sent, wins.",
    ),
]
LastEventId = Annotated[
    str | None,
    Header(
        alias="Last-Event-ID",
        description="The id of the last message the reader has (EventSource sends it "
        "when it reconnects).",
    ),
]


def _stream_responses(*problem_statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI answers of a stream route: the stream, or a problem."""
    return {
        200: {
            "description": "The stream (text/event-stream)",
            "content": {EVENT_STREAM_MEDIA_TYPE: {"schema": {"type": "string"}}},
        },
        **problem_responses(*problem_statuses),
    }


def _user_stream_responses() -> dict[int | str, dict[str, Any]]:
    """The stream (Accept: text/event-stream), or the session whose id is
    `stream` (any other Accept)."""
    responses = _stream_responses(400, 404, 422)
    responses[200] = {
        "description": "The stream (text/event-stream), or, for any other Accept, "
        "the session whose id is `stream`",
        "content": {
            EVENT_STREAM_MEDIA_TYPE: {"schema": {"type": "string"}},
            "application/json": {"schema": {"$ref": "#/components/schemas/Session"}},
        },
    }
    return responses


def changes_of(request: Request) -> ChangeHub:
    """The process's hub, which the sessions service publishes to."""
    changes: ChangeHub = request.app.state.changes
    return changes


def followed_of(request: Request) -> FollowedStore:
    """The deployment's store, which streams read sessions and changes from."""
    store: FollowedStore = request.app.state.followed
    return store


async def until_the_token_expires(
    messages: AsyncGenerator[StreamItem, None],
) -> AsyncGenerator[StreamItem, None]:
    """A stream opened with an end-user token ends once the token expires
    (at the first message or heartbeat after): a token's rights do not
    outlive it. The client reconnects with a fresh token and resumes."""
    user = acting_end_user()
    try:
        async for item in messages:
            if user is not None and user.expires_at is not None and time.time() >= user.expires_at:
                return
            yield item
    finally:
        await messages.aclose()


def _revision(last_event_id: str) -> int:
    text = last_event_id.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 19) or int(text) > MAX_INT64:
        raise BadRequest(LAST_EVENT_ID_MESSAGE)
    return int(text)


@router.get(
    STREAM_PATH,
    response_class=Response,
    responses=_stream_responses(400, 404),
    summary="Follow a session's changes as they are stored (Server-Sent Events)",
    description=_STREAM_DESCRIPTION,
)
async def stream_session_events(
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    request: Request,
    after: After = None,
    last_event_id: LastEventId = None,
) -> Response:
    service = service_of(request)
    settings = request.app.state.settings
    stream = SessionStream(
        followed_of(request),
        changes_of(request),
        SessionKey(app_name, user_id, session_id),
        heartbeat_seconds=settings.stream_heartbeat_seconds,
        clock=service.clock,
    )
    if last_event_id is not None:
        await stream.open(_revision(last_event_id), after_field=["header", "Last-Event-ID"])
    else:
        await stream.open(after, after_field=["query", "after"])
    return EventStreamResponse(
        until_the_token_expires(stream.messages()),
        send_timeout=settings.stream_send_timeout_seconds,
        on_close=stream.close,
    )


USER_STREAM_PATH = "/apps/{app_name}/users/{user_id}/sessions/stream"
# Two numbers and a session id percent-encoded (up to 12 characters each).
CURSOR_MAX_LENGTH = 2048
CURSOR_MESSAGE = "a user stream's cursor must be an id it sent, such as n48211.4.s1"

_USER_STREAM_DESCRIPTION = """\
Summaries of every change to the user's sessions, for dashboards: `created`,
`appended` (also any other change but a removal) and `removed`, each with
`data:` `{"sessionId", "revision", "updateTime"}`; `deleted` and `expired`
(`{"sessionId"}`; null: all of the user's, an erasure); `reset`
(`{"reason"}`) when the reader's cursor is older than the deletions kept
(7 days by default): list the sessions again. Every message's `id:` is a cursor
(`n<change number>.<tombstone number>.<session id>`). Resume with
`Last-Event-ID` or `?after=<cursor>`: each deletion and expiry since, once,
in order, then the sessions changed since, in commit order, one summary each
at its newest revision, none twice. The stream
answers a GET whose `Accept` names `text/event-stream` (EventSource sends
it); any other GET of this path reads the session whose id is `stream`
(docs/api.md, "Live streams")."""


# RFC 9110, 12.4.2: a weight is 0 to 1 with at most three decimals (ASCII
# digits: float() would also take 5, 1e0, inf and other scripts' digits).
_QVALUE = re.compile(r"0(\.[0-9]{0,3})?|1(\.0{0,3})?")


def asks_for_event_stream(accept: str) -> bool:
    """Whether an Accept header names text/event-stream (EventSource always
    sends it) with a valid non-zero q; `*/*` does not, nor a q outside RFC
    9110's (such as 5): such a GET reads the session whose id is `stream`."""
    for media_range in accept.split(","):
        media_type, *parameters = (part.strip() for part in media_range.split(";"))
        if media_type.lower() != EVENT_STREAM_MEDIA_TYPE:
            continue
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                weight = value.strip()
                return _QVALUE.fullmatch(weight) is not None and float(weight) > 0
        return True
    return False


# The session route's own request handler (the query read and checked as
# that route reads it), for a GET of the session whose id is `stream`.
_get_session = sessions.session_route().get_route_handler()


async def _get_session_named_stream(request: Request) -> Response:
    """GET of the session whose id is `stream` (ADK allows it), answered by
    the ordinary route, with a hint when it does not exist."""
    request.scope["path_params"] = {**request.path_params, "session_id": "stream"}
    try:
        return await _get_session(request)
    except SessionNotFound as error:
        raise SessionNotFound(
            f"{error.detail}; to follow the user's sessions, send Accept: text/event-stream"
        ) from None


def _cursor(text: str) -> UserCursor:
    """A cursor the stream sent; one of a former form (an update time, with
    or without `:<tombstone number>`) is taken, and the stream resets."""
    cursor = UserCursor.parse(text)
    if cursor is None:
        raise BadRequest(CURSOR_MESSAGE)
    return cursor


@router.get(
    USER_STREAM_PATH,
    response_class=Response,
    responses=_user_stream_responses(),
    summary="Follow changes to every session of a user (Server-Sent Events)",
    description=_USER_STREAM_DESCRIPTION,
)
async def stream_user_sessions(
    app_name: AppName,
    user_id: UserId,
    request: Request,
    after: Annotated[
        str | None,
        Query(
            max_length=CURSOR_MAX_LENGTH,
            description="Start after this cursor (an id the stream sent); Last-Event-ID wins.",
        ),
    ] = None,
    last_event_id: LastEventId = None,
) -> Response:
    if not asks_for_event_stream(request.headers.get("accept", "")):
        return await _get_session_named_stream(request)
    service = service_of(request)
    settings = request.app.state.settings
    stream = UserStream(
        followed_of(request),
        changes_of(request),
        app_name,
        user_id,
        heartbeat_seconds=settings.stream_heartbeat_seconds,
        clock=service.clock,
    )
    if last_event_id is not None:
        await stream.open(_cursor(last_event_id), cursor_field=["header", "Last-Event-ID"])
    elif after is not None:
        await stream.open(_cursor(after), cursor_field=["query", "after"])
    else:
        await stream.open(None, cursor_field=["query", "after"])
    return EventStreamResponse(
        until_the_token_expires(stream.messages()),
        send_timeout=settings.stream_send_timeout_seconds,
        on_close=stream.close,
    )
