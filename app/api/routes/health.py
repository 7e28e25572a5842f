"""Liveness and readiness probes."""

from fastapi import APIRouter, Request, Response
from sqlalchemy import text

from app.api import rendering
from app.api.problems import service_error_response
from app.db.migrations import SchemaNotCurrent, require_current_schema
from app.errors import DatabaseUnavailable
from app.schemas import Health, Problem

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
    engine = request.app.state.service.db.engine
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
        await require_current_schema(engine)
    except SchemaNotCurrent as error:
        return service_error_response(DatabaseUnavailable(str(error)))
    except Exception:
        return service_error_response(DatabaseUnavailable("the database is unreachable"))
    return rendering.json_response({"status": "ready"})
