"""Encryption at rest of LangGraph's values (app.core.encryption): how a
checkpoint's serialized bytes, a channel's value, a pending write's value and
a store item's value are stored when SESSION_STATE_ENCRYPTION_KEYS is set, and
read back whether they were stored sealed or not.

- A serialized value (type tag, bytes) is sealed as its bytes, and its type
  tag is stored with `SEALED_TYPE_PREFIX` before it. The tag, not the bytes,
  says a value is sealed: a serializer's bytes are arbitrary and could begin
  like an envelope, a tag cannot begin with the prefix (a control
  character; such a tag is refused from every writer). Values written before
  encryption was on are read as they are, and `reencrypt` seals them.
- A store item's value, always a JSON object as sent, is stored sealed as
  one JSON string (`ValueCipher.seal_text`): an object and a string cannot be
  mistaken. Its keyword text is sealed too (the prefix begins with a control
  character, which normalized text never holds), so keyword queries on sealed
  items run on opened texts (app.langgraph.store.item_sql).

What stays plaintext (docs/security.md): identifiers, namespaces, keys,
channel names and versions, task ids and paths, type tags, checkpoint
metadata (list filters run on it in SQL) and timestamps."""

from typing import Any

from ..core import json_codec
from ..core.encryption import (
    DamagedCiphertext,
    EncryptionKeyMissing,
    ValueCipher,
    is_sealed_text,
)
from ..core.errors import FieldError, InvalidInput

SEALED_TYPE_PREFIX = "\x01ss1:"

CHECKPOINT = b"langgraph-checkpoint"
CHANNEL_VALUE = b"langgraph-value"
WRITE = b"langgraph-write"
STORE_ITEM = b"langgraph-store-item"
STORE_TEXT = b"langgraph-store-text"


def refuse_sealed_type(type_tag: str) -> None:
    """A type tag may not begin as a sealed one does, whether or not this
    server encrypts: a value stored under it would read as sealed."""
    if type_tag.startswith(SEALED_TYPE_PREFIX):
        raise InvalidInput(
            [FieldError(["body", "type"], "a type tag may not begin with the character U+0001")]
        )


def _opened(cipher: ValueCipher | None, sealed: bytes, purpose: bytes) -> bytes:
    """The value; EncryptionKeyMissing or DamagedCiphertext (500s naming the
    key id) when it cannot be opened."""
    if cipher is None:
        raise EncryptionKeyMissing(ValueCipher.key_id_of(sealed))
    return cipher.open(sealed, purpose)


class Sealing:
    """Seals what is written and opens what is read, with `cipher`; None:
    encryption is off, values are written as sent (sealed ones are still
    recognized, and fail clearly)."""

    def __init__(self, cipher: ValueCipher | None) -> None:
        self.cipher = cipher

    @property
    def on(self) -> bool:
        return self.cipher is not None

    # -- serialized values (checkpoints, channel values, writes) -------------

    def seal_typed(
        self, type_tag: str, data: bytes | None, purpose: bytes
    ) -> tuple[str, bytes | None]:
        """(type tag, bytes) as stored. A value without bytes ("empty") has
        nothing to seal."""
        refuse_sealed_type(type_tag)
        if self.cipher is None or data is None:
            return type_tag, data
        return SEALED_TYPE_PREFIX + type_tag, self.cipher.seal(data, purpose)

    def open_typed(
        self, type_tag: str, data: bytes | None, purpose: bytes
    ) -> tuple[str, bytes | None]:
        """(type tag, bytes) as written, from a stored pair sealed or not."""
        if data is None or not type_tag.startswith(SEALED_TYPE_PREFIX):
            return type_tag, data
        return type_tag[len(SEALED_TYPE_PREFIX) :], _opened(self.cipher, data, purpose)

    def is_current_typed(self, type_tag: str, data: bytes | None) -> bool:
        """Stored as this server would store it now: sealed under the current
        key (nothing to do for `reencrypt`)."""
        if self.cipher is None or data is None:
            return True
        if not type_tag.startswith(SEALED_TYPE_PREFIX):
            return False
        return _key_id(data) == self.cipher.current_key_id

    # -- store items ---------------------------------------------------------

    def seal_item(self, value: dict[str, Any]) -> dict[str, Any] | str:
        if self.cipher is None:
            return value
        return self.cipher.seal_text(json_codec.dumps_text(value), STORE_ITEM)

    def open_item(self, stored: Any) -> dict[str, Any]:
        if not is_sealed_text(stored):
            value: dict[str, Any] = stored
            return value
        if self.cipher is None:
            raise EncryptionKeyMissing(ValueCipher.key_id_of(stored))
        opened: dict[str, Any] = json_codec.loads(self.cipher.open_text(stored, STORE_ITEM))
        return opened

    def seal_text(self, text: str) -> str:
        """A store item's keyword text; an empty one tells nothing."""
        if self.cipher is None or not text:
            return text
        return self.cipher.seal_text(text, STORE_TEXT)

    def open_text(self, stored: str) -> str:
        if not is_sealed_text(stored):
            return stored
        if self.cipher is None:
            raise EncryptionKeyMissing(ValueCipher.key_id_of(stored))
        return self.cipher.open_text(stored, STORE_TEXT)

    def is_current_text(self, stored: str) -> bool:
        if self.cipher is None or not stored:
            return True
        return is_sealed_text(stored) and _key_id(stored) == self.cipher.current_key_id

    def is_current_item(self, stored: Any) -> bool:
        if self.cipher is None:
            return True
        if not is_sealed_text(stored):
            return False
        return _key_id(stored) == self.cipher.current_key_id


def _key_id(sealed: bytes | str) -> str | None:
    try:
        return ValueCipher.key_id_of(sealed)
    except DamagedCiphertext:
        return None


PLAIN = Sealing(None)
