"""An append (of one event or a batch), from parsed request to response:
shared by the FastAPI routes and the fast paths in front of them, so both
answer and count alike."""

from typing import Any

from fastapi.responses import Response

from ..domain import SessionKey
from ..errors import ServiceError
from ..metrics import APPENDS
from ..service import SessionService
from . import rendering

_APPEND_RESULTS = {
    "stale_session": "stale",
    "event_id_conflict": "conflict",
    "session_not_found": "not_found",
}


async def append_batch(
    service: SessionService, key: SessionKey, document: Any, revision: int | None
) -> Response:
    """201 with the stored events; 200 for a retry of a stored batch. Raises
    ServiceError for the problem responses."""
    outcome = await service.append_events(key, document, revision)
    return rendering.event_batch_response(outcome.events, outcome.revision, outcome.created)


async def append(
    service: SessionService, key: SessionKey, document: Any, revision: int | None
) -> Response:
    """201 with the stored event; 200 for a retry, or for a partial event
    (not stored). Raises ServiceError for the problem responses."""
    try:
        outcome = await service.append_event(key, document, revision)
    except ServiceError as error:
        APPENDS.labels(_APPEND_RESULTS.get(error.code, "invalid")).inc()
        raise
    if outcome.revision is None:
        APPENDS.labels("partial").inc()
        return Response(
            outcome.event,
            status_code=200,
            media_type=rendering.JSON_MEDIA_TYPE,
            headers={"Session-State-Persisted": "false"},
        )
    if outcome.created:
        APPENDS.labels("stored").inc()
    else:
        APPENDS.labels("retry").inc()
    return Response(
        outcome.event,
        status_code=201 if outcome.created else 200,
        media_type=rendering.JSON_MEDIA_TYPE,
        headers={"ETag": rendering.etag(outcome.revision)},
    )
