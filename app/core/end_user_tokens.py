"""End-user tokens: a JWT from the deployment's identity provider that lets
its user, and only that user, reach their own data (docs/security.md, "End-user
tokens").

PyJWT checks the signature and the registered claims; this module chooses
what it is asked to check: the algorithm from an allow-list of asymmetric
ones only (so `none` and an HS256 token "signed" with the public key are
refused before any key is touched), the key by the token's `kid` from the
JWKS, `iss`, `aud`, `exp`, `nbf` with a small leeway, and the user claim.
Each refusal is an InvalidToken whose reason names what was wrong, never the
token itself."""

import re
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import jwt
from jwt import exceptions as jwt_errors

from .errors import Forbidden, InvalidToken
from .identifiers import name_problem
from .jwks import JwksKeys

# Asymmetric only: with a shared secret anyone who can check a token can make one.
ALLOWED_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
LEEWAY_SECONDS = 30
# Larger than any identity provider's token; a bigger bearer is not parsed.
MAX_TOKEN_CHARACTERS = 16 * 1024
ALL_APPS = "*"
# Three base64url parts (the third, the signature, empty for `alg: none`).
_JWT_SHAPE = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


def parse_algorithms(text: str) -> tuple[str, ...]:
    """The allow-list from its setting; ValueError naming a refused one."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise ValueError("name at least one algorithm")
    for name in names:
        if name not in ALLOWED_ALGORITHMS:
            raise ValueError(
                f"{name!r} is not an accepted token algorithm: use asymmetric ones "
                f"({', '.join(ALLOWED_ALGORITHMS)}); 'none' and HS* are never accepted"
            )
    return names


def looks_like_token(bearer: str) -> bool:
    """Whether a bearer value is a JWT (checked as a token) rather than an
    API key: three base64url parts separated by dots."""
    return _JWT_SHAPE.fullmatch(bearer) is not None


@dataclass(frozen=True)
class EndUser:
    """Who a valid token speaks for, and the apps it may use (None: all)."""

    user_id: str
    apps: frozenset[str] | None
    # The token's `exp` (epoch seconds): what outlives a request (a live
    # stream) ends there.
    expires_at: float | None = None

    def may_use(self, app_name: str) -> bool:
        return self.apps is None or app_name in self.apps


# The end user the request being served acts for (None: an API key or open
# mode); set by app.http.authentication around the request, read where a
# rule depends on whose the data is (app: state, threads, store namespaces).
_ACTING_END_USER: ContextVar[EndUser | None] = ContextVar("acting_end_user", default=None)


def acting_end_user() -> EndUser | None:
    return _ACTING_END_USER.get()


def acting_for(user: EndUser | None) -> Any:
    """Sets the acting end user; returns what `stop_acting` takes."""
    return _ACTING_END_USER.set(user)


def stop_acting(reset: Any) -> None:
    _ACTING_END_USER.reset(reset)


def refuse_other_users(user_ids: Sequence[str], what: str) -> None:
    """Forbidden when an end user acts and any of `user_ids` is not theirs."""
    user = acting_end_user()
    if user is not None and any(user_id != user.user_id for user_id in user_ids):
        raise Forbidden(f"an end-user token may only {what} of its own user")


def refuse_app_state_writes(app_keys: Mapping[str, Any]) -> None:
    """Forbidden when an end user acts and writes `app:` keys: the app's
    state is every user's."""
    if app_keys and acting_end_user() is not None:
        raise Forbidden(
            "an end-user token may not write app: state keys (they are shared by every "
            "user of the app); write them with an API key"
        )


_REASONS: tuple[tuple[type[Exception], str, str], ...] = (
    (jwt_errors.ExpiredSignatureError, "expired", "it has expired (exp)"),
    (jwt_errors.ImmatureSignatureError, "not yet valid", "it is not valid yet (nbf or iat)"),
    (jwt_errors.InvalidAudienceError, "wrong audience", "it is not meant for this service (aud)"),
    (jwt_errors.InvalidIssuerError, "wrong issuer", "it comes from another issuer (iss)"),
    (jwt_errors.InvalidSignatureError, "bad signature", "its signature does not verify"),
    (jwt_errors.InvalidAlgorithmError, "algorithm not allowed", "its algorithm is not accepted"),
    (jwt_errors.InvalidKeyError, "algorithm not allowed", "its algorithm does not fit its key"),
)


class EndUserTokens:
    """Checks end-user tokens against the settings (app.core.config.tokens)."""

    def __init__(
        self,
        keys: JwksKeys,
        *,
        issuer: str,
        audience: str,
        algorithms: Sequence[str],
        user_claim: str = "sub",
        apps_claim: str | None = None,
        apps: Sequence[str] = (),
    ) -> None:
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.algorithms = frozenset(algorithms)
        self.user_claim = user_claim
        self.apps_claim = apps_claim
        self.fixed_apps = None if ALL_APPS in apps or not apps else frozenset(apps)

    async def verify(self, token: str) -> EndUser:
        """The token's end user; InvalidToken (or TokenKeysUnavailable) if refused."""
        if len(token) > MAX_TOKEN_CHARACTERS:
            raise InvalidToken("malformed", f"it is longer than {MAX_TOKEN_CHARACTERS} characters")
        try:
            header = jwt.get_unverified_header(token)
        except jwt_errors.PyJWTError:
            raise InvalidToken("malformed", "its header is not a JWT header") from None
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in self.algorithms:
            raise InvalidToken(
                "algorithm not allowed",
                f"its algorithm is not one of {', '.join(sorted(self.algorithms))}",
            )
        key_id = header.get("kid")
        if key_id is not None and not isinstance(key_id, str):
            raise InvalidToken("malformed", "its key id (kid) is not a string")
        key = await self.keys.key_for(key_id)
        if key.algorithm not in (algorithm, None):
            raise InvalidToken("algorithm not allowed", "its algorithm is not its key's")
        claims = self._decode(token, key.key, algorithm)
        expires_at = claims.get("exp")
        return EndUser(
            self._user_of(claims),
            self._apps_of(claims),
            float(expires_at) if isinstance(expires_at, int | float) else None,
        )

    def _decode(self, token: str, key: Any, algorithm: str) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self.audience,
                issuer=self.issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud", self.user_claim]},
            )
        except jwt_errors.MissingRequiredClaimError as error:
            raise InvalidToken("missing claim", f"it lacks the claim {error.claim!r}") from None
        except jwt_errors.PyJWTError as error:
            for kind, reason, detail in _REASONS:
                if isinstance(error, kind):
                    raise InvalidToken(reason, detail) from None
            raise InvalidToken("malformed", "it cannot be decoded") from None
        except (ValueError, TypeError):
            # A key of a type the algorithm does not take, a claim of a wrong type.
            raise InvalidToken("malformed", "it cannot be checked with its key") from None
        return claims

    def _user_of(self, claims: Mapping[str, Any]) -> str:
        user = claims.get(self.user_claim)
        if not isinstance(user, str) or name_problem(user) is not None:
            raise InvalidToken(
                "bad user claim", f"its claim {self.user_claim!r} is not a valid user id"
            )
        return user

    def _apps_of(self, claims: Mapping[str, Any]) -> frozenset[str] | None:
        if self.apps_claim is None:
            return self.fixed_apps
        named = claims.get(self.apps_claim)
        if isinstance(named, str):
            named = named.split()
        if not isinstance(named, list):
            return frozenset()  # a token that names no app may use none
        listed = frozenset(app for app in named if isinstance(app, str))
        return listed if self.fixed_apps is None else listed & self.fixed_apps
