"""LangGraph's threads and checkpoints (a BaseCheckpointSaver's calls):
put and read checkpoints, list them newest first, store pending writes,
delete, copy and prune threads, delete runs."""

import base64
import binascii
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from ...core import json_codec
from ...core.errors import BadRequest, FieldError, InvalidInput
from ...core.identifiers import IDENTIFIER_MAX_LENGTH, name_problem
from ...core.json_rules import text_problem
from ...core.pagination import INVALID_TOKEN, decode_token, encode_token
from ...http import examples, rendering
from ...http.bodies import documented_body, limits_of, parse_json, read_json, validate_body
from ...http.dependencies import AppName, CheckpointId, ThreadId
from ...sessions.routes import PageSize, PageToken, problem_responses
from . import domain, write_bodies
from .domain import (
    AppCheckpointQuery,
    CheckpointQuery,
    ThreadKey,
    ThreadListQuery,
)
from .metadata_filter import metadata_filter_problem
from .schemas import (
    MAX_TEXT_LENGTH,
    AppCheckpointList,
    Checkpoint,
    CheckpointList,
    CopyThreadRequest,
    DeleteRunsRequest,
    OperationsRequest,
    PruneRequest,
    PutCheckpointRequest,
    PutWritesRequest,
    ThreadList,
    ThreadOperationsRequest,
    ThreadOperationsResults,
)
from .service import CheckpointService
from .thread_batches import apply_thread_batches

router = APIRouter(tags=["langgraph"])

MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100
THREADS_PATH = "/apps/{app_name}/threads"
THREADS_TOKEN = "threads"
THREAD_PATH = "/apps/{app_name}/threads/{thread_id}"
CHECKPOINTS_PATH = THREAD_PATH + "/checkpoints"
CHECKPOINT_PATH = CHECKPOINTS_PATH + "/{checkpoint_id}"
THREAD_OPERATIONS_PATH = "/apps/{app_name}/thread-operations"
APP_CHECKPOINTS_PATH = "/apps/{app_name}/checkpoints"
APP_CHECKPOINTS_TOKEN = "checkpoints"

CheckpointNs = Annotated[
    str,
    Query(
        alias="checkpointNs",
        max_length=MAX_TEXT_LENGTH,
        description='The checkpoint namespace: "" for the root graph, a subgraph\'s otherwise.',
    ),
]


def checkpoints_of(request: Request) -> CheckpointService:
    service: CheckpointService = request.app.state.checkpoints
    return service


def checked_namespace(checkpoint_ns: str | None) -> str | None:
    if checkpoint_ns is not None and (problem := text_problem(checkpoint_ns)) is not None:
        raise InvalidInput([FieldError(["query", "checkpointNs"], problem)])
    return checkpoint_ns


async def store_checkpoint(
    service: CheckpointService, key: ThreadKey, namespace: str, checkpoint_id: str, document: Any
) -> Response:
    """put_checkpoint's answer to its parsed body (its fast path's too,
    app.langgraph.checkpoints.fast_path)."""
    body = validate_body(PutCheckpointRequest, document)
    checkpoint = write_bodies.new_checkpoint(body, namespace, checkpoint_id)
    await service.put_checkpoint(key, write_bodies.owner(body), checkpoint)
    return Response(status_code=204)


async def store_writes(
    service: CheckpointService, key: ThreadKey, namespace: str, checkpoint_id: str, document: Any
) -> Response:
    """put_writes's answer to its parsed body (its fast path's too)."""
    body = validate_body(PutWritesRequest, document)
    writes = write_bodies.pending_writes(body)
    await service.put_writes(key, write_bodies.owner(body), namespace, checkpoint_id, writes)
    return Response(status_code=204)


async def store_operations(service: CheckpointService, key: ThreadKey, document: Any) -> Response:
    """apply_operations's answer to its parsed body (its fast path's too)."""
    await write_bodies.apply_batch(service, key, validate_body(OperationsRequest, document))
    return Response(status_code=204)


async def one_checkpoint(
    service: CheckpointService, key: ThreadKey, namespace: str, checkpoint_id: str
) -> Response:
    """get_checkpoint's answer (its fast path's too)."""
    found = await service.get_checkpoint(key, namespace, checkpoint_id)
    return rendering.json_response(_checkpoint_json(found))


async def checkpoint_page(
    service: CheckpointService, key: ThreadKey, query: CheckpointQuery
) -> Response:
    """list_checkpoints's answer to its checked query (its fast path's too)."""
    found, more = await service.list_checkpoints(key, query)
    next_token = _page_token(found[-1].checkpoint_id, found[-1].checkpoint_ns) if more else None
    return rendering.json_response(
        {"checkpoints": [_checkpoint_json(item) for item in found], "nextPageToken": next_token}
    )


