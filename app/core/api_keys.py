"""API keys scoped to apps, sent as `Authorization: Bearer <key>`.

Keys are kept only as SHA-256 digests and every configured key is compared in
constant time on every request, so neither timing nor logs reveal a key.
"""

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .end_user_tokens import looks_like_token
from .errors import Forbidden, Unauthorized

ALL_APPS = "*"
MIN_KEY_LENGTH = 16


class InvalidKeyConfiguration(ValueError):
    pass


@dataclass(frozen=True)
class _Key:
    digest: bytes
    apps: frozenset[str] | None  # None: every app


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


class ApiKeys:
    def __init__(self, keys: Mapping[str, Sequence[str]]) -> None:
        self._keys: list[_Key] = []
        # With end-user tokens on, such a key would be checked as a token (app.main).
        self.some_key_looks_like_a_token = any(looks_like_token(key) for key in keys)
        for key, apps in keys.items():
            if len(key) < MIN_KEY_LENGTH:
                raise InvalidKeyConfiguration(
                    f"API keys must be at least {MIN_KEY_LENGTH} characters long"
                )
            if isinstance(apps, str) or not apps:
                raise InvalidKeyConfiguration(
                    'each API key needs a non-empty list of app names, or ["*"] for all apps'
                )
            allowed = None if ALL_APPS in apps else frozenset(apps)
            self._keys.append(_Key(_digest(key), allowed))

    @classmethod
    def from_settings(cls, inline: Mapping[str, Sequence[str]], file: Path | None) -> "ApiKeys":
        keys = dict(inline)
        if file is not None:
            try:
                loaded = json.loads(file.read_text())
            except (OSError, ValueError) as error:
                raise InvalidKeyConfiguration(
                    f"cannot read API keys file {file}: {error}"
                ) from None
            if not isinstance(loaded, dict):
                raise InvalidKeyConfiguration(f"{file} must hold a JSON object of key -> apps")
            keys.update(loaded)
        return cls(keys)

    @property
    def enabled(self) -> bool:
        return bool(self._keys)

    @property
    def count(self) -> int:
        return len(self._keys)

    def authorize(self, presented: str | None, app_name: str | None) -> None:
        """Raises Unauthorized or Forbidden unless the key may use the app."""
        if not self._keys:
            return
        match = self._match(presented)
        if match.apps is not None and app_name not in match.apps:
            raise Forbidden(f"the API key is not allowed for app {app_name!r}")

    def visible_apps(self, presented: str | None) -> frozenset[str] | None:
        """The apps the key may use (None: every app, or no keys configured);
        Unauthorized for a missing or wrong key."""
        if not self._keys:
            return None
        return self._match(presented).apps

    def _match(self, presented: str | None) -> _Key:
        if not presented:
            raise Unauthorized("an API key is required: Authorization: Bearer <key>")
        digest = _digest(presented)
        match: _Key | None = None
        for key in self._keys:  # no early exit: the time does not depend on which key
            if hmac.compare_digest(key.digest, digest):
                match = key
        if match is None:
            raise Unauthorized("the API key is not valid")
        return match
