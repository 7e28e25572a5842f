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
    """Whether `bytes` sit anywhere in `value`'s containers (keys too).
    Walked with a stack and each container once, so that a deep or
    circular value ends here and gets pydantic's own error when sent."""
    pending, seen = [value], set()
    while pending:
        item = pending.pop()
        if isinstance(item, bytes | bytearray):
            return True
        if not isinstance(item, dict | list | tuple | set | frozenset) or id(item) in seen:
            continue
        # Only the value's own objects go on the stack (no temporaries), so
        # an id seen stays that object's while the walk lasts.
        seen.add(id(item))
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        else:
            pending.extend(item)
    return False


def stored_state(state: dict[str, Any]) -> dict[str, Any]:
    """`state` as ADK's persistent services store it."""
    return make_json_safe_state(state)
