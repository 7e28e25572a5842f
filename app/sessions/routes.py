"""Sessions, their events and scoped state: the paths of ADK's api_server."""

from dataclasses import replace
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.routing import APIRoute

from ..core.errors import FieldError, InvalidInput
from ..core.identifiers import IDENTIFIER_MAX_LENGTH
from ..core.json_rules import text_problem
from ..core.limits import MAX_INT64, MAX_RETURNED_REMOVED_EVENTS
from ..http import examples
from ..http.bodies import decode_json, documented_body, limits_of, read_json, validate_body
from ..http.dependencies import AppName, IfMatch, SessionId, UserId, expected_revision
from ..http.problems import PROBLEM_MEDIA_TYPE, Problem
from ..http.rendering import json_response
from . import appending, compaction, page_tokens, rendering, rewind, session_appends
from .domain import SessionKey, SessionQuery
from .labels import LABEL_SYNTAX, MAX_LABEL_FILTERS, parse_label_filters
from .schemas import (
    CreateSessionRequest,
    Event,
    EventBatch,
    EventBatchRequest,
    EventList,
    ForkSessionRequest,
    PatchSessionRequest,
    RewindSessionRequest,
    Session,
    SessionAfterRemoval,
    SessionAfterRewind,
    SessionAppendResults,
    SessionAppendsRequest,
    SessionList,
    StateResponse,
)
from .service import SessionService

router = APIRouter(tags=["sessions"])
# keepInvocations' bound: more than any sliding window's overlap.
MAX_KEPT_INVOCATIONS = 10_000


def service_of(request: Request) -> SessionService:
    service: SessionService = request.app.state.service
    return service


MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    descriptions = {
        400: "A path or query that is not percent-encoded UTF-8; malformed JSON, If-Match"
        " or page token",
        413: "Request body, event or response too large",
        401: "API key missing or wrong (when keys are configured)",
        403: "The API key is not allowed for this app",
        404: "Session not found",
        409: "Conflict",
        412: "The session is no longer at the If-Match revision",
        422: "Invalid identifiers, query or body",
        503: "Database unavailable",
    }
    return {
        status: {
            "model": Problem,
            "description": descriptions[status],
            "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status in sorted({*statuses, 400, 401, 403, 413, 422, 503})
    }


_ETAG_HEADER = {
    "ETag": {"description": 'The session revision, as "<integer>"', "schema": {"type": "string"}}
}

PageSize = Annotated[int, Query(alias="pageSize", ge=1, le=MAX_PAGE_SIZE)]
PageToken = Annotated[
    str | None,
    Query(
        alias="pageToken",
        description="From nextPageToken, with the same filter (a sessions token "
        "also carries where its walk was pinned: the server's change numbers).",
    ),
]
AfterTimestamp = Annotated[
    float | None,
    Query(
        alias="afterTimestamp",
        allow_inf_nan=False,
        description="Only events with timestamp >= this (epoch s).",
    ),
]
MinRevision = Annotated[
    int | None,
    Query(
        alias="minRevision",
        ge=0,
        le=MAX_INT64,
        description="The session revision the caller last saw (its ETag, as a number): the "
        "answer is from a server that has at least that revision, so a read after one's own "
        "write sees it when reads are served by replicas (docs/api.md, Read-your-writes).",
    ),
]


def session_filters(
    label: Annotated[
        list[str],
        Query(
            max_length=MAX_LABEL_FILTERS,
            description="`key:value` (has that label) or `key` (has the key); repeatable, "
            f"all must match (at most {MAX_LABEL_FILTERS}). As labels are: {LABEL_SYNTAX}.",
        ),
    ] = [],  # noqa: B006 (FastAPI copies the default)
    updated_after: Annotated[
        float | None,
        Query(
            alias="updatedAfter",
            allow_inf_nan=False,
            description="Only sessions last updated at or after this time (epoch s).",
        ),
    ] = None,
    updated_before: Annotated[
        float | None,
        Query(
            alias="updatedBefore",
            allow_inf_nan=False,
            description="Only sessions last updated before this time (epoch s). Absent: "
            "a walk's first page pins its end at the server's time, carried by its "
            "tokens, so no session is listed twice (docs/api.md, Walking a list).",
        ),
    ] = None,
    order: Annotated[
        Literal["asc", "desc"],
        Query(description="By lastUpdateTime (then userId, id): asc (oldest first) or desc."),
    ] = "asc",
    include_state: Annotated[
        bool,
        Query(
            alias="includeState",
            description="true (the default): each session's merged state; false: its "
            "state is {} and not read (pages are cheaper).",
        ),
    ] = True,
) -> SessionQuery:
    """A list's filter, order and shape, checked; 422 naming a bad one."""
    labels = parse_label_filters(label)
    if isinstance(labels, FieldError):
        raise InvalidInput([labels])
    return SessionQuery(labels, updated_after, updated_before, order, include_state)


SessionFilters = Annotated[SessionQuery, Depends(session_filters)]


# The hot routes first: routes are matched in order, and matching each costs.


SESSION_PATH = "/apps/{app_name}/users/{user_id}/sessions/{session_id}"
APPEND_PATH = f"{SESSION_PATH}/events"
BATCH_PATH = f"{APPEND_PATH}/batch"
APPENDS_PATH = "/apps/{app_name}/appends"


def session_route() -> APIRoute:
    """The session read route, whose handler the user stream's route answers
    a read of the session named `stream` with."""
    for route in router.routes:
        if isinstance(route, APIRoute) and route.endpoint is get_session:
            return route
    raise LookupError(SESSION_PATH)


@router.post(
    APPEND_PATH,
    status_code=201,
    response_model=Event,
    responses={
        200: {
            "model": Event,
            "description": "A retry of a stored event (returned as stored), or a partial "
            "event (not stored: header Session-State-Persisted: false)",
        },
        201: {"headers": _ETAG_HEADER},
        **problem_responses(400, 404, 409, 412, 413),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {"$ref": "#/components/schemas/Event"},
                    "examples": examples.media_examples(examples.APPEND_EVENT),
                }
            },
        }
    },
    summary="Append an event, applying its state delta",
    description="Stores one event (ADK's Event JSON) and applies its actions.stateDelta in "
    "one transaction: session keys to the session, app: keys to the app, user: keys to the "
    "user, temp: keys never stored. 201 with the stored event and the new revision as ETag; "
    "the same event id sent again is answered 200 as a retry. If-Match: the revision the "
    "caller last saw (412 stale_session when another append came first). A partial event "
    "is answered but not stored.",
)
async def append_event(
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    request: Request,
    if_match: IfMatch = None,
) -> Response:
    key = SessionKey(app_name, user_id, session_id)
    revision = expected_revision(if_match)
    document = await read_json(request)
    return await appending.append(service_of(request), key, document, revision)


@router.post(
    BATCH_PATH,
    status_code=201,
    response_model=EventBatch,
    responses={
        200: {"model": EventBatch, "description": "A retry of a stored batch (returned as stored)"},
        201: {"headers": _ETAG_HEADER},
        **problem_responses(400, 404, 409, 412, 413),
    },
    openapi_extra=documented_body(
        EventBatchRequest,
        required=True,
        example=examples.APPEND_EVENTS,
        example_summary=examples.API_DOCS,
    ),
    summary="Append several events at once, all or none, applying their state deltas",
)
async def append_events(
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    request: Request,
    if_match: IfMatch = None,
) -> Response:
    key = SessionKey(app_name, user_id, session_id)
    revision = expected_revision(if_match)
    document = await read_json(request)
    return await appending.append_batch(service_of(request), key, document, revision)


@router.post(
    APPENDS_PATH,
    response_model=SessionAppendResults,
    responses=problem_responses(400, 413),
    openapi_extra=documented_body(
        SessionAppendsRequest,
        required=True,
        example=examples.APPEND_TO_SESSIONS,
        example_summary=examples.API_DOCS,
    ),
    summary="Append to several sessions at once, each append answered on its own",
)
async def append_to_sessions(app_name: AppName, request: Request) -> Response:
    body = await request.body()
    document = await decode_json(body, limits_of(request))
    return await session_appends.append_to_sessions(
        service_of(request), app_name, document, len(body)
    )