@router.put(
    CHECKPOINT_PATH,
    status_code=204,
    responses=problem_responses(),
    openapi_extra=documented_body(
        PutCheckpointRequest,
        required=True,
        example=examples.PUT_CHECKPOINT,
        example_summary=examples.API_DOCS,
    ),
    summary="Store a checkpoint (BaseCheckpointSaver.put): the thread is made if new",
)
async def put_checkpoint(
    app_name: AppName,
    thread_id: ThreadId,
    checkpoint_id: CheckpointId,
    request: Request,
    checkpoint_ns: CheckpointNs = "",
) -> Response:
    namespace = checked_namespace(checkpoint_ns) or ""
    return await store_checkpoint(
        checkpoints_of(request),
        ThreadKey(app_name, thread_id),
        namespace,
        checkpoint_id,
        await read_json(request),
    )


@router.post(
    CHECKPOINT_PATH + "/writes",
    status_code=204,
    responses=problem_responses(),
    openapi_extra=documented_body(
        PutWritesRequest,
        required=True,
        example=examples.PUT_WRITES,
        example_summary=examples.API_DOCS,
    ),
    summary="Store a task's pending writes (BaseCheckpointSaver.put_writes)",
)
async def put_writes(
    app_name: AppName,
    thread_id: ThreadId,
    checkpoint_id: CheckpointId,
    request: Request,
    checkpoint_ns: CheckpointNs = "",
) -> Response:
    namespace = checked_namespace(checkpoint_ns) or ""
    return await store_writes(
        checkpoints_of(request),
        ThreadKey(app_name, thread_id),
        namespace,
        checkpoint_id,
        await read_json(request),
    )


@router.post(
    THREAD_PATH + "/operations",
    status_code=204,
    responses=problem_responses(),
    openapi_extra=documented_body(
        OperationsRequest,
        required=True,
        example=examples.CHECKPOINT_OPERATIONS,
        example_summary=examples.API_DOCS,
    ),
    summary="Store a thread's checkpoints and writes in order, all or none (a batch of "
    "put and put_writes)",
)
async def apply_operations(app_name: AppName, thread_id: ThreadId, request: Request) -> Response:
    return await store_operations(
        checkpoints_of(request), ThreadKey(app_name, thread_id), await read_json(request)
    )


@router.post(
    THREAD_OPERATIONS_PATH,
    response_model=ThreadOperationsResults,
    responses=problem_responses(400, 413),
    openapi_extra=documented_body(
        ThreadOperationsRequest,
        required=True,
        example=examples.THREAD_OPERATIONS,
        example_summary=examples.API_DOCS,
    ),
    summary="Store several threads' batches at once, each answered on its own",
)
async def apply_thread_operations(app_name: AppName, request: Request) -> Response:
    return await apply_thread_batches(checkpoints_of(request), app_name, await read_json(request))


@router.get(
    CHECKPOINT_PATH,
    response_model=Checkpoint,
    responses=problem_responses(404),
    summary="A checkpoint with its channel values and pending writes (get_tuple)",
)
async def get_checkpoint(
    app_name: AppName,
    thread_id: ThreadId,
    checkpoint_id: CheckpointId,
    request: Request,
    checkpoint_ns: CheckpointNs = "",
) -> Response:
    namespace = checked_namespace(checkpoint_ns) or ""
    return await one_checkpoint(
        checkpoints_of(request), ThreadKey(app_name, thread_id), namespace, checkpoint_id
    )


ListedNamespace = Annotated[
    str | None,
    Query(
        alias="checkpointNs",
        max_length=MAX_TEXT_LENGTH,
        description='Only this namespace ("": the root graph\'s); omitted: every one.',
    ),
]
MetadataFilter = Annotated[
    str | None,
    Query(
        max_length=64 * 1024,
        description="A JSON object: only checkpoints whose metadata contains it, as "
        "PostgreSQL's @> (each key with a value that contains the filter's: objects by "
        'their keys, arrays by their elements), e.g. {"source":"input","step":2}.',
    ),
]
Before = Annotated[
    str | None,
    Query(max_length=MAX_TEXT_LENGTH, description="Only checkpoints with smaller ids."),
]
ListLimit = Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)]
UserFilter = Annotated[
    str | None,
    Query(
        alias="userId",
        max_length=IDENTIFIER_MAX_LENGTH,
        description="Only this user's threads (required, and its own, for an end-user token).",
    ),
]


