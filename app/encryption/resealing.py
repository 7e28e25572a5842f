"""What `session-state reencrypt` does to one stored value: a value sealed
under another key than the current one is opened and sealed again, a
plaintext one (stored before encryption was turned on) is sealed, one
already under the current key is left alone (None: unchanged). Values come
and go as the database's text of them (JSON for state), so that a write can
compare them with what was read."""

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..core import json_codec
from ..core.encryption import DamagedCiphertext, ValueCipher, is_sealed_text
from .sealing import EVENT, MEMORY, STATE

# "text": the column is the sealed text (an event's JSON, a memory's text);
# "value": a JSON value, sealed whole into a JSON string (app and user state);
# "state": a JSON object whose values are each sealed (a session's state).
ColumnKind = Literal["text", "value", "state"]


@dataclass(frozen=True)
class ContentTable:
    name: str
    keys: tuple[str, ...]
    columns: tuple[tuple[str, ColumnKind], ...]
    purpose: bytes


CONTENT_TABLES = (
    ContentTable(
        "events", ("app_name", "user_id", "session_id", "seq"), (("data", "text"),), EVENT
    ),
    ContentTable(
        "sessions",
        ("app_name", "user_id", "id"),
        (("state", "state"), ("initial_state", "state")),
        STATE,
    ),
    ContentTable("app_states", ("app_name", "key"), (("value", "value"),), STATE),
    ContentTable("user_states", ("app_name", "user_id", "key"), (("value", "value"),), STATE),
    ContentTable(
        "memories",
        ("id",),
        (("text", "text"), ("content", "text"), ("custom_metadata", "text")),
        MEMORY,
    ),
)


class Resealer:
    def __init__(self, cipher: ValueCipher) -> None:
        self.cipher = cipher
        self.current = cipher.current_key_id

    def column(self, kind: ColumnKind, stored: str | None, purpose: bytes) -> str | None:
        """The column's new text; None when it is None or needs nothing."""
        if stored is None:
            return None
        if kind == "text":
            return self._text(stored, purpose)
        if kind == "value":
            value = self._value(json_codec.loads(stored), purpose)
            return None if value is None else json.dumps(value)
        state = json_codec.loads(stored)
        if not isinstance(state, dict):
            return None
        changed = {key: self._value(value, purpose) for key, value in state.items()}
        if all(value is None for value in changed.values()):
            return None
        resealed = {key: state[key] if value is None else value for key, value in changed.items()}
        return json_codec.dumps(resealed).decode()

    def _text(self, stored: str, purpose: bytes) -> str | None:
        key_id = _key_id(stored)
        if key_id == self.current:
            return None
        plaintext = stored if key_id is None else self.cipher.open_text(stored, purpose)
        return self.cipher.seal_text(plaintext, purpose)

    def _value(self, value: Any, purpose: bytes) -> str | None:
        """A state value's new (sealed) form; None when it is under the current key."""
        if is_sealed_text(value):
            key_id = _key_id(value)
            if key_id == self.current:
                return None
            if key_id is not None:
                return self.cipher.seal_text(self.cipher.open_text(value, purpose), purpose)
        return self.cipher.seal_text(json_codec.dumps(value).decode(), purpose)


def _key_id(text: str) -> str | None:
    """The key a sealed text is under; None for plaintext (a memory's text
    that only starts like a sealed one is plaintext too)."""
    if not is_sealed_text(text):
        return None
    try:
        return ValueCipher.key_id_of(text)
    except DamagedCiphertext:
        return None


RowChange = Callable[[dict[str, Any]], dict[str, str] | None]


def row_change(resealer: Resealer, table: ContentTable) -> RowChange:
    """For a row as read (its columns' texts), the columns to write, or None."""

    def change(row: dict[str, Any]) -> dict[str, str] | None:
        new = {}
        for column, kind in table.columns:
            value = resealer.column(kind, row[column], table.purpose)
            if value is not None:
                new[column] = value
        return new or None

    return change
