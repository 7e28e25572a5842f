"""How large and deep what a request sends, what is stored and what a response
carries may be (app.core.limits holds the defaults and ceilings)."""

from typing import Self

from pydantic import Field, model_validator

from ..limits import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_JSON_DEPTH,
    DEFAULT_MAX_KEY_LENGTH,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_STATE_BYTES,
    DEFAULT_MAX_STORE_SCAN_ROWS,
    MAX_JSON_DEPTH_CEILING,
    MAX_KEY_LENGTH_CEILING,
)
from .group import SettingGroup

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
# Room in a response for everything but events and state (ids, field names).
RESPONSE_OVERHEAD_BYTES = 64 * 1024


class RequestLimitSettings(SettingGroup):
    """Request bodies, state keys, a scope's state, an event and a response."""

    title = "Limits"

    max_body_bytes: int = Field(
        default=DEFAULT_MAX_BODY_BYTES,
        ge=1024,
        description="Larger request bodies are refused (413 payload_too_large).",
    )
    max_json_depth: int = Field(
        default=DEFAULT_MAX_JSON_DEPTH,
        ge=4,
        le=MAX_JSON_DEPTH_CEILING,
        description="Deepest nesting of arrays and objects in a request body.",
    )
    max_key_length: int = Field(
        default=DEFAULT_MAX_KEY_LENGTH,
        ge=1,
        le=MAX_KEY_LENGTH_CEILING,
        description="Longest state key, in characters, prefix included.",
    )
    max_state_bytes: int = Field(
        default=DEFAULT_MAX_STATE_BYTES,
        ge=1024,
        description="Largest serialized state of one scope (an app's, a user's, a session's).",
    )
    max_event_bytes: int = Field(
        default=DEFAULT_MAX_EVENT_BYTES, ge=1024, description="Largest stored event (its JSON)."
    )
    max_response_bytes: int = Field(
        default=DEFAULT_MAX_RESPONSE_BYTES,
        ge=64 * 1024,
        description="Largest session read, event page or session page.",
    )
    max_store_scan_rows: int = Field(
        default=DEFAULT_MAX_STORE_SCAN_ROWS,
        ge=100,
        description="With encryption at rest on: most stored items one request's LangGraph "
        "store searches with a filter or a query may open and read (400 "
        "store_search_too_broad past it).",
    )

    @model_validator(mode="after")
    def _responses_hold_one_of_everything(self) -> Self:
        # A response must always be able to carry one event and one session's
        # merged state (three scopes), or something stored could never be read.
        needed = self.max_event_bytes + 3 * self.max_state_bytes + RESPONSE_OVERHEAD_BYTES
        if self.max_response_bytes < needed:
            raise ValueError(
                f"SESSION_STATE_MAX_RESPONSE_BYTES ({self.max_response_bytes}) must be at least "
                f"SESSION_STATE_MAX_EVENT_BYTES + 3 x SESSION_STATE_MAX_STATE_BYTES "
                f"+ {RESPONSE_OVERHEAD_BYTES} ({needed})"
            )
        return self
