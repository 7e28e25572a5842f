"""Long-term memory of a user in an app, as ADK's BaseMemoryService: take a
stored session, add events, add entries, search, delete one memory, forget;
and a listing of the user's memories, the last added first."""

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from ..core import json_codec
from ..core.errors import BadRequest, FieldError, InvalidInput
from ..core.json_rules import text_problem
from ..core.limits import MAX_TIMESTAMP, MIN_TIMESTAMP
from ..core.pagination import INVALID_TOKEN, decode_token, encode_token
from ..http import examples, rendering
from ..http.bodies import documented_body, read_json, validate_body
from ..http.dependencies import AppName, MemoryId, UserId
from ..sessions.domain import MemoryRecord, SessionKey
from ..sessions.routes import PageSize, PageToken, problem_responses
from ..sessions.schemas import (
    AddMemoriesRequest,
    AddMemoriesResponse,
    AddMemoryEventsRequest,
    AddMemoryEventsResponse,
    IngestMemoryRequest,
    IngestMemoryResponse,
    MemoryList,
    SearchMemoryResponse,
)
from .domain import FoundMemory
from .rules import event_text, iso_timestamp, parse_iso_timestamp
from .service import MemoryService, SearchMode

router = APIRouter(tags=["memory"])

MAX_RESULTS = 100
DEFAULT_RESULTS = 10
DEFAULT_PAGE_SIZE = 100
MEMORIES_TOKEN = "memories"


def memory_of(request: Request) -> MemoryService:
    service: MemoryService = request.app.state.memory
    return service


@router.post(
    "/apps/{app_name}/users/{user_id}/memory",
    response_model=IngestMemoryResponse,
    responses=problem_responses(400, 404),
    openapi_extra=documented_body(
        IngestMemoryRequest, required=True, example=examples.INGEST_MEMORY
    ),
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
    summary="Search the user's memory by keywords and meaning: best matches first",
)
async def search_memory(
    app_name: AppName,
    user_id: UserId,
    request: Request,
    query: Annotated[
        str,
        Query(max_length=2000, description="A question; an empty or blank one finds nothing."),
    ],
    limit: Annotated[int, Query(ge=1, le=MAX_RESULTS)] = DEFAULT_RESULTS,
    mode: Annotated[
        SearchMode,
        Query(
            description="hybrid (the default): by keywords and by meaning, fused; keyword: "
            "by words only; semantic: by meaning only (400 semantic_search_off without an "
            "embedder, 503 embedder_unavailable when the question cannot be embedded)."
        ),
    ] = "hybrid",
) -> Response:
    if (problem := text_problem(query)) is not None:
        raise InvalidInput([FieldError(["query", "query"], problem)])
    if not query.strip():
        return rendering.json_response({"memories": []})
    found = await memory_of(request).search(app_name, user_id, query, limit, mode)
    return rendering.json_response({"memories": [_memory_entry(result) for result in found]})


def _memory_entry(found: FoundMemory) -> dict[str, Any]:
    return {
        **_stored_memory(found.record),
        "matchedBy": found.matched_by,
        "score": round(found.score, 6),
    }


def _stored_memory(record: MemoryRecord) -> dict[str, Any]:
    content = (
        json_codec.loads(record.content)
        if record.content is not None
        else {"role": record.role, "parts": [{"text": record.text}]}
    )
    metadata = {} if record.custom_metadata is None else json_codec.loads(record.custom_metadata)
    if record.session_id:
        metadata = {**metadata, "sessionId": record.session_id}
    return {
        "id": record.event_id,
        "author": record.author,
        "timestamp": iso_timestamp(record.timestamp),
        "content": content,
        "customMetadata": metadata,
    }


