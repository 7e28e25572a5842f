"""When idle sessions expire, and how the sweeper deletes them."""

from typing import Annotated, Literal

from pydantic import Field

from .group import SettingGroup

# The longest expiry a request or a setting may give: far beyond any
# retention policy, and far inside what a float holds exactly to the ms.
MAX_TTL_SECONDS = 100 * 365 * 24 * 3600.0


class ExpirySettings(SettingGroup):
    """The idle timeout of new sessions, per app or for all, and the sweeper
    that deletes the expired ones."""

    title = "Session expiry"

    default_ttl_seconds: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TTL_SECONDS,
        description="Idle timeout of a session created without ttlSeconds or expireTime "
        "(unset: such sessions never expire).",
    )
    app_ttl_seconds: dict[str, Annotated[float, Field(gt=0, le=MAX_TTL_SECONDS)]] = Field(
        default_factory=dict,
        description="JSON object: app name -> idle timeout of its new sessions, overriding "
        "default_ttl_seconds.",
    )
    sweep_interval_seconds: float = Field(
        default=60.0,
        ge=0,
        description="How often `serve` deletes expired sessions (0: never; run "
        "`session-state sweep` from cron instead).",
    )
    expired_session_memories: Literal["keep", "delete"] = Field(
        default="keep",
        description="What the sweeper does with the memories taken from an expired session: "
        "keep them (they are long-term) or delete them with it.",
    )
