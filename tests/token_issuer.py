"""A stand-in identity provider for the tests of end-user tokens: signing keys
made at test time (RSA, EC), the JWKS that publishes them, and tokens signed
by PyJWT, well formed or wrong in the one way a test names."""

import base64
import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

ISSUER = "https://id.example.com/"
AUDIENCE = "session-state"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class SigningKey:
    """A private key, its id and algorithm."""

    def __init__(self, kid: str, algorithm: str = "RS256") -> None:
        self.kid = kid
        self.algorithm = algorithm
        if algorithm.startswith("ES"):
            self.private: Any = ec.generate_private_key(ec.SECP256R1())
        else:
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def public_jwk(self) -> dict[str, Any]:
        family = jwt.algorithms.ECAlgorithm if self.algorithm.startswith("ES") else None
        family = family or jwt.algorithms.RSAAlgorithm
        jwk: dict[str, Any] = family.to_jwk(self.private.public_key(), as_dict=True)
        return {**jwk, "kid": self.kid, "alg": self.algorithm, "use": "sig"}

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def token(
        self, user: str = "u1", *, header: dict[str, Any] | None = None, **claims: Any
    ) -> str:
        """A token for `user` valid for an hour; `claims` replace or add
        claims (None removes one)."""
        now = int(time.time())
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": user, "iat": now, "exp": now + 3600}
        body.update(claims)
        body = {name: value for name, value in body.items() if value is not None}
        headers = {"kid": self.kid, **(header or {})}
        return jwt.encode(body, self.private, algorithm=self.algorithm, headers=headers)

    def hs256_with_public_key(self, user: str = "u1") -> str:
        """The classic confusion: HS256 whose secret is this key's public PEM
        (PyJWT refuses to make one, so it is put together here)."""
        now = int(time.time())
        header = {"alg": "HS256", "typ": "JWT", "kid": self.kid}
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": user, "exp": now + 3600}
        signed = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(body).encode())}"
        mac = hmac.new(self.public_pem(), signed.encode(), hashlib.sha256).digest()
        return f"{signed}.{_b64(mac)}"


def unsigned_token(user: str = "u1", kid: str = "k1") -> str:
    """`alg: none`: no signature at all."""
    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": user, "exp": now + 3600}
    return jwt.encode(body, None, algorithm="none", headers={"kid": kid})


def raw_token(header: Any, body: Any, signature: bytes = b"sig") -> str:
    """A token of any header and body, JSON or not, for the hostile tests."""

    def part(value: Any) -> str:
        return _b64(value if isinstance(value, bytes) else json.dumps(value).encode())

    return f"{part(header)}.{part(body)}.{_b64(signature)}"


def write_jwks(path: Path, *keys: SigningKey) -> Path:
    path.write_text(json.dumps({"keys": [key.public_jwk() for key in keys]}))
    return path


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
