"""Key encryption keys (KEKs) and who holds them.

A `KeyProvider` wraps and unwraps data keys under a named key; the first
key id encrypts new data keys, every listed one can unwrap. The provider
built from settings holds the keys in this process
(SESSION_STATE_ENCRYPTION_KEYS); a KMS stands in by implementing the same
three members, wrapping remotely (the cipher caches data keys, so a KMS
is called once per data key, not once per value)."""

import base64
import binascii
import json
import os
import re
from typing import Protocol

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .errors import DamagedCiphertext, EncryptionKeyMissing

KEY_BYTES = 32
NONCE_BYTES = 12
KEY_ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_WRAP_CONTEXT = b"session-state data key"


class KeyProvider(Protocol):
    @property
    def current_key_id(self) -> str:
        """The key id new data keys are wrapped under."""
        ...

    def wrap(self, data_key: bytes) -> tuple[str, bytes]:
        """The current key's id and the data key sealed under it."""
        ...

    def unwrap(self, key_id: str, wrapped: bytes) -> bytes:
        """The data key; `EncryptionKeyMissing` for a key id it does not hold."""
        ...


def parse_key_set(raw: str | dict[str, str]) -> dict[str, bytes]:
    """SESSION_STATE_ENCRYPTION_KEYS: a JSON object of key id to the base64 of
    32 random bytes, the first the one that encrypts. Refusals name the key
    id and the rule, never the key."""
    document = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(document, dict):
        raise ValueError("encryption keys must be a JSON object of key id to base64 key")
    keys: dict[str, bytes] = {}
    for key_id, encoded in document.items():
        if not isinstance(key_id, str) or not KEY_ID_PATTERN.match(key_id):
            raise ValueError(
                "an encryption key id must be 1 to 64 letters, digits, '.', '_' or '-'"
            )
        if not isinstance(encoded, str):
            raise ValueError(f"encryption key {key_id!r} must be a base64 string")
        try:
            key = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"encryption key {key_id!r} is not valid base64") from None
        if len(key) != KEY_BYTES:
            raise ValueError(
                f"encryption key {key_id!r} must be {KEY_BYTES} bytes (AES-256), "
                f"not {len(key)}: make one with `openssl rand -base64 32`"
            )
        keys[key_id] = key
    return keys


class StaticKeyProvider:
    """Keys held in this process, from settings."""

    def __init__(self, keys: dict[str, bytes]) -> None:
        if not keys:
            raise ValueError("a key provider needs at least one key")
        self._keys = {key_id: AESGCM(key) for key_id, key in keys.items()}
        self._current = next(iter(keys))

    @property
    def current_key_id(self) -> str:
        return self._current

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(self._keys)

    def wrap(self, data_key: bytes) -> tuple[str, bytes]:
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._keys[self._current].encrypt(nonce, data_key, _WRAP_CONTEXT)
        return self._current, nonce + sealed

    def unwrap(self, key_id: str, wrapped: bytes) -> bytes:
        key = self._keys.get(key_id)
        if key is None:
            raise EncryptionKeyMissing(key_id)
        try:
            return key.decrypt(wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:], _WRAP_CONTEXT)
        except Exception:
            raise DamagedCiphertext(key_id, "its data key does not open under that key") from None
