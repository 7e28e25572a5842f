"""Encryption keys made at test time, as SESSION_STATE_ENCRYPTION_KEYS holds
them, and the cipher a server builds from them."""

import base64
import json
import os

from session_state.core.config import Settings
from session_state.core.encryption import ValueCipher


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode("ascii")


def key_set(*key_ids: str) -> dict[str, str]:
    """Fresh keys under those ids, the first the one that encrypts."""
    return {key_id: new_key() for key_id in key_ids}


def keys_setting(keys: dict[str, str]) -> str:
    """The keys as the environment variable holds them."""
    return json.dumps(keys)


def cipher_of(keys: dict[str, str]) -> ValueCipher:
    cipher = Settings(encryption_keys=keys).value_cipher()
    assert cipher is not None
    return cipher