@router.get(
    CHECKPOINTS_PATH,
    response_model=CheckpointList,
    responses=problem_responses(),
    summary="The thread's checkpoints, newest first (list; limit 1: the latest)",
)
async def list_checkpoints(
    app_name: AppName,
    thread_id: ThreadId,
    request: Request,
    checkpoint_ns: ListedNamespace = None,
    metadata: MetadataFilter = None,
    before: Before = None,
    limit: ListLimit = DEFAULT_PAGE_SIZE,
    page_token: Annotated[str | None, Query(alias="pageToken", max_length=16 * 1024)] = None,
) -> Response:
    query = CheckpointQuery(
        checkpoint_ns=checked_namespace(checkpoint_ns),
        metadata=_metadata_filter(metadata, request),
        before=before,
        after=_page_position(page_token),
        limit=limit,
    )
    _check_before(before)
    return await checkpoint_page(checkpoints_of(request), ThreadKey(app_name, thread_id), query)


@router.get(
    APP_CHECKPOINTS_PATH,
    response_model=AppCheckpointList,
    responses=problem_responses(403),
    summary="Checkpoints of the app's threads, newest first (list with no config)",
)
async def list_app_checkpoints(
    app_name: AppName,
    request: Request,
    user_id: UserFilter = None,
    checkpoint_ns: ListedNamespace = None,
    metadata: MetadataFilter = None,
    before: Before = None,
    limit: ListLimit = DEFAULT_PAGE_SIZE,
    page_token: PageToken = None,
) -> Response:
    if user_id is not None and (problem := name_problem(user_id)) is not None:
        raise InvalidInput([FieldError(["query", "userId"], problem)])
    identity = (app_name, user_id or "")
    query = AppCheckpointQuery(
        user_id=user_id,
        checkpoint_ns=checked_namespace(checkpoint_ns),
        metadata=_metadata_filter(metadata, request),
        before=before,
        after=_app_checkpoint_position(page_token, identity),
        limit=limit,
    )
    _check_before(before)
    found, more = await checkpoints_of(request).list_app_checkpoints(app_name, query)
    last = found[-1] if more else None
    return rendering.json_response(
        {
            "checkpoints": [
                {"threadId": item.thread_id, **_checkpoint_json(item)} for item in found
            ],
            "nextPageToken": None
            if last is None
            else encode_token(
                APP_CHECKPOINTS_TOKEN,
                identity,
                [last.checkpoint_id, last.thread_id, last.checkpoint_ns],
            ),
        }
    )


def _check_before(before: str | None) -> None:
    if before is not None and (problem := text_problem(before)) is not None:
        raise InvalidInput([FieldError(["query", "before"], problem)])


def _app_checkpoint_position(
    token: str | None, identity: tuple[str, str]
) -> tuple[str, str, str] | None:
    """Where an app checkpoints page token's page starts: the last listed
    checkpoint's id, thread id and namespace, checked in full (BadRequest
    otherwise, or for another list's token)."""
    if token is None:
        return None
    position = decode_token(token, APP_CHECKPOINTS_TOKEN, identity)
    if len(position) != 3 or not all(
        isinstance(part, str) and text_problem(part) is None for part in position
    ):
        raise BadRequest(INVALID_TOKEN)
    return position[0], position[1], position[2]


def _metadata_filter(text: str | None, request: Request) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        document = parse_json(text.encode(), limits_of(request))
    except InvalidInput as error:
        raise InvalidInput(
            [problem.under("query", "metadata") for problem in error.errors]
        ) from None
    except BadRequest:
        raise InvalidInput([FieldError(["query", "metadata"], "not valid JSON")]) from None
    if not isinstance(document, dict):
        raise InvalidInput([FieldError(["query", "metadata"], "a JSON object")])
    problem = metadata_filter_problem(document)
    if problem is not None:
        raise InvalidInput([FieldError(["query", "metadata"], problem)])
    return document


def _page_token(checkpoint_id: str, checkpoint_ns: str) -> str:
    return base64.urlsafe_b64encode(json_codec.dumps([checkpoint_id, checkpoint_ns])).decode()


def _page_position(token: str | None) -> tuple[str, str] | None:
    if token is None:
        return None
    try:
        position = json_codec.loads(base64.urlsafe_b64decode(token.encode()))
    except (binascii.Error, ValueError, json_codec.InvalidJSON, json_codec.TooDeep):
        raise BadRequest("pageToken is not one this server gave") from None
    if (
        not isinstance(position, list)
        or len(position) != 2
        or not all(isinstance(part, str) and text_problem(part) is None for part in position)
    ):
        raise BadRequest("pageToken is not one this server gave")
    return position[0], position[1]


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _checkpoint_json(stored: domain.StoredCheckpoint) -> dict[str, Any]:
    return {
        "checkpointNs": stored.checkpoint_ns,
        "checkpointId": stored.checkpoint_id,
        "parentCheckpointId": stored.parent_checkpoint_id,
        "checkpoint": {"type": stored.checkpoint.type, "data": _b64(stored.checkpoint.data)},
        "metadata": stored.metadata,
        "channelVersions": stored.channel_versions,
        "channelValues": [
            {
                "channel": value.channel,
                "version": value.version,
                "type": value.value.type,
                "data": _b64(value.value.data),
            }
            for value in stored.values
        ],
        "pendingWrites": [
            {
                "taskId": write.task_id,
                "taskPath": write.task_path,
                "idx": write.idx,
                "channel": write.channel,
                "type": write.value.type,
                "data": _b64(write.value.data),
            }
            for write in stored.writes
        ],
    }


