"""Long-term memory of a user in an app: ingest a session, search, forget."""

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from app.api import rendering
from app.api.bodies import documented_body, read_json, validate_body
from app.api.dependencies import AppName, UserId
from app.api.routes.sessions import problem_responses
from app.db.repository import SessionKey
from app.errors import FieldError, InvalidInput
from app.json_rules import text_problem
from app.memory import iso_timestamp
from app.memory_service import MemoryService
from app.schemas import IngestMemoryRequest, IngestMemoryResponse, SearchMemoryResponse

router = APIRouter(tags=["memory"])

MAX_RESULTS = 100
DEFAULT_RESULTS = 10


def memory_of(request: Request) -> MemoryService:
    service: MemoryService = request.app.state.memory
    return service


@router.post(
    "/apps/{app_name}/users/{user_id}/memory",
    response_model=IngestMemoryResponse,
    responses=problem_responses(400, 404),
    openapi_extra=documented_body(IngestMemoryRequest, required=True),
    summary="Take a stored session's event texts into the user's memory (idempotent)",
)
async def ingest_session(app_name: AppName, user_id: UserId, request: Request) -> Response:
    body = validate_body(IngestMemoryRequest, await read_json(request))
    added = await memory_of(request).ingest_session(SessionKey(app_name, user_id, body.session_id))
    return rendering.json_response({"sessionId": body.session_id, "memoriesAdded": added})


@router.get(
    "/apps/{app_name}/users/{user_id}/memory",
    response_model=SearchMemoryResponse,
    responses=problem_responses(),
    summary="Search the user's memory: best matches first",
)
async def search_memory(
    app_name: AppName,
    user_id: UserId,
    request: Request,
    query: Annotated[str, Query(min_length=1, max_length=2000, description="A question.")],
    limit: Annotated[int, Query(ge=1, le=MAX_RESULTS)] = DEFAULT_RESULTS,
) -> Response:
    if (problem := text_problem(query)) is not None:
        raise InvalidInput([FieldError(["query", "query"], problem)])
    found = await memory_of(request).search(app_name, user_id, query, limit)
    memories = [
        {
            "id": record.event_id,
            "author": record.author,
            "timestamp": iso_timestamp(record.timestamp),
            "content": {"role": record.role, "parts": [{"text": record.text}]},
            "customMetadata": {"sessionId": record.session_id},
        }
        for record in found
    ]
    return rendering.json_response({"memories": memories})


@router.delete(
    "/apps/{app_name}/users/{user_id}/memory",
    status_code=204,
    responses=problem_responses(),
    summary="Forget everything in the user's memory",
)
async def forget_user(app_name: AppName, user_id: UserId, request: Request) -> Response:
    await memory_of(request).forget_user(app_name, user_id)
    return Response(status_code=204)
