"""The key set (JWKS) that signs end-user tokens, read from a file or a URL
and kept in memory.

It is read again when a token names a key id it lacks (the identity provider
rotated its keys), at most once per `min_refresh_seconds` so that tokens with
made-up key ids cannot make this service hammer the provider, and once it is
older than MAX_AGE_SECONDS (a key the provider withdrew stops working). A
failed read keeps the keys held: the provider being away for a minute does
not log everyone out. Only https URLs are fetched, or http on a loopback
address (a sidecar on the same host); redirects are not followed."""

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from jwt import PyJWK
from jwt.exceptions import PyJWTError

from .errors import InvalidToken, TokenKeysUnavailable

MAX_AGE_SECONDS = 3600.0
FETCH_TIMEOUT_SECONDS = 5.0
MAX_JWKS_BYTES = 1024 * 1024
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})

logger = logging.getLogger("session_state")


class InvalidJwks(ValueError):
    """A JWKS location or document that cannot be used; the message says why."""


def _is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def check_jwks_location(location: str) -> None:
    """Refuses a URL that is neither https nor http on loopback, and a file
    that cannot be read as a JWKS (a URL is read at the first token)."""
    if _is_url(location):
        parts = urlsplit(location)
        if not parts.hostname:
            raise InvalidJwks(f"{location!r} has no host")
        if parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
            raise InvalidJwks(
                "the JWKS URL must be https (http only on 127.0.0.1, ::1 or localhost): "
                "keys fetched in the clear could be swapped on the way"
            )
        return
    parse_jwks(_read_file(Path(location)))


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise InvalidJwks(f"cannot read the JWKS file {path}: {error.strerror}") from None


@dataclass(frozen=True)
class SigningKey:
    """A key of the set: the public key, and the one algorithm it is for
    when the JWKS names one (`alg`)."""

    key: Any
    algorithm: str | None


def parse_jwks(document: bytes) -> dict[str | None, SigningKey]:
    """The signing keys of a JWKS by key id (None for a key without one);
    keys for encryption (`use: enc`) and of types this cannot use are left out."""
    try:
        loaded = json.loads(document)
    except ValueError:
        raise InvalidJwks("the JWKS is not JSON") from None
    if not isinstance(loaded, dict) or not isinstance(loaded.get("keys"), list):
        raise InvalidJwks('the JWKS must be a JSON object with a "keys" array')
    keys: dict[str | None, SigningKey] = {}
    for jwk in loaded["keys"]:
        if not isinstance(jwk, dict) or jwk.get("use") == "enc":
            continue
        key_id, algorithm = jwk.get("kid"), jwk.get("alg")
        if not isinstance(key_id, str | None) or not isinstance(algorithm, str | None):
            continue
        try:
            parsed = PyJWK(jwk)
        except (PyJWTError, ValueError, TypeError):
            continue
        keys[key_id] = SigningKey(parsed.key, algorithm)
    if not keys:
        raise InvalidJwks("the JWKS holds no usable signing key")
    return keys


class JwksKeys:
    """The keys held, and when to read them again."""

    def __init__(
        self,
        location: str,
        min_refresh_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_jwks_location(location)
        self.location = location
        self.min_refresh_seconds = min_refresh_seconds
        self.clock = clock
        self._keys: dict[str | None, SigningKey] | None = None
        self._read_at = 0.0  # the last successful read
        self._tried_at: float | None = None  # the last attempt, successful or not
        self._lock = asyncio.Lock()

    async def key_for(self, key_id: str | None) -> SigningKey:
        """The key a token names (or the only key, for a token naming none).
        InvalidToken for a key the set lacks even once read again;
        TokenKeysUnavailable when the set was never read."""
        key = self._lookup(key_id)
        if key is not None and self.clock() - self._read_at < MAX_AGE_SECONDS:
            return key
        # Without a key, the lock is taken even when no read is due: a read
        # under way (the first one, say) is waited for, not answered 503.
        if key is None or self._may_read_again():
            async with self._lock:
                if self._may_read_again():
                    await self._read()
            key = self._lookup(key_id)
        if key is not None:
            return key
        if self._keys is None:
            raise TokenKeysUnavailable(
                "the keys that check tokens (SESSION_STATE_JWT_JWKS) could not be read; "
                "try again shortly"
            )
        if key_id is None:
            raise InvalidToken(
                "unknown key", "it names no key id (kid) and the JWKS holds several keys"
            )
        raise InvalidToken("unknown key", "its key id (kid) is not in the JWKS")

    def _lookup(self, key_id: str | None) -> SigningKey | None:
        if self._keys is None:
            return None
        if key_id is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(key_id)

    def _may_read_again(self) -> bool:
        return self._tried_at is None or self.clock() - self._tried_at >= self.min_refresh_seconds

    async def _read(self) -> None:
        self._tried_at = self.clock()
        try:
            document = await self._fetch()
            keys = parse_jwks(document)
        except (InvalidJwks, httpx.HTTPError, OSError) as error:
            # The keys held stay in use.
            logger.warning("end-user tokens: cannot read the JWKS: %s", error or type(error))
            return
        self._keys = keys
        self._read_at = self.clock()

    async def _fetch(self) -> bytes:
        if not _is_url(self.location):
            return await asyncio.to_thread(_read_file, Path(self.location))
        async with (
            httpx.AsyncClient(timeout=FETCH_TIMEOUT_SECONDS, follow_redirects=False) as client,
            client.stream("GET", self.location, headers={"Accept": "application/json"}) as answer,
        ):
            answer.raise_for_status()
            body = bytearray()
            async for chunk in answer.aiter_bytes():
                body += chunk
                if len(body) > MAX_JWKS_BYTES:
                    raise InvalidJwks(f"the JWKS is larger than {MAX_JWKS_BYTES} bytes")
            return bytes(body)
