"""Appends to several sessions of one app in one request (`POST
/apps/{app}/appends`), each answered in a result of its own exactly as a
single append would have been.

What it is for: a client whose callers append to many sessions at once
(an agent server's concurrent conversations) sends the appends that wait
behind its requests in flight together, so that one request's cost (HTTP,
the ASGI stack, the client's) is shared among them; the server's group
commit stores them in one statement as it would concurrent requests.

The wrapper and every append's identifiers are checked first: a problem
there refuses the whole request and nothing is written. Each event is
then checked and stored by the single append's own code, and its problem
(404, 409, 412, 422, ...) is its own result, never its neighbours'. A
session's appends run in the order given; sessions run at once.
"""

import asyncio
from typing import Any

from fastapi.responses import Response

from ..core import json_codec
from ..core.end_user_tokens import refuse_other_users
from ..core.errors import PayloadTooLarge, ServiceError
from ..http import rendering
from ..http.bodies import validate_body
from ..http.problems import service_error_document
from .appending import append_status, counted_append
from .domain import SessionKey
from .schemas import SessionAppend, SessionAppendsRequest
from .service import SessionService

# What a result may add to the event sent: its status and revision, an id
# and a timestamp the server gives, or a problem in its place.
RESULT_OVERHEAD_BYTES = 1024


async def append_to_sessions(
    service: SessionService, app_name: str, document: Any, body_bytes: int
) -> Response:
    """200 with each append's result, in order; `body_bytes`: the size of
    the body `document` was parsed from. Raises ServiceError for a request
    refused whole."""
    request = validate_body(SessionAppendsRequest, document)
    refuse_other_users([append.user_id for append in request.appends], "append to sessions")
    _check_answer_fits(body_bytes, len(request.appends), service)
    results: list[bytes] = [b""] * len(request.appends)
    by_session: dict[SessionKey, list[int]] = {}
    for index, append in enumerate(request.appends):
        key = SessionKey(app_name, append.user_id, append.session_id)
        by_session.setdefault(key, []).append(index)

    async def run(key: SessionKey, indexes: list[int]) -> None:
        for index in indexes:
            results[index] = await _result(service, key, request.appends[index])

    await asyncio.gather(*(run(key, indexes) for key, indexes in by_session.items()))
    return Response(
        b'{"results":[' + b",".join(results) + b"]}", media_type=rendering.JSON_MEDIA_TYPE
    )


def _check_answer_fits(body_bytes: int, appends: int, service: SessionService) -> None:
    """The answer carries every stored event, about as large as the events
    sent: a request whose answer could pass the response limit is refused
    whole, before anything is written."""
    answer_bytes = body_bytes + RESULT_OVERHEAD_BYTES * appends
    limit = service.limits.max_response_bytes
    if answer_bytes > limit:
        raise PayloadTooLarge.appends_answer(answer_bytes, limit)


async def _result(service: SessionService, key: SessionKey, append: SessionAppend) -> bytes:
    try:
        outcome = await counted_append(service, key, append.event, append.if_match)
    except ServiceError as error:
        problem = json_codec.dumps(service_error_document(error))
        return b'{"status":%d,"problem":%s}' % (error.status, problem)
    event = outcome.event.encode()
    if outcome.revision is None:
        return b'{"status":200,"event":%s}' % event
    status = append_status(outcome)
    return b'{"status":%d,"revision":%d,"event":%s}' % (status, outcome.revision, event)
