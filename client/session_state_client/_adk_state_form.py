"""State values in the form ADK's persistent session services store them
(DatabaseSessionService's state tables, VertexAiSessionService's events):
UTF-8 `bytes` as text, other bytes as standard base64, a value JSON cannot
hold as its repr with ADK's warning. The server derives a session's state
from the event it stores, so the adapter sends the state delta in that
form; sent as pydantic dumps an Event, bytes would read back as URL-safe
base64."""

from typing import Any

from google.adk.sessions._session_util import make_json_safe_state


def holds_bytes(value: Any) -> bool:
    """Whether `bytes` sit anywhere in `value`'s containers (keys too)."""
    if isinstance(value, bytes | bytearray):
        return True
    if isinstance(value, dict):
        return any(holds_bytes(key) or holds_bytes(item) for key, item in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return any(holds_bytes(item) for item in value)
    return False


def stored_state(state: dict[str, Any]) -> dict[str, Any]:
    """`state` as ADK's persistent services store it."""
    return make_json_safe_state(state)