@router.delete(
    APPEND_PATH,
    response_model=SessionAfterRemoval,
    responses={
        200: {
            "headers": {
                **_ETAG_HEADER,
                "Session-State-Removed-Events": {
                    "description": "How many events were removed (0: none, nothing written)",
                    "schema": {"type": "integer"},
                },
            },
            "description": "The session after the removal, as lists show sessions: its "
            "state, no events; with returnRemoved=true, the removed events in "
            "removedEvents",
        },
        **problem_responses(404, 412, 413, 422),
    },
    summary="Remove the newest events (all, the last n, or those after one)",
)
async def remove_events(
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    request: Request,
    after: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=IDENTIFIER_MAX_LENGTH,
            description="Remove the events after this event id (it stays).",
        ),
    ] = None,
    last: Annotated[
        int | None,
        Query(ge=1, le=MAX_INT64, description="Remove the newest n events."),
    ] = None,
    return_removed: Annotated[
        bool,
        Query(
            alias="returnRemoved",
            description="Answer with the removed events (removedEvents); only with "
            f"last, at most {MAX_RETURNED_REMOVED_EVENTS}.",
        ),
    ] = False,
    if_match: IfMatch = None,
) -> Response:
    if after is not None and last is not None:
        raise InvalidInput([FieldError(["query"], "give after or last, not both")])
    if return_removed and (last is None or last > MAX_RETURNED_REMOVED_EVENTS):
        needs = f"returnRemoved needs last, from 1 to {MAX_RETURNED_REMOVED_EVENTS}"
        raise InvalidInput([FieldError(["query", "returnRemoved"], needs)])
    if after is not None and (problem := text_problem(after)) is not None:
        # No event id holds it, and PostgreSQL would refuse the text itself.
        raise InvalidInput([FieldError(["query", "after"], problem)])
    key = SessionKey(app_name, user_id, session_id)
    revision = expected_revision(if_match)
    outcome = await service_of(request).remove_events(
        key,
        after_event_id=after,
        last=last,
        expected_revision=revision,
        return_removed=return_removed,
    )
    return rendering.removal_response(outcome.session, outcome.removed, outcome.removed_events)


@router.get(
    SESSION_PATH,
    response_model=Session,
    responses={
        200: {
            "headers": {
                **_ETAG_HEADER,
                rendering.EVENTS_LEFT_OUT_HEADER: {
                    "description": "compacted=true: how many events were left out",
                    "schema": {"type": "integer"},
                },
                rendering.BYTES_LEFT_OUT_HEADER: {
                    "description": "compacted=true: the bytes of the events left out",
                    "schema": {"type": "integer"},
                },
            }
        },
        **problem_responses(404),
    },
    summary="Get a session with its events and merged state",
)
async def get_session(
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    request: Request,
    num_recent_events: Annotated[
        int | None,
        Query(alias="numRecentEvents", ge=0, le=MAX_INT64, description="Only the last n events."),
    ] = None,
    after_timestamp: AfterTimestamp = None,
    min_revision: MinRevision = None,
    compacted: Annotated[
        bool,
        Query(
            description="true: the events as ADK's prompt builder uses them once compaction "
            "has summarised some: those a compaction event covers left out (a few that ADK "
            "reads for more than the prompt stay), compaction events and later events whole; "
            "headers Session-State-Events-Left-Out and Session-State-Bytes-Left-Out say what "
            "was left out (docs/api.md, Compacted reads).",
        ),
    ] = False,
    keep_invocations: Annotated[
        int,
        Query(
            alias="keepInvocations",
            ge=0,
            le=MAX_KEPT_INVOCATIONS,
            description="With compacted=true: the newest n invocations a compaction covers "
            "stay whole. Set it to a sliding window's overlap_size when that is larger than "
            "its compaction_interval (docs/api.md, Compacted reads).",
        ),
    ] = 0,
) -> Response:
    key = SessionKey(app_name, user_id, session_id)
    session = await service_of(request).get_session(
        key, num_recent_events, after_timestamp, min_revision
    )
    if not compacted:
        return rendering.session_response(session)
    kept = compaction.compacted(session.events_json or "", keep_invocations)
    return rendering.compacted_session_response(
        replace(session, events_json=kept.events_json), kept.left_out, kept.bytes_left_out
    )


