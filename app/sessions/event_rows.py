"""An event's values as a row of `events` (`tables.py`), written by
SQLite's append (`sqlite_append.py`) and by import on both backends
(`transfer_repository.py`)."""

from typing import Any

from .domain import NewEvent, SessionKey


def event_row_values(key: SessionKey, seq: int, event: NewEvent) -> dict[str, Any]:
    """The row of the session's event at `seq`, by column name."""
    return {
        "app_name": key.app_name,
        "user_id": key.user_id,
        "session_id": key.session_id,
        "seq": seq,
        "id": event.id,
        "invocation_id": event.invocation_id,
        "author": event.author,
        "timestamp": event.timestamp,
        "data": event.data,
    }
