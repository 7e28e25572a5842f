"""JSON request bodies parsed whatever their Content-Type (curl's `-d` sends
form encoding), held to the value rules (app.core.json_rules), with the same
400/422 problems as everywhere else."""

import asyncio
import functools
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from ..core import json_codec
from ..core.errors import BadRequest, FieldError, InvalidInput
from ..core.json_rules import count_keys_if_storable, depth_message, find_unstorable, printable
from ..core.limits import OFFLOAD_BODY_BYTES, Limits
from .examples import README, media_examples
from .wire import UNKNOWN_FIELD_MESSAGE, WireModel

ModelT = TypeVar("ModelT", bound=BaseModel)
_UNSTORABLE = FieldError(["body"], "a value cannot be stored")


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
    except json_codec.InvalidJSON as error:
        raise BadRequest(not_json_message(error)) from None
    keys = count_keys_if_storable(document, limits.max_json_depth)
    if keys is None:
        # The count stopped at a value that breaks the rule: name it.
        raise InvalidInput([find_unstorable(document, limits.max_json_depth) or _UNSTORABLE])
    repeated = json_codec.repeated_key(raw, keys)
    if repeated is not None:
        # Last-wins would store what the client may not have meant, silently.
        shown = printable(repeated if len(repeated) <= 100 else repeated[:100] + "...")
        raise BadRequest(
            f"an object in the body repeats the key {json_codec.dumps_text(shown)}: "
            "send each key once"
        )
    return document


def not_json_message(error: json_codec.InvalidJSON) -> str:
    if error.line is None:
        return f"the body is not valid JSON: {error.reason}"
    return f"the body is not valid JSON: {error.reason} (line {error.line}, column {error.column})"


def validate_body(model: type[ModelT], document: Any) -> ModelT:
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise InvalidInput(field_errors(error, "body")) from None


# pydantic's messages for these name the model class ("... or instance of
# CreateSessionRequest"): a client knows no such names.
_OBJECT_EXPECTED = frozenset({"model_type", "model_attributes_type", "dict_type"})
OBJECT_EXPECTED_MESSAGE = "must be a JSON object"


def field_errors(error: ValidationError, where: str) -> list[FieldError]:
    """pydantic's errors in the API's words, located under `where`, with no
    internal class name in a message or a location."""
    classes = {error.title, *_model_names()}
    errors = []
    for item in error.errors():
        if item["type"] == "extra_forbidden":
            message = UNKNOWN_FIELD_MESSAGE
        elif item["type"] in _OBJECT_EXPECTED:
            message = OBJECT_EXPECTED_MESSAGE
        else:
            message = item["msg"]
        # A union's member is named in the location ("GetOperation"): dropped.
        location = [part for part in item["loc"] if part not in classes]
        errors.append(FieldError([where, *location], message))
    return errors


@functools.cache
def _model_names() -> frozenset[str]:
    names: set[str] = set()
    pending: list[type[WireModel]] = [WireModel]
    while pending:
        for subclass in pending.pop().__subclasses__():
            names.add(subclass.__name__)
            pending.append(subclass)
    return frozenset(names)


def documented_body(
    model: type[BaseModel],
    *,
    required: bool,
    example: dict[str, Any] | None = None,
    labelled_example: dict[str, Any] | None = None,
    example_summary: str = README,
) -> dict[str, Any]:
    """openapi_extra describing a JSON body of `model`, with the example (one
    of `examples.py`'s) that Swagger UI's "Try it out" starts from."""
    schema = _inlined(model.model_json_schema(by_alias=True, mode="validation"))
    media: dict[str, Any] = {"schema": schema}
    if example is not None:
        media["examples"] = media_examples(example, labelled_example, summary=example_summary)
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