@router.post(
    "/apps/{app_name}/users/{user_id}/sessions",
    status_code=201,
    response_model=Session,
    responses={201: {"headers": _ETAG_HEADER}, **problem_responses(400, 409)},
    openapi_extra=documented_body(
        CreateSessionRequest,
        required=False,
        example=examples.CREATE_SESSION,
        labelled_example=examples.CREATE_LABELLED_SESSION,
    ),
    summary="Create a session",
    description="A new session of the user, with an initial state (app: and user: keys go "
    "to the app's and the user's shared state, temp: keys are dropped), labels and an "
    "expiry. No body, or no sessionId: the server names it (a uuid4). 409 "
    'session_already_exists when the id is taken. 201 with the session and ETag "0".',
)
async def create_session(app_name: AppName, user_id: UserId, request: Request) -> Response:
    service = service_of(request)
    document = await read_json(request)
    body = (
        CreateSessionRequest()
        if document is None
        else validate_body(CreateSessionRequest, document)
    )
    session = await service.create_session(
        app_name, user_id, body.session_id, body.state, body.requested_expiry(), body.labels
    )
    return rendering.session_response(session, status_code=201)


@router.post(
    "/apps/{app_name}/users/{user_id}/sessions/{session_id}/fork",
    status_code=201,
    response_model=Session,
    responses={
        201: {
            "headers": _ETAG_HEADER,
            "description": "The new session: its state, without the events key "
            "(read the copies with a get or GET .../events)",
        },
        **problem_responses(404, 409),
    },
    openapi_extra=documented_body(ForkSessionRequest, required=False, example=examples.FORK),
    summary="Fork a session: a new session with copies of its events up to one, or before "
    "an invocation",
)
async def fork_session(
    app_name: AppName, user_id: UserId, session_id: SessionId, request: Request
) -> Response:
    document = await read_json(request)
    body = ForkSessionRequest() if document is None else validate_body(ForkSessionRequest, document)
    key = SessionKey(app_name, user_id, session_id)
    session = await service_of(request).fork_session(
        key,
        body.session_id,
        body.up_to_event_id,
        body.requested_expiry(),
        body.requested_labels(),
        before_invocation_id=body.before_invocation_id,
    )
    return rendering.session_response(session, status_code=201)


@router.post(
    f"{SESSION_PATH}/rewind",
    response_model=SessionAfterRewind,
    responses={
        200: {
            "headers": _ETAG_HEADER,
            "description": "The session after the rewind: its state, without the events key, "
            "and the event the rewind appended (rewindEvent)",
        },
        **problem_responses(404, 412),
    },
    openapi_extra=documented_body(
        RewindSessionRequest,
        required=True,
        example=examples.REWIND,
        example_summary=examples.API_DOCS,
    ),
    summary="Rewind a session to before an invocation, as ADK's Runner.rewind_async",
    description="Appends ADK's rewind event (author user, actions.rewindBeforeInvocationId) "
    "whose stateDelta reverts the session's own keys to what the events before the "
    "invocation's first event set (as google-adk 2.15 does: a key only the undone events "
    "wrote is set to null; a creation key none of them wrote stays), computed from the "
    "history it is appended on: a write "
    "that comes in between makes it start over, or with If-Match answer 412 stale_session. "
    "Events stay (ADK's readers skip the rewound ones); app: and user: state is left alone; "
    "the server stores no artifacts. 404 invocation_not_found when no event carries the id.",
)
async def rewind_session(
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    request: Request,
    if_match: IfMatch = None,
) -> Response:
    key = SessionKey(app_name, user_id, session_id)
    revision = expected_revision(if_match)
    body = validate_body(RewindSessionRequest, await read_json(request))
    service = service_of(request)
    appended = await rewind.rewind_session(service, key, body.before_invocation_id, revision)
    session = await service.get_session(key, 0, None, appended.revision)
    return rendering.rewind_response(replace(session, events_json=None), appended.event)


