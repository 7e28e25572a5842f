"""What every group of settings shares: the environment variables' prefix and
how they are read."""

from typing import ClassVar

from pydantic_settings import BaseSettings, SettingsConfigDict

ENVIRONMENT_PREFIX = "SESSION_STATE_"


class SettingGroup(BaseSettings):
    """The base of each group of settings. A group holds no field of another,
    so that its own `model_fields` are the settings it shows."""

    # inf and nan are never a meaningful timeout, interval or size.
    model_config = SettingsConfigDict(
        env_prefix=ENVIRONMENT_PREFIX, extra="ignore", allow_inf_nan=False
    )

    # The heading of the group in `serve --help` and docs/configuration.md.
    title: ClassVar[str]


def split_comma_separated(value: object) -> object:
    """A variable's comma-separated names as a list; other values as they are."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value
