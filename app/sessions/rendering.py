"""Sessions and events as JSON responses built by hand, so that stored event
JSON is sent verbatim (and without a parse and re-encode per event)."""

from collections.abc import Iterable

from fastapi.responses import Response

from ..core import json_codec
from ..http.rendering import JSON_MEDIA_TYPE, etag
from .domain import SessionView


def _event_array(events: Iterable[str]) -> bytes:
    return b"[" + ",".join(events).encode() + b"]"


def session_json(session: SessionView) -> bytes:
    dumps = json_codec.dumps
    return b"".join(
        (
            b'{"id":',
            dumps(session.id),
            b',"appName":',
            dumps(session.app_name),
            b',"userId":',
            dumps(session.user_id),
            # A state not read, or events not read, are left out, not shown empty.
            b"" if session.state is None else b',"state":' + dumps(session.state),
            b""
            if session.events_json is None
            else b',"events":[' + session.events_json.encode() + b"]",
            b',"lastUpdateTime":',
            dumps(session.last_update_time),
            # Only a session that expires has the field: ADK's six stay as they are.
            b"" if session.expire_time is None else b',"expireTime":',
            b"" if session.expire_time is None else dumps(session.expire_time),
            # Labels too: only a session that has some.
            b',"labels":' + dumps(session.labels) if session.labels else b"",
            b"}",
        )
    )


def session_response(session: SessionView, status_code: int = 200) -> Response:
    return Response(
        session_json(session),
        status_code=status_code,
        media_type=JSON_MEDIA_TYPE,
        headers={"ETag": etag(session.revision)},
    )


# A compacted read's headers: how many events it left out, and their bytes.
EVENTS_LEFT_OUT_HEADER = "Session-State-Events-Left-Out"
BYTES_LEFT_OUT_HEADER = "Session-State-Bytes-Left-Out"


def compacted_session_response(
    session: SessionView, left_out: int, bytes_left_out: int
) -> Response:
    response = session_response(session)
    response.headers[EVENTS_LEFT_OUT_HEADER] = str(left_out)
    response.headers[BYTES_LEFT_OUT_HEADER] = str(bytes_left_out)
    return response


def rewind_response(session: SessionView, rewind_event: str) -> Response:
    """The session after a rewind, without its events, and the marker appended."""
    body = session_json(session)[:-1] + b',"rewindEvent":' + rewind_event.encode() + b"}"
    return Response(body, media_type=JSON_MEDIA_TYPE, headers={"ETag": etag(session.revision)})


def removal_response(
    session: SessionView, removed: int, removed_events: list[str] | None
) -> Response:
    """The session after a removal; with the removed events when asked."""
    body = session_json(session)
    if removed_events is not None:
        body = body[:-1] + b',"removedEvents":' + _event_array(removed_events) + b"}"
    response = Response(body, media_type=JSON_MEDIA_TYPE, headers={"ETag": etag(session.revision)})
    response.headers["Session-State-Removed-Events"] = str(removed)
    return response


def session_list_response(sessions: list[SessionView], next_page_token: str | None) -> Response:
    body = (
        b'{"sessions":['
        + b",".join(session_json(session) for session in sessions)
        + b'],"nextPageToken":'
        + json_codec.dumps(next_page_token)
        + b"}"
    )
    return Response(body, media_type=JSON_MEDIA_TYPE)


def event_list_response(events: list[str], next_page_token: str | None) -> Response:
    body = (
        b'{"events":'
        + _event_array(events)
        + b',"nextPageToken":'
        + json_codec.dumps(next_page_token)
        + b"}"
    )
    return Response(body, media_type=JSON_MEDIA_TYPE)


def event_batch_response(events: list[str], revision: int, created: bool) -> Response:
    """201 for a stored batch, 200 for a retry of one."""
    return Response(
        b'{"events":' + _event_array(events) + b"}",
        status_code=201 if created else 200,
        media_type=JSON_MEDIA_TYPE,
        headers={"ETag": etag(revision)},
    )
