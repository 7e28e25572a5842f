"""Encryption at rest: AES-256-GCM, envelope style, behind a key provider.

`keys.py` holds the key provider protocol and the one built from settings;
`envelope.py` the sealed format and the cipher that seals and opens values;
`errors.py` what a missing key or a damaged value raises."""

from .envelope import ENVELOPE_TEXT_PREFIX, ValueCipher, is_sealed_text
from .errors import DamagedCiphertext, EncryptionKeyMissing
from .keys import KeyProvider, StaticKeyProvider, parse_key_set

__all__ = [
    "ENVELOPE_TEXT_PREFIX",
    "DamagedCiphertext",
    "EncryptionKeyMissing",
    "KeyProvider",
    "StaticKeyProvider",
    "ValueCipher",
    "is_sealed_text",
    "parse_key_set",
]
