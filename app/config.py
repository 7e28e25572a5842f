"""Settings, read from environment variables prefixed with ``SESSION_STATE_``."""

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./session_state.db"
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
SUPPORTED_DRIVERS = ("sqlite+aiosqlite", "postgresql+asyncpg")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SESSION_STATE_", extra="ignore")

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="SQLAlchemy URL: sqlite+aiosqlite:///file.db or postgresql+asyncpg://...",
    )
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    workers: int = Field(default=1, ge=1)
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1024)
    db_pool_size: int = Field(default=10, ge=1)
    db_max_overflow: int = Field(default=10, ge=0)
    db_timeout_seconds: float = Field(
        default=5.0,
        gt=0,
        description="Bounds connecting, waiting for a pooled connection and every statement.",
    )
    log_level: str = "info"
    log_format: Literal["json", "text"] = "json"
    api_keys: dict[str, list[str]] = Field(
        default_factory=dict,
        description='JSON object: API key -> app names it may use, ["*"] for all apps.',
    )
    api_keys_file: Path | None = Field(
        default=None, description="A JSON file of the same shape as api_keys, merged with it."
    )

    @field_validator("database_url")
    @classmethod
    def _refuse_unsupported_driver(cls, url: str) -> str:
        # A synchronous driver would block the event loop; say so at start-up.
        if not url.startswith(tuple(f"{driver}:" for driver in SUPPORTED_DRIVERS)):
            raise ValueError(
                "database_url must start with one of "
                + ", ".join(f"'{driver}://'" for driver in SUPPORTED_DRIVERS)
            )
        return url

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


@lru_cache
def get_settings() -> Settings:
    return Settings()
