"""Encryption at rest: the keys that seal what people said (events, state
values, memories, LangGraph values)."""

from functools import lru_cache
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
        _provider_of(tuple(keys.items()))  # its refusal names the key id and the rule
        return keys

    def key_provider(self) -> KeyProvider | None:
        """The keys, parsed once per process (on validation) however often
        the stores, the app and the commands ask."""
        return _provider_of(tuple(self.encryption_keys.items()))

    def value_cipher(self) -> ValueCipher | None:
        """The cipher stored content goes through; None: encryption is off."""
        provider = self.key_provider()
        return ValueCipher(provider) if provider is not None else None


# Keyed by the key set itself, not held on the settings: a settings copy
# with other keys (model_copy(update=...), which validates nothing) can
# never be handed the provider of the keys it was copied from.
@lru_cache(maxsize=8)
def _provider_of(keys: tuple[tuple[str, str], ...]) -> KeyProvider | None:
    parsed = parse_key_set(dict(keys))
    return StaticKeyProvider(parsed) if parsed else None
