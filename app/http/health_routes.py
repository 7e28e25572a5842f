"""Liveness and readiness probes."""

from fastapi import APIRouter, Request, Response

from ..core.errors import DatabaseUnavailable
from ..sessions.schemas import Health, Problem
from . import rendering
from .problems import service_error_response

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, summary="The process is alive")
async def healthz() -> Response:
    return rendering.json_response({"status": "ok"})


@router.get(
    "/readyz",
    response_model=Health,
    responses={503: {"model": Problem, "description": "Database unreachable or schema behind"}},
    summary="The database is reachable and its schema is current",
)
async def readyz(request: Request) -> Response:
    try:
        await request.app.state.service.store.check_ready()
    except DatabaseUnavailable as error:
        return service_error_response(error)
    answer: dict[str, object] = {"status": "ready"}
    backlog = request.app.state.memory_backlog
    if backlog is not None:
        # Waiting memories do not make the service unready: they are stored
        # and found by keywords meanwhile.
        answer["memoryEmbedding"] = {
            "embedder": backlog.embedder.model_id,
            "waiting": backlog.status.waiting,
            "givenUp": backlog.status.given_up,
            "lastError": backlog.status.last_error,
        }
    return rendering.json_response(answer)
