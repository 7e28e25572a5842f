"""What the service logs, and in which form."""

from typing import Literal

from pydantic import Field, field_validator

from .group import SettingGroup


class LogSettings(SettingGroup):
    """The level and format of the logs on stderr (metrics need no setting:
    /metrics)."""

    title = "Logs"

    log_level: Literal["critical", "error", "warning", "info", "debug"] = Field(
        default="info", description="debug, info, warning, error or critical."
    )
    log_format: Literal["json", "text"] = Field(
        default="json", description="json (one object per line) or text."
    )

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower_case_level(cls, level: object) -> object:
        return level.lower() if isinstance(level, str) else level
