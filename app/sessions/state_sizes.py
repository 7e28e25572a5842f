"""How big a scope's state is, as both stores measure it against
SESSION_STATE_MAX_STATE_BYTES, and the error when a write would pass it."""

from typing import Any

from ..core import json_codec
from ..core.errors import StateTooLarge
from .state import StateDict

# A scope's size counts, for each key, its bytes, its value's JSON bytes and
# these four (quotes, colon, comma): about the size of the scope as a JSON
# object. App and user keys keep theirs in a `size` column; a session's state
# is measured whole (on PostgreSQL as JSONB prints it: a space after each ":"
# and ",", so a few bytes more).
KEY_OVERHEAD_BYTES = 4


def state_too_large(scope: str, size: int, limit: int) -> StateTooLarge:
    return StateTooLarge(
        f"this write would make the {scope} state {size} bytes, above the limit of {limit} "
        "(SESSION_STATE_MAX_STATE_BYTES); nothing was written"
    )


def session_state_bytes(state: StateDict) -> int:
    return len(json_codec.dumps(state))


def entry_bytes(key: str, value: Any) -> int:
    """What one app or user key adds to its scope's size."""
    return len(key.encode()) + len(json_codec.dumps(value)) + KEY_OVERHEAD_BYTES


def entry_sizes(delta: StateDict) -> dict[str, int]:
    return {key: entry_bytes(key, value) for key, value in delta.items()}


def state_past_limit(
    limit: int, *, app: int | None = None, user: int | None = None, session: int | None = None
) -> StateTooLarge | None:
    """The error for the first scope, in this order, whose size after a write
    would pass `limit` (both stores name the same one); None when all fit. A
    size is None, or 0, where the write does not grow that scope."""
    for scope, size in (("app", app), ("user", user), ("session", session)):
        if size is not None and size > limit:
            return state_too_large(scope, size, limit)
    return None


def encoded_session_state(state: StateDict) -> tuple[str, int]:
    """The session state's JSON text as stored, and its session_state_bytes."""
    encoded = json_codec.dumps(state)
    return encoded.decode(), len(encoded)
