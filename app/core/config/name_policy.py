"""The one setting read before the others: which SESSION_STATE_ variables
that are no setting to let be (app.core.setting_names refuses the rest)."""

from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from .group import ENVIRONMENT_PREFIX, SettingGroup, split_comma_separated


class SettingNamePolicy(SettingGroup):
    """Variables with the prefix that are no setting but are set for something
    else, and so are not refused as misspelled settings."""

    title = "Setting names"

    allow_unknown_settings: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Names (comma-separated) of SESSION_STATE_ variables that are no setting "
        "but are set for something else, and so are not refused.",
    )

    @field_validator("allow_unknown_settings", mode="before")
    @classmethod
    def _split_names(cls, value: object) -> object:
        return split_comma_separated(value)

    @field_validator("allow_unknown_settings")
    @classmethod
    def _require_full_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name.upper().startswith(ENVIRONMENT_PREFIX):
                raise ValueError(
                    f"{name!r} is not a variable's full name: write {ENVIRONMENT_PREFIX}..."
                )
        return [name.upper() for name in names]
