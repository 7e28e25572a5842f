"""Sealing and opening values: AES-256-GCM under a data key, the data key
wrapped by the key provider and carried in each sealed value (envelope
encryption).

A sealed value is, in bytes:
    b"SS1" | len(key id) | key id | len(wrapped) | wrapped data key | nonce | ciphertext+tag
so that any value names the key that opens it (a missing key is an error
naming it, and `reencrypt` finds what is not under the current key).

A data key seals many values: a process draws one, has it wrapped once (one
call to a KMS, when one stands behind the provider), and replaces it after
`DATA_KEY_USES` values, well inside AES-GCM's limit for random nonces.
Opened data keys are cached by their wrapped form.

`purpose` is bound to each value as GCM's associated data ("event",
"state", "memory", ...): a value cannot be read back as another kind. It is
not bound to its row, so that fork, export and import copy values as they
are; encryption at rest defends a stolen disk, dump or backup, not a writer
with access to the database.

Values kept in JSON (state values) are sealed into text: the prefix
`ENVELOPE_TEXT_PREFIX` then standard base64. The prefix begins with a
control character, and a plaintext state value that begins with it is
refused by the API, so sealed and plaintext values cannot be mistaken."""

import base64
import binascii
import os
import threading
from collections import OrderedDict

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .errors import DamagedCiphertext
from .keys import KEY_BYTES, NONCE_BYTES, KeyProvider

MAGIC = b"SS1"
ENVELOPE_TEXT_PREFIX = "\x01ss1:"
DATA_KEY_USES = 1 << 24
_OPENED_KEYS_KEPT = 4096


def is_sealed_text(value: object) -> bool:
    return isinstance(value, str) and value.startswith(ENVELOPE_TEXT_PREFIX)


def _is_sealed(value: bytes) -> bool:
    return value[: len(MAGIC)] == MAGIC


class _DataKey:
    def __init__(self, provider: KeyProvider) -> None:
        key = AESGCM.generate_key(bit_length=KEY_BYTES * 8)
        self.key_id, wrapped = provider.wrap(key)
        key_id = self.key_id.encode()
        self.header = MAGIC + bytes([len(key_id)]) + key_id + bytes([len(wrapped)]) + wrapped
        self.aead = AESGCM(key)
        self.uses = 0


class ValueCipher:
    def __init__(self, provider: KeyProvider) -> None:
        self.provider = provider
        self._lock = threading.Lock()
        self._data_key: _DataKey | None = None
        self._opened: OrderedDict[bytes, AESGCM] = OrderedDict()

    @property
    def current_key_id(self) -> str:
        return self.provider.current_key_id

    def seal(self, plaintext: bytes, purpose: bytes) -> bytes:
        data_key = self._current_data_key()
        nonce = os.urandom(NONCE_BYTES)
        return data_key.header + nonce + data_key.aead.encrypt(nonce, plaintext, purpose)

    def open(self, sealed: bytes, purpose: bytes) -> bytes:
        key_id, wrapped, body = _split(sealed)
        aead = self._opened_key(key_id, wrapped)
        try:
            return aead.decrypt(body[:NONCE_BYTES], body[NONCE_BYTES:], purpose)
        except Exception:
            raise DamagedCiphertext(key_id, "its contents do not authenticate") from None

    def seal_text(self, plaintext: str, purpose: bytes) -> str:
        sealed = self.seal(plaintext.encode(), purpose)
        return ENVELOPE_TEXT_PREFIX + base64.b64encode(sealed).decode("ascii")

    def open_text(self, sealed_text: str, purpose: bytes) -> str:
        return self.open(_text_bytes(sealed_text), purpose).decode()

    @staticmethod
    def key_id_of(sealed: bytes | str) -> str:
        """The id of the key a sealed value's data key is wrapped under."""
        raw = _text_bytes(sealed) if isinstance(sealed, str) else sealed
        return _split(raw)[0]

    def _current_data_key(self) -> _DataKey:
        with self._lock:
            data_key = self._data_key
            if (
                data_key is None
                or data_key.uses >= DATA_KEY_USES
                or data_key.key_id != self.provider.current_key_id
            ):
                data_key = self._data_key = _DataKey(self.provider)
            data_key.uses += 1
            return data_key

    def _opened_key(self, key_id: str, wrapped: bytes) -> AESGCM:
        with self._lock:
            aead = self._opened.get(wrapped)
            if aead is not None:
                self._opened.move_to_end(wrapped)
                return aead
        aead = AESGCM(self.provider.unwrap(key_id, wrapped))
        with self._lock:
            self._opened[wrapped] = aead
            if len(self._opened) > _OPENED_KEYS_KEPT:
                self._opened.popitem(last=False)
        return aead


def _text_bytes(sealed_text: str) -> bytes:
    if not sealed_text.startswith(ENVELOPE_TEXT_PREFIX):
        raise DamagedCiphertext(None, "it is not a sealed value")
    try:
        return base64.b64decode(sealed_text[len(ENVELOPE_TEXT_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise DamagedCiphertext(None, "it is not valid base64") from None


def _split(sealed: bytes) -> tuple[str, bytes, bytes]:
    """The key id, the wrapped data key and the nonce + ciphertext."""
    try:
        if not _is_sealed(sealed):
            raise ValueError("no envelope header")
        at = len(MAGIC)
        id_length = sealed[at]
        key_id = sealed[at + 1 : at + 1 + id_length].decode("ascii")
        at += 1 + id_length
        wrapped_length = sealed[at]
        wrapped = sealed[at + 1 : at + 1 + wrapped_length]
        body = sealed[at + 1 + wrapped_length :]
        if len(wrapped) != wrapped_length or len(body) < NONCE_BYTES + 16:
            raise ValueError("truncated")
    except (IndexError, UnicodeDecodeError, ValueError) as error:
        raise DamagedCiphertext(None, f"its envelope is malformed ({error})") from None
    return key_id, wrapped, body
