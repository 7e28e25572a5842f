"""The limits every request is held to, in one place: validation, errors,
the README and the OpenAPI description read them from here."""

from dataclasses import dataclass

from app.config import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_JSON_DEPTH,
    DEFAULT_MAX_KEY_LENGTH,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_STATE_BYTES,
    Settings,
)

# Event timestamps are epoch seconds from 1970-01-01 to 9999-12-31 (what
# every datetime library can show, memory entries included).
MIN_TIMESTAMP = 0.0
MAX_TIMESTAMP = 253402300799.0
# Integers a query or header may carry: what a PostgreSQL bigint holds.
MAX_INT64 = 2**63 - 1
# Bodies above this are parsed and checked off the event loop.
OFFLOAD_BODY_BYTES = 256 * 1024


@dataclass(frozen=True)
class Limits:
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
    max_key_length: int = DEFAULT_MAX_KEY_LENGTH
    max_state_bytes: int = DEFAULT_MAX_STATE_BYTES
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES

    @classmethod
    def from_settings(cls, settings: Settings) -> "Limits":
        return cls(
            max_json_depth=settings.max_json_depth,
            max_key_length=settings.max_key_length,
            max_state_bytes=settings.max_state_bytes,
            max_event_bytes=settings.max_event_bytes,
            max_response_bytes=settings.max_response_bytes,
        )
