"""LangGraph's long-term store (a BaseStore's calls): a batch of operations
in one request, and one route per operation for other clients: an item's
get, put and delete, search, and namespaces."""

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, ValidationError

from ...core import json_codec
from ...core.errors import InvalidInput, ItemNotFound, ResponseTooLarge
from ...http import examples
from ...http.bodies import documented_body, field_errors, limits_of, read_json, validate_body
from ...http.dependencies import AppName
from ...sessions.routes import problem_responses
from . import domain
from .schemas import (
    MAX_KEY_LENGTH,
    MAX_LABEL_LENGTH,
    MAX_NAMESPACE_DEPTH,
    BatchRequest,
    BatchResponse,
    GetOperation,
    Item,
    ItemList,
    ListNamespacesOperation,
    NamespaceList,
    PutItemRequest,
    PutOperation,
    SearchOperation,
)
from .service import StoreService

router = APIRouter(tags=["langgraph store"])

STORE_PATH = "/apps/{app_name}/store"

NamespaceQuery = Annotated[
    list[Annotated[str, Query(max_length=MAX_LABEL_LENGTH)]],
    Query(
        max_length=MAX_NAMESPACE_DEPTH,
        description="The item's namespace, one label per parameter, in order: "
        "?namespace=alice&namespace=memories.",
    ),
]
KeyQuery = Annotated[str, Query(max_length=MAX_KEY_LENGTH, description="The item's key.")]


def store_of(request: Request) -> StoreService:
    service: StoreService = request.app.state.store
    return service


def _from_query(model: type[BaseModel], document: dict[str, Any]) -> Any:
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise InvalidInput(field_errors(error, "query")) from None


def operation_of(
    op: GetOperation | PutOperation | SearchOperation | ListNamespacesOperation,
) -> domain.Operation:
    if isinstance(op, GetOperation):
        return domain.GetItem(tuple(op.namespace), op.key, op.refresh_ttl)
    if isinstance(op, PutOperation):
        return domain.PutItem(tuple(op.namespace), op.key, op.value, op.ttl_seconds)
    if isinstance(op, SearchOperation):
        return domain.SearchItems(
            tuple(op.namespace_prefix), op.filter, op.query, op.limit, op.offset, op.refresh_ttl
        )
    return domain.ListNamespaces(
        [
            domain.NamespaceCondition(condition.match_type, tuple(condition.path))
            for condition in op.match_conditions
        ],
        op.max_depth,
        op.limit,
        op.offset,
    )


def item_json(item: domain.StoredItem) -> dict[str, Any]:
    return {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "createdAt": item.create_time,
        "updatedAt": item.update_time,
        "expiresAt": item.expire_time,
    }


def result_json(result: domain.Result) -> Any:
    if result is None:
        return None
    if isinstance(result, domain.StoredItem):
        return item_json(result)
    return [
        item_json(entry) if isinstance(entry, domain.StoredItem) else list(entry)
        for entry in result
    ]


def _response(request: Request, body: object) -> Response:
    content = json_codec.dumps(body)
    limit = limits_of(request).max_response_bytes
    if len(content) > limit:
        raise ResponseTooLarge(
            f"the answer is {len(content)} bytes, more than {limit} (MAX_RESPONSE_BYTES): "
            "ask for fewer items (limit)"
        )
    return Response(content, media_type="application/json")


@router.post(
    STORE_PATH + "/batch",
    response_model=BatchResponse,
    responses=problem_responses(413),
    openapi_extra=documented_body(
        BatchRequest, required=True, example=examples.STORE_BATCH, example_summary=examples.API_DOCS
    ),
    summary="Run a batch of store operations in one transaction (BaseStore.batch)",
)
async def run_batch(app_name: AppName, request: Request) -> Response:
    body = validate_body(BatchRequest, await read_json(request))
    results = await store_of(request).batch(app_name, [operation_of(op) for op in body.ops])
    return _response(request, {"results": [result_json(result) for result in results]})


@router.get(
    STORE_PATH + "/items",
    response_model=Item,
    responses=problem_responses(404),
    summary="An item (BaseStore.get); refreshTtl pushes its expiry out",
)
async def get_item(
    app_name: AppName,
    request: Request,
    namespace: NamespaceQuery,
    key: KeyQuery,
    refresh_ttl: Annotated[bool, Query(alias="refreshTtl")] = True,
) -> Response:
    op = _from_query(GetOperation, {"namespace": namespace, "key": key, "refreshTtl": refresh_ttl})
    [found] = await store_of(request).batch(app_name, [operation_of(op)])
    if not isinstance(found, domain.StoredItem):
        raise ItemNotFound.of(namespace, key)
    return _response(request, item_json(found))


@router.put(
    STORE_PATH + "/items",
    status_code=204,
    responses=problem_responses(),
    openapi_extra=documented_body(
        PutItemRequest, required=True, example=examples.PUT_ITEM, example_summary=examples.API_DOCS
    ),
    summary="Store an item, replacing one of the same namespace and key (BaseStore.put)",
)
async def put_item(
    app_name: AppName, request: Request, namespace: NamespaceQuery, key: KeyQuery
) -> Response:
    body = validate_body(PutItemRequest, await read_json(request))
    op = _from_query(PutOperation, {"namespace": namespace, "key": key, "value": {}})
    put = domain.PutItem(tuple(op.namespace), op.key, body.value, body.ttl_seconds)
    await store_of(request).batch(app_name, [put])
    return Response(status_code=204)


@router.delete(
    STORE_PATH + "/items",
    status_code=204,
    responses=problem_responses(),
    summary="Delete an item (BaseStore.delete); idempotent",
)
async def delete_item(
    app_name: AppName, request: Request, namespace: NamespaceQuery, key: KeyQuery
) -> Response:
    op = _from_query(PutOperation, {"namespace": namespace, "key": key, "value": None})
    await store_of(request).batch(app_name, [operation_of(op)])
    return Response(status_code=204)


@router.post(
    STORE_PATH + "/search",
    response_model=ItemList,
    responses=problem_responses(413),
    openapi_extra=documented_body(
        SearchOperation,
        required=True,
        example=examples.SEARCH_STORE,
        example_summary=examples.API_DOCS,
    ),
    summary="Items under a namespace prefix, by filter and keywords (BaseStore.search)",
)
async def search_items(app_name: AppName, request: Request) -> Response:
    body = validate_body(SearchOperation, await read_json(request) or {})
    [found] = await store_of(request).batch(app_name, [operation_of(body)])
    return _response(request, {"items": result_json(found)})


@router.post(
    STORE_PATH + "/namespaces",
    response_model=NamespaceList,
    responses=problem_responses(),
    openapi_extra=documented_body(
        ListNamespacesOperation,
        required=True,
        example=examples.LIST_NAMESPACES,
        example_summary=examples.API_DOCS,
    ),
    summary="The namespaces of stored items (BaseStore.list_namespaces)",
)
async def list_namespaces(app_name: AppName, request: Request) -> Response:
    body = validate_body(ListNamespacesOperation, await read_json(request) or {})
    [found] = await store_of(request).batch(app_name, [operation_of(body)])
    return _response(request, {"namespaces": result_json(found)})
