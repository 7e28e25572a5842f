"""The data every target gets: the same events, deltas and sessions."""

import itertools
import time
from typing import Any

TEXT = "The flight to Lisbon leaves at 09:40 from gate B12; your seat is 14C. " * 3
_counter = itertools.count()


def event_document(
    *, author: str, delta: dict[str, Any], event_id: str | None = None
) -> dict[str, Any]:
    """An ADK Event as JSON (camelCase), the shape every target stores."""
    return {
        "id": event_id or f"ev-{next(_counter)}-{time.monotonic_ns()}",
        "invocationId": "inv-bench",
        "author": author,
        "timestamp": time.time(),
        "content": {"role": "model", "parts": [{"text": TEXT}]},
        "actions": {"stateDelta": delta},
    }


def spread_delta(session_id: str, index: int) -> dict[str, Any]:
    """Keys distinct per session, in every scope, as real agents mostly write."""
    return {
        f"step_{session_id}": index,
        f"user:last_step_{session_id}": index,
        f"app:last_step_{session_id}": index,
        "temp:scratch": index,
    }


def hot_delta(session_id: str, index: int) -> dict[str, Any]:
    """Every event writes the same app: key: the worst case for a shared row."""
    return {
        f"step_{session_id}": index,
        f"user:last_step_{session_id}": index,
        "app:hot_counter": index,
        "temp:scratch": index,
    }
