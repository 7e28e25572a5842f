"""JSON request bodies parsed whatever their Content-Type (curl's `-d` sends
form encoding), with the same 400/422 problems as everywhere else."""

from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from app import json_codec
from app.errors import BadRequest, FieldError, InvalidInput

ModelT = TypeVar("ModelT", bound=BaseModel)


async def read_json(request: Request) -> Any:
    """The parsed body; None when the body is empty."""
    return parse_json(await request.body())


def parse_json(raw: bytes) -> Any:
    """`raw` parsed; None when it is empty."""
    if not raw.strip():
        return None
    try:
        return json_codec.loads(raw)
    except json_codec.InvalidJSON:
        raise BadRequest("the body is not valid JSON") from None


def validate_body(model: type[ModelT], document: Any) -> ModelT:
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise InvalidInput(
            [FieldError(["body", *item["loc"]], item["msg"]) for item in error.errors()]
        ) from None


def documented_body(model: type[BaseModel], *, required: bool) -> dict[str, Any]:
    """openapi_extra describing a JSON body of `model`."""
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return {
        "requestBody": {
            "required": required,
            "content": {"application/json": {"schema": schema}},
        }
    }