@router.get(
    THREADS_PATH,
    response_model=ThreadList,
    responses=problem_responses(),
    summary="The app's live threads, latest write first (of one user with userId)",
)
async def list_threads(
    app_name: AppName,
    request: Request,
    user_id: UserFilter = None,
    page_size: PageSize = DEFAULT_PAGE_SIZE,
    page_token: PageToken = None,
) -> Response:
    if user_id is not None and (problem := name_problem(user_id)) is not None:
        raise InvalidInput([FieldError(["query", "userId"], problem)])
    identity = (app_name, user_id or "")
    query = ThreadListQuery(
        user_id=user_id, after=_thread_position(page_token, identity), limit=page_size
    )
    found, more = await checkpoints_of(request).list_threads(app_name, query)
    last = found[-1] if more else None
    return rendering.json_response(
        {
            "threads": [
                {
                    "threadId": thread.thread_id,
                    "userId": thread.user_id,
                    "createTime": thread.create_time,
                    "lastUpdateTime": thread.update_time,
                    "expireTime": thread.expire_time,
                    "latestCheckpointId": thread.latest_checkpoint_id,
                }
                for thread in found
            ],
            "nextPageToken": None
            if last is None
            else encode_token(THREADS_TOKEN, identity, [last.update_time, last.thread_id]),
        }
    )


def _thread_position(token: str | None, identity: tuple[str, str]) -> tuple[float, str] | None:
    """Where a threads page token's page starts: the last listed thread's
    time and id, checked in full (BadRequest otherwise, or for another
    list's token)."""
    if token is None:
        return None
    position = decode_token(token, THREADS_TOKEN, identity)
    if len(position) != 2:
        raise BadRequest(INVALID_TOKEN)
    update_time, thread_id = position
    if not (
        type(update_time) in (int, float)
        and abs(update_time) <= 1e300  # finite: NaN fails too
        and isinstance(thread_id, str)
        and name_problem(thread_id) is None
    ):
        raise BadRequest(INVALID_TOKEN)
    return float(update_time), thread_id


@router.delete(
    THREAD_PATH,
    status_code=204,
    responses=problem_responses(),
    summary="Delete a thread: its checkpoints, values and writes (delete_thread); idempotent",
)
async def delete_thread(app_name: AppName, thread_id: ThreadId, request: Request) -> Response:
    await checkpoints_of(request).delete_thread(ThreadKey(app_name, thread_id))
    return Response(status_code=204)


@router.post(
    THREAD_PATH + "/copy",
    status_code=204,
    responses=problem_responses(404, 409),
    openapi_extra=documented_body(
        CopyThreadRequest,
        required=True,
        example=examples.COPY_THREAD,
        example_summary=examples.API_DOCS,
    ),
    summary="Copy a thread with every checkpoint and write to a new thread id (copy_thread)",
)
async def copy_thread(app_name: AppName, thread_id: ThreadId, request: Request) -> Response:
    body = validate_body(CopyThreadRequest, await read_json(request))
    await checkpoints_of(request).copy_thread(ThreadKey(app_name, thread_id), body.target_thread_id)
    return Response(status_code=204)


@router.post(
    "/apps/{app_name}/threads/prune",
    status_code=204,
    responses=problem_responses(409),
    openapi_extra=documented_body(
        PruneRequest,
        required=True,
        example=examples.PRUNE_THREADS,
        example_summary=examples.API_DOCS,
    ),
    summary="Prune threads: keep_latest keeps each namespace's latest checkpoint; delete",
)
async def prune_threads(app_name: AppName, request: Request) -> Response:
    body = validate_body(PruneRequest, await read_json(request))
    await checkpoints_of(request).prune(app_name, body.thread_ids, body.prune_strategy())
    return Response(status_code=204)


@router.post(
    "/apps/{app_name}/runs/delete",
    status_code=204,
    responses=problem_responses(),
    openapi_extra=documented_body(
        DeleteRunsRequest,
        required=True,
        example=examples.DELETE_RUNS,
        example_summary=examples.API_DOCS,
    ),
    summary="Delete the checkpoints of runs (metadata.run_id) with their writes",
)
async def delete_runs(app_name: AppName, request: Request) -> Response:
    body = validate_body(DeleteRunsRequest, await read_json(request))
    await checkpoints_of(request).delete_runs(app_name, body.run_ids)
    return Response(status_code=204)
