"""End-user tokens (OIDC / JWT): where their keys are, whom they must come
from and be meant for, which claim names the user and which apps a token may
use. Off unless SESSION_STATE_JWT_JWKS is set; half a configuration stops the
start-up rather than leaving tokens checked less than the operator thinks."""

from typing import Annotated, Self

from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode

from ..end_user_tokens import ALLOWED_ALGORITHMS, EndUserTokens, parse_algorithms
from ..jwks import JwksKeys, check_jwks_location
from .group import SettingGroup, split_comma_separated

DEFAULT_ALGORITHMS = "RS256,ES256,PS256,EdDSA"


class TokenSettings(SettingGroup):
    """How end-user tokens are checked and what they may reach."""

    title = "End-user tokens"

    jwt_jwks: str | None = Field(
        default=None,
        description="The JWKS that signs end-user tokens: an https URL, an http URL on a "
        "loopback address, or a file path. Unset: end-user tokens are off.",
    )
    jwt_issuer: str | None = Field(
        default=None, description="The `iss` every token must carry (required with a JWKS)."
    )
    jwt_audience: str | None = Field(
        default=None,
        description="The audience (`aud`) every token must be meant for (required with a JWKS).",
    )
    jwt_user_claim: str = Field(
        default="sub", min_length=1, description="The claim that holds the token's user id."
    )
    jwt_apps_claim: str | None = Field(
        default=None,
        description="A claim listing the apps a token may use (a JSON array, or names "
        "separated by spaces); with SESSION_STATE_JWT_APPS, only the apps both allow.",
    )
    jwt_apps: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="The apps (comma-separated, '*' for all) every token may use.",
    )
    jwt_algorithms: str = Field(
        default=DEFAULT_ALGORITHMS,
        description="Signature algorithms accepted (comma-separated), asymmetric only: "
        f"{', '.join(ALLOWED_ALGORITHMS)}.",
    )
    jwt_jwks_min_refresh_seconds: float = Field(
        default=60.0,
        ge=0,
        le=86400,
        description="The JWKS is read again for a token whose key id it lacks at most this often.",
    )

    @field_validator("jwt_apps", mode="before")
    @classmethod
    def _split_apps(cls, value: object) -> object:
        return split_comma_separated(value)

    @field_validator("jwt_algorithms")
    @classmethod
    def _refuse_symmetric_algorithms(cls, value: str) -> str:
        parse_algorithms(value)  # its refusal names the algorithm and the rule
        return value

    @field_validator("jwt_jwks")
    @classmethod
    def _refuse_an_unusable_jwks(cls, value: str | None) -> str | None:
        if value is not None:
            check_jwks_location(value)
        return value

    @model_validator(mode="after")
    def _refuse_half_a_configuration(self) -> Self:
        if self.jwt_jwks is None:
            named = [
                name
                for name, value in (
                    ("SESSION_STATE_JWT_ISSUER", self.jwt_issuer),
                    ("SESSION_STATE_JWT_AUDIENCE", self.jwt_audience),
                    ("SESSION_STATE_JWT_APPS_CLAIM", self.jwt_apps_claim),
                    ("SESSION_STATE_JWT_APPS", self.jwt_apps),
                )
                if value
            ]
            if named:
                raise ValueError(
                    f"{', '.join(named)} is set but SESSION_STATE_JWT_JWKS is not: end-user "
                    "tokens need the keys that sign them"
                )
            return self
        missing = [
            name
            for name, value in (
                ("SESSION_STATE_JWT_ISSUER", self.jwt_issuer),
                ("SESSION_STATE_JWT_AUDIENCE", self.jwt_audience),
            )
            if not value
        ]
        if missing:
            raise ValueError(
                f"SESSION_STATE_JWT_JWKS is set without {' and '.join(missing)}: a token "
                "signed by the same identity provider for another service or tenant would "
                "be accepted"
            )
        if not self.jwt_apps and not self.jwt_apps_claim:
            raise ValueError(
                "SESSION_STATE_JWT_JWKS is set without SESSION_STATE_JWT_APPS or "
                "SESSION_STATE_JWT_APPS_CLAIM: say which apps tokens may use ('*' for all)"
            )
        return self

    def end_user_tokens(self) -> EndUserTokens | None:
        """What checks end-user tokens; None: they are off."""
        if self.jwt_jwks is None or self.jwt_issuer is None or self.jwt_audience is None:
            return None
        return EndUserTokens(
            JwksKeys(self.jwt_jwks, self.jwt_jwks_min_refresh_seconds),
            issuer=self.jwt_issuer,
            audience=self.jwt_audience,
            algorithms=parse_algorithms(self.jwt_algorithms),
            user_claim=self.jwt_user_claim,
            apps_claim=self.jwt_apps_claim,
            apps=self.jwt_apps,
        )
