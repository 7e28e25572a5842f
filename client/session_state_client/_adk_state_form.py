"""Whether a state value holds `bytes`, which ADK's persistent session
services store in a form of their own (ADK's `make_json_safe_state`: UTF-8
bytes as text, other bytes as standard base64). The server derives a
session's state from the event it stores, so the adapter sends such a
delta in that form; sent as pydantic dumps an Event, bytes would read back
as URL-safe base64."""

from typing import Any


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