@router.get(
    "/apps/{app_name}/users/{user_id}/memory/entries",
    response_model=MemoryList,
    responses=problem_responses(400),
    summary="The user's memories, the last added first (no question: a listing)",
)
async def list_memories(
    app_name: AppName,
    user_id: UserId,
    request: Request,
    page_size: PageSize = DEFAULT_PAGE_SIZE,
    page_token: PageToken = None,
) -> Response:
    identity = (app_name, user_id)
    before = None if page_token is None else _page_position(page_token, identity)
    page = await memory_of(request).list_memories(app_name, user_id, before, page_size)
    return rendering.json_response(
        {
            "memories": [_stored_memory(record) for record in page.memories],
            "nextPageToken": None
            if page.next_before is None
            else encode_token(MEMORIES_TOKEN, identity, [page.next_before]),
        }
    )


def _page_position(token: str, identity: tuple[str, str]) -> int:
    """The row id a memories page token's page is below, checked in full
    (BadRequest otherwise, or for another list's token)."""
    position = decode_token(token, MEMORIES_TOKEN, identity)
    if len(position) != 1 or type(position[0]) is not int or not 0 < position[0] < 2**63:
        raise BadRequest(INVALID_TOKEN)
    before: int = position[0]
    return before


@router.post(
    "/apps/{app_name}/users/{user_id}/memory/events",
    response_model=AddMemoryEventsResponse,
    responses=problem_responses(400),
    openapi_extra=documented_body(
        AddMemoryEventsRequest,
        required=True,
        example=examples.ADD_MEMORY_EVENTS,
        example_summary=examples.API_DOCS,
    ),
    summary="Take events' texts into the user's memory (ADK's add_events_to_memory)",
)
async def add_events(app_name: AppName, user_id: UserId, request: Request) -> Response:
    document = await read_json(request)
    body = validate_body(AddMemoryEventsRequest, document)
    # The events as sent (validated above), so that content is kept verbatim.
    events: list[dict[str, Any]] = document["events"]
    added = await memory_of(request).add_events(
        app_name, user_id, body.session_id, events, body.rewound_event_ids
    )
    return rendering.json_response({"memoriesAdded": added})


@router.post(
    "/apps/{app_name}/users/{user_id}/memory/entries",
    response_model=AddMemoriesResponse,
    responses=problem_responses(400),
    openapi_extra=documented_body(AddMemoriesRequest, required=True, example=examples.ADD_MEMORIES),
    summary="Write memory entries directly (ADK's add_memory)",
)
async def add_memories(app_name: AppName, user_id: UserId, request: Request) -> Response:
    document = await read_json(request)
    body = validate_body(AddMemoriesRequest, document)
    entries: list[tuple[dict[str, Any], float | None]] = []
    problems: list[FieldError] = []
    for index, (sent, entry) in enumerate(zip(document["memories"], body.memories, strict=True)):
        where: list[str | int] = ["body", "memories", index]
        if event_text(sent) is None:
            problems.append(FieldError([*where, "content"], "a memory needs a text part"))
        at = None
        if entry.timestamp is not None:
            at = parse_iso_timestamp(entry.timestamp)
            if at is None or not MIN_TIMESTAMP <= at <= MAX_TIMESTAMP:
                problems.append(
                    FieldError([*where, "timestamp"], "an ISO 8601 time from 1970 to 9999")
                )
        entries.append((sent, at))
    if problems:
        raise InvalidInput(problems)
    ids = await memory_of(request).add_entries(app_name, user_id, entries)
    return rendering.json_response({"memoryIds": ids})


@router.delete(
    "/apps/{app_name}/users/{user_id}/memory/{memory_id}",
    status_code=204,
    responses=problem_responses(400),
    summary="Delete one memory (ADK's delete_memory); an unknown id is a no-op",
)
async def delete_memory(
    app_name: AppName, user_id: UserId, memory_id: MemoryId, request: Request
) -> Response:
    await memory_of(request).delete_memory(app_name, user_id, memory_id)
    return Response(status_code=204)


@router.delete(
    "/apps/{app_name}/users/{user_id}/memory",
    status_code=204,
    responses=problem_responses(),
    summary="Forget everything in the user's memory",
)
async def forget_user(app_name: AppName, user_id: UserId, request: Request) -> Response:
    await memory_of(request).forget_user(app_name, user_id)
    return Response(status_code=204)
