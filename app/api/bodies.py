"""JSON request bodies parsed whatever their Content-Type (curl's `-d` sends
form encoding), held to the value rules (app.json_rules), with the same
400/422 problems as everywhere else."""

import asyncio
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from .. import json_codec
from ..errors import BadRequest, FieldError, InvalidInput
from ..events import UNKNOWN_FIELD_MESSAGE
from ..json_rules import depth_message, find_unstorable
from ..limits import OFFLOAD_BODY_BYTES, Limits
from .examples import media_examples

ModelT = TypeVar("ModelT", bound=BaseModel)


def limits_of(request: Request) -> Limits:
    limits: Limits = request.app.state.limits
    return limits


async def read_json(request: Request) -> Any:
    """The parsed body; None when the body is empty."""
    return await decode_json(await request.body(), limits_of(request))


async def decode_json(raw: bytes, limits: Limits) -> Any:
    """`parse_json`, off the event loop for large bodies: parsing and checking
    megabytes would hold every other request for tens of milliseconds."""
    if len(raw) > OFFLOAD_BODY_BYTES:
        return await asyncio.to_thread(parse_json, raw, limits)
    return parse_json(raw, limits)


def parse_json(raw: bytes, limits: Limits) -> Any:
    """`raw` parsed and its values checked; None when it is empty."""
    if not raw.strip():
        return None
    try:
        document = json_codec.loads(raw)
    except json_codec.TooDeep:
        raise InvalidInput([FieldError(["body"], depth_message(limits.max_json_depth))]) from None
    except json_codec.InvalidJSON:
        raise BadRequest("the body is not valid JSON") from None
    problem = find_unstorable(document, limits.max_json_depth)
    if problem is not None:
        raise InvalidInput([problem])
    return document


def validate_body(model: type[ModelT], document: Any) -> ModelT:
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise InvalidInput(
            [
                FieldError(
                    ["body", *item["loc"]],
                    UNKNOWN_FIELD_MESSAGE if item["type"] == "extra_forbidden" else item["msg"],
                )
                for item in error.errors()
            ]
        ) from None


def documented_body(
    model: type[BaseModel],
    *,
    required: bool,
    example: dict[str, Any] | None = None,
    labelled_example: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """openapi_extra describing a JSON body of `model`, with the example (one
    of `examples.py`'s) that Swagger UI's "Try it out" starts from."""
    schema = _inlined(model.model_json_schema(by_alias=True, mode="validation"))
    media: dict[str, Any] = {"schema": schema}
    if example is not None:
        media["examples"] = media_examples(example, labelled_example)
    return {"requestBody": {"required": required, "content": {"application/json": media}}}


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its nested models written in place: pydantic refers to
    them as "#/$defs/...", which means nothing inside an OpenAPI document
    (ReDoc stops rendering on it). None of these models is recursive."""
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            reference = node.get("$ref")
            if isinstance(reference, str) and reference.startswith("#/$defs/"):
                return resolve(definitions[reference.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    inlined: dict[str, Any] = resolve(schema)
    return inlined