@router.get(
    "/apps/{app_name}/users/{user_id}/sessions",
    response_model=SessionList,
    responses=problem_responses(400),
    summary="List a user's sessions (without events), filtered and ordered",
)
async def list_user_sessions(
    app_name: AppName,
    user_id: UserId,
    request: Request,
    query: SessionFilters,
    page_size: PageSize = DEFAULT_PAGE_SIZE,
    page_token: PageToken = None,
) -> Response:
    return await _session_list(request, app_name, user_id, query, page_size, page_token)


@router.get(
    "/apps/{app_name}/sessions",
    response_model=SessionList,
    responses=problem_responses(400),
    summary="List the sessions of every user of an app (without events), filtered and ordered",
)
async def list_app_sessions(
    app_name: AppName,
    request: Request,
    query: SessionFilters,
    page_size: PageSize = DEFAULT_PAGE_SIZE,
    page_token: PageToken = None,
) -> Response:
    return await _session_list(request, app_name, None, query, page_size, page_token)


async def _session_list(
    request: Request,
    app_name: str,
    user_id: str | None,
    query: SessionQuery,
    page_size: int,
    page_token: str | None,
) -> Response:
    """A page of the sessions of one user, or of every user of the app when
    `user_id` is None."""
    service = service_of(request)
    after = page_tokens.session_position(page_token, app_name, user_id, query)
    page = await service.list_sessions(app_name, user_id, page_size, after, query)
    token = page_tokens.sessions_token(page.next_after, app_name, user_id, query)
    return rendering.session_list_response(page.sessions, token)


@router.delete(
    SESSION_PATH,
    status_code=204,
    responses=problem_responses(404),
    summary="Delete a session and its events",
)
async def delete_session(
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    request: Request,
    delete_memories: Annotated[
        bool,
        Query(alias="deleteMemories", description="Also forget what memory took from it."),
    ] = False,
) -> Response:
    key = SessionKey(app_name, user_id, session_id)
    await service_of(request).delete_session(key, delete_memories=delete_memories)
    return Response(status_code=204)


@router.patch(
    SESSION_PATH,
    response_model=Session,
    responses={200: {"headers": _ETAG_HEADER}, **problem_responses(400, 404, 412)},
    openapi_extra=documented_body(
        PatchSessionRequest,
        required=True,
        example=examples.PATCH_STATE,
        labelled_example=examples.REPLACE_LABELS,
    ),
    summary="Change state (recorded as an event) or expiry without running an agent",
)
async def patch_session(
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    request: Request,
    if_match: IfMatch = None,
) -> Response:
    key = SessionKey(app_name, user_id, session_id)
    revision = expected_revision(if_match)
    body = validate_body(PatchSessionRequest, await read_json(request))
    session = await service_of(request).patch_session(
        key, body.state_delta, body.requested_expiry(), revision, body.requested_labels()
    )
    return rendering.session_response(session)


@router.get(
    "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events",
    response_model=EventList,
    responses=problem_responses(400, 404),
    summary="Page through a session's event history",
)
async def list_events(
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    request: Request,
    order: Literal["asc", "desc"] = "asc",
    page_size: PageSize = DEFAULT_PAGE_SIZE,
    page_token: PageToken = None,
    after_timestamp: AfterTimestamp = None,
    min_revision: MinRevision = None,
) -> Response:
    key = SessionKey(app_name, user_id, session_id)
    after_seq = page_tokens.event_cursor(page_token, key, order)
    page = await service_of(request).list_events(
        key, order, page_size, after_seq, after_timestamp, min_revision
    )
    token = page_tokens.events_token(page.next_after_seq, key, order)
    return rendering.event_list_response(page.events, token)


@router.get(
    "/apps/{app_name}/users/{user_id}/state",
    response_model=StateResponse,
    responses=problem_responses(),
    summary="A user's state in an app (keys without the user: prefix)",
)
async def get_user_state(app_name: AppName, user_id: UserId, request: Request) -> Response:
    state = await service_of(request).get_user_state(app_name, user_id)
    return json_response({"state": state})


@router.get(
    "/apps/{app_name}/state",
    response_model=StateResponse,
    responses=problem_responses(),
    summary="An app's state (keys without the app: prefix)",
)
async def get_app_state(app_name: AppName, request: Request) -> Response:
    return json_response({"state": await service_of(request).get_app_state(app_name)})
