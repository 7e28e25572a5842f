"""The wire models of LangGraph's long-term store: its operations as JSON
(GetOp, PutOp, SearchOp, ListNamespacesOp) and its items. A namespace is an
array of labels; TTLs are seconds (LangGraph's minutes times 60)."""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from ...core.config import MAX_TTL_SECONDS
from ...core.json_rules import text_problem
from ...http.wire import WireModel, held_to

MAX_LABEL_LENGTH = 256
MAX_NAMESPACE_DEPTH = 32
MAX_KEY_LENGTH = 1024
MAX_SEARCH_LIMIT = 1000
MAX_OFFSET = 1_000_000
MAX_OPS_PER_BATCH = 1000
MAX_QUERY_LENGTH = 2000


def _label(text: str) -> str:
    if "." in text:
        raise PydanticCustomError("namespace_label", 'a namespace label holds no "."')
    return text


_text = held_to(text_problem, "text")


Label = Annotated[
    str,
    Field(min_length=1, max_length=MAX_LABEL_LENGTH, description='No "." (LangGraph\'s rule).'),
    AfterValidator(_label),
    _text,
]
Key = Annotated[str, Field(min_length=1, max_length=MAX_KEY_LENGTH), _text]
ItemNamespace = Annotated[
    list[Label],
    Field(
        min_length=1,
        max_length=MAX_NAMESPACE_DEPTH,
        description="The item's namespace, its labels in order; the first is its user "
        "(erasing that user removes the item).",
    ),
]
NamespacePath = Annotated[list[Label], Field(max_length=MAX_NAMESPACE_DEPTH)]
TtlSeconds = Annotated[
    float | None,
    Field(gt=0, le=MAX_TTL_SECONDS, allow_inf_nan=False),
]


class GetOperation(WireModel):
    op: Literal["get"] = "get"
    namespace: ItemNamespace
    key: Key
    refresh_ttl: bool = Field(default=True, description="Push the item's expiry out.")


class PutOperation(WireModel):
    op: Literal["put"] = "put"
    namespace: ItemNamespace
    key: Key
    value: dict[str, Any] | None = Field(description="The item's JSON object; null deletes it.")
    ttl_seconds: TtlSeconds = Field(
        default=None,
        description="The item expires this long after this write or a read that refreshes "
        "it. Null: never.",
    )


class SearchOperation(WireModel):
    op: Literal["search"] = "search"
    namespace_prefix: NamespacePath = Field(default_factory=list)
    filter: dict[str, Any] | None = Field(
        default=None,
        description="Each key's value equal, or an object of operators $eq $ne $gt $gte "
        "$lt $lte (the ordering ones compare numbers).",
    )
    query: Annotated[str, Field(max_length=MAX_QUERY_LENGTH), _text] | None = Field(
        default=None,
        description="Keywords: only items whose text holds every word (case-folded). "
        "Search by meaning is to come.",
    )
    limit: int = Field(default=10, ge=1, le=MAX_SEARCH_LIMIT)
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)
    refresh_ttl: bool = True


def _pattern_label(text: str) -> str:
    return text if text == "*" else _label(text)


PatternLabel = Annotated[
    str,
    Field(min_length=1, max_length=MAX_LABEL_LENGTH, description='A label, or "*" for any.'),
    AfterValidator(_pattern_label),
    _text,
]


class MatchCondition(WireModel):
    match_type: Literal["prefix", "suffix"]
    path: list[PatternLabel] = Field(max_length=MAX_NAMESPACE_DEPTH)


class ListNamespacesOperation(WireModel):
    op: Literal["listNamespaces"] = "listNamespaces"
    match_conditions: list[MatchCondition] = Field(default_factory=list, max_length=8)
    max_depth: int | None = Field(default=None, ge=1, le=MAX_NAMESPACE_DEPTH)
    limit: int = Field(default=100, ge=1, le=MAX_SEARCH_LIMIT)
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)


Operation = Annotated[
    GetOperation | PutOperation | SearchOperation | ListNamespacesOperation,
    Field(discriminator="op"),
]


class BatchRequest(WireModel):
    ops: list[Operation] = Field(max_length=MAX_OPS_PER_BATCH)


class PutItemRequest(WireModel):
    value: dict[str, Any]
    ttl_seconds: TtlSeconds = None


class Item(WireModel):
    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: float = Field(description="Epoch seconds.")
    updated_at: float
    expires_at: float | None = Field(description="Null: never expires.")


class ItemList(WireModel):
    items: list[Item]


class NamespaceList(WireModel):
    namespaces: list[list[str]]


class BatchResponse(WireModel):
    results: list[Item | list[Item] | list[list[str]] | None] = Field(
        description="One per operation, in order: get an item or null, put null, search a "
        "list of items, listNamespaces a list of namespaces."
    )
