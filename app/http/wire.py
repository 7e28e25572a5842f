"""What every feature's wire models share: camelCase on the wire, request
bodies that refuse a field they do not define, and text fields held to a
rule of app.core with the rule's own words."""

from collections.abc import Callable

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

UNKNOWN_FIELD_MESSAGE = "is not a field of this request"


def held_to(problem_of: Callable[[str], str | None], kind: str) -> AfterValidator:
    """A validator refusing a text in which `problem_of` finds a problem,
    with the rule's own words (the same the paths' checks give)."""

    def check(text: str) -> str:
        problem = problem_of(text)
        if problem is not None:
            raise PydanticCustomError(kind, problem)
        return text

    return AfterValidator(check)


class WireModel(BaseModel):
    """camelCase on the wire; snake_case accepted on input too."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class RequestBody(WireModel):
    """A request body: a field the API does not define is refused (422
    naming it, UNKNOWN_FIELD_MESSAGE), so that a misspelt one (`lables`) is
    never dropped."""

    model_config = ConfigDict(extra="forbid")
