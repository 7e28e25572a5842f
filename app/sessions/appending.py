"""An append (of one event or a batch), from parsed request to response:
shared by the FastAPI routes and the fast paths in front of them, so both
answer and count alike."""

from typing import Any

from fastapi.responses import Response

from ..core.errors import ServiceError
from ..core.metrics import APPENDS
from ..http.rendering import JSON_MEDIA_TYPE, etag
from . import rendering
from .domain import AppendOutcome, SessionKey
from .service import SessionService

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
    outcome = await counted_append(service, key, document, revision)
    if outcome.revision is None:
        return Response(
            outcome.event,
            status_code=200,
            media_type=JSON_MEDIA_TYPE,
            headers={"Session-State-Persisted": "false"},
        )
    return Response(
        outcome.event,
        status_code=append_status(outcome),
        media_type=JSON_MEDIA_TYPE,
        headers={"ETag": etag(outcome.revision)},
    )


async def counted_append(
    service: SessionService, key: SessionKey, document: Any, revision: int | None
) -> AppendOutcome:
    """One append, counted by its result: a single append's and each of a
    request to several sessions (app.sessions.session_appends)."""
    try:
        outcome = await service.append_event(key, document, revision)
    except ServiceError as error:
        APPENDS.labels(_APPEND_RESULTS.get(error.code, "invalid")).inc()
        raise
    if outcome.revision is None:
        APPENDS.labels("partial").inc()
    else:
        APPENDS.labels("stored" if outcome.created else "retry").inc()
    return outcome


def append_status(outcome: AppendOutcome) -> int:
    """201 for a stored event; 200 for a retry or a partial event."""
    return 201 if outcome.created else 200
