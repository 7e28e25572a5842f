"""Liveness and readiness probes."""

from fastapi import APIRouter, Request, Response
from pydantic import Field

from ..core.errors import DatabaseUnavailable
from . import rendering
from .problems import Problem, service_error_response
from .wire import WireModel

router = APIRouter(tags=["health"])


class MemoryEmbeddingStatus(WireModel):
    embedder: str = Field(description="The model id stored with every vector.")
    waiting: int | None = Field(
        description="Memories waiting for a vector, as last counted (None: not counted yet)."
    )
    given_up: int | None = Field(
        description="Memories whose text the embedder refused 3 times alone: not embedded "
        "(found by keywords only) until `session-state memory reindex` tries them again. "
        "As last counted (None: not counted yet)."
    )
    last_error: str | None = Field(
        description="Why the last embedding pass failed (None: it succeeded)."
    )


class Health(WireModel):
    status: str
    memory_embedding: MemoryEmbeddingStatus | None = Field(
        default=None,
        description="/readyz: the backlog of memories waiting for a vector (absent when "
        "search by meaning is off).",
    )


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
