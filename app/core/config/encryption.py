"""Encryption at rest: the keys that seal what people said (events, state
values, memories, LangGraph values)."""

from typing import Literal

from pydantic import Field, field_validator

from ..encryption import KeyProvider, StaticKeyProvider, ValueCipher, parse_key_set
from .group import SettingGroup


class EncryptionSettings(SettingGroup):
    """The keys that encrypt stored content; the first encrypts new writes."""

    title = "Encryption at rest"

    encryption_keys: dict[str, str] = Field(
        default_factory=dict,
        description="JSON object: key id -> base64 of 32 random bytes (AES-256); the first "
        "encrypts new writes, every one listed can read. Empty: content is stored as sent.",
    )

    memory_search_when_encrypted: Literal["vectors-only", "off", "full"] = Field(
        default="vectors-only",
        description="With encryption keys set, what memory search may keep in plaintext: "
        "vectors-only (embeddings, no keyword index), off (neither: search finds nothing), "
        "full (keyword index of the words too). See docs/security.md.",
    )

    @field_validator("encryption_keys")
    @classmethod
    def _refuse_unusable_keys(cls, keys: dict[str, str]) -> dict[str, str]:
        parse_key_set(keys)  # its refusal names the key id and the rule, never the key
        return keys

    def key_provider(self) -> KeyProvider | None:
        keys = parse_key_set(self.encryption_keys)
        return StaticKeyProvider(keys) if keys else None

    def value_cipher(self) -> ValueCipher | None:
        """The cipher stored content goes through; None: encryption is off."""
        provider = self.key_provider()
        return ValueCipher(provider) if provider is not None else None
