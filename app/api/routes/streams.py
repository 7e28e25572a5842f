"""Live streams: a session's changes as Server-Sent Events (app.streams)."""

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from starlette.responses import Response

from ...domain import SessionKey
from ...errors import BadRequest
from ...limits import MAX_INT64
from ...streams import SessionStream, UserCursor, UserStream
from ..dependencies import AppName, SessionId, UserId, service_of
from ..event_stream import EVENT_STREAM_MEDIA_TYPE, EventStreamResponse
from .sessions import problem_responses

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
        service.store,
        service.changes,
        SessionKey(app_name, user_id, session_id),
        heartbeat_seconds=settings.stream_heartbeat_seconds,
        clock=service.clock,
    )
    if last_event_id is not None:
        await stream.open(_revision(last_event_id), after_field=["header", "Last-Event-ID"])
    else:
        await stream.open(after, after_field=["query", "after"])
    return EventStreamResponse(
        stream.messages(),
        send_timeout=settings.stream_send_timeout_seconds,
        on_close=stream.close,
    )


USER_STREAM_PATH = "/apps/{app_name}/users/{user_id}/sessions/stream"
CURSOR_MESSAGE = "a user stream's cursor must be an id it sent, such as 1795708099.99:4"

_USER_STREAM_DESCRIPTION = """\
Summaries of every change to the user's sessions, for dashboards: `created`,
`appended` (also any other change but a removal) and `removed`, each with
`data:` `{"sessionId", "revision", "updateTime"}`; `deleted` and `expired`
(`{"sessionId"}`; null: all of the user's, an erasure); `reset`
(`{"reason"}`) when the reader's cursor is older than the deletions kept
(7 days): list the sessions again. Every message's `id:` is a cursor.
Resume with `Last-Event-ID` or `?after=<cursor>`: each deletion and expiry
since, once, in order, then the sessions changed since, one summary each at
its newest revision (summaries may repeat after a reconnection). This path
takes the place of GET of a session whose id is `stream` (docs/api.md,
"Live streams")."""


def _cursor(text: str) -> UserCursor:
    """`<update time>:<tombstone number>`, or a bare update time (the former
    form: the stream answers `reset`)."""
    time_text, colon, seq_text = text.strip().partition(":")
    try:
        value = float(time_text)
    except ValueError:
        raise BadRequest(CURSOR_MESSAGE) from None
    if not 0 <= value < 1e12:  # NaN and infinities included
        raise BadRequest(CURSOR_MESSAGE)
    if not colon:
        return UserCursor(value, None)
    if not (seq_text.isascii() and seq_text.isdigit() and len(seq_text) <= 19):
        raise BadRequest(CURSOR_MESSAGE)
    seq = int(seq_text)
    if seq > MAX_INT64:
        raise BadRequest(CURSOR_MESSAGE)
    return UserCursor(value, seq)


@router.get(
    USER_STREAM_PATH,
    response_class=Response,
    responses=_stream_responses(400),
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
            max_length=64,
            description="Start after this cursor (an id the stream sent); Last-Event-ID wins.",
        ),
    ] = None,
    last_event_id: LastEventId = None,
) -> Response:
    service = service_of(request)
    settings = request.app.state.settings
    stream = UserStream(
        service.store,
        service.changes,
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
        stream.messages(),
        send_timeout=settings.stream_send_timeout_seconds,
        on_close=stream.close,
    )
