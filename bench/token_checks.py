"""What checking an end-user token costs a request, against an API key.

The same session read (GET of a session: the read fast path) is sent through
the ASGI app on a SQLite file, `rounds` times, with an API key and with
tokens signed RS256, ES256 and EdDSA; each request's server CPU (the
process's, it runs in this process) is measured. Beside it, the token check
alone (`EndUserTokens.verify`, JWKS held) per algorithm. The goal: a token
read within 1.5x the server CPU of a key read at the p50.

    python -m bench.token_checks [--rounds 2000]
    python -m bench.token_checks --quick    # 200 rounds
"""

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from bench import RESULTS
from session_state.core.config import Settings
from tests.conftest import asgi_client

API_KEY = "bench-token-checks-key-0123456789"
ISSUER = "https://id.example.com/"
AUDIENCE = "session-state"
APP = "bench-tokens"
PATH = f"/apps/{APP}/users/u1/sessions/s1"


def _keys() -> dict[str, Any]:
    return {
        "RS256": rsa.generate_private_key(public_exponent=65537, key_size=2048),
        "ES256": ec.generate_private_key(ec.SECP256R1()),
        "EdDSA": ed25519.Ed25519PrivateKey.generate(),
    }


def _jwk(algorithm: str, private: Any) -> dict[str, Any]:
    family = {
        "RS256": jwt.algorithms.RSAAlgorithm,
        "ES256": jwt.algorithms.ECAlgorithm,
        "EdDSA": jwt.algorithms.OKPAlgorithm,
    }[algorithm]
    jwk: dict[str, Any] = family.to_jwk(private.public_key(), as_dict=True)
    return {**jwk, "kid": algorithm, "alg": algorithm, "use": "sig"}


def _token(algorithm: str, private: Any) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "u1", "iat": now, "exp": now + 3600}
    return jwt.encode(claims, private, algorithm=algorithm, headers={"kid": algorithm})


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_us": round(statistics.median(ordered) * 1e6, 1),
        "p95_us": round(ordered[int(len(ordered) * 0.95) - 1] * 1e6, 1),
    }


async def run(rounds: int, folder: Path) -> dict[str, Any]:
    keys = _keys()
    jwks = folder / "jwks.json"
    jwks.write_text(json.dumps({"keys": [_jwk(name, key) for name, key in keys.items()]}))
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{folder / 'bench.db'}",
        api_keys={API_KEY: ["*"]},
        jwt_jwks=str(jwks),
        jwt_issuer=ISSUER,
        jwt_audience=AUDIENCE,
        jwt_apps=[APP],
        sweep_interval_seconds=0,
    )
    bearers = {"API key": API_KEY} | {
        f"token {name}": _token(name, key) for name, key in keys.items()
    }
    results: dict[str, Any] = {"rounds": rounds, "reads": {}, "verify": {}}
    async with asgi_client(settings) as http:
        created = await http.post(
            f"/apps/{APP}/users/u1/sessions",
            json={"sessionId": "s1"},
            headers={"Authorization": f"Bearer {API_KEY}"},
        )
        assert created.status_code == 201, created.text
        for case, bearer in bearers.items():
            headers = {"Authorization": f"Bearer {bearer}"}
            for _ in range(min(rounds, 50)):  # warm up
                assert (await http.get(PATH, headers=headers)).status_code == 200
            samples = []
            for _ in range(rounds):
                started = time.process_time()
                response = await http.get(PATH, headers=headers)
                samples.append(time.process_time() - started)
                assert response.status_code == 200, response.text
            results["reads"][case] = _summary(samples)
    tokens = settings.end_user_tokens()
    assert tokens is not None
    for name, key in keys.items():
        token = _token(name, key)
        await tokens.verify(token)
        samples = []
        for _ in range(rounds):
            started = time.perf_counter()
            await tokens.verify(token)
            samples.append(time.perf_counter() - started)
        results["verify"][name] = _summary(samples)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="200 rounds")
    parser.add_argument("--rounds", type=int, help="default 2000 (--quick: 200)")
    parser.add_argument("--name", default="token_checks", help="results file name")
    parser.add_argument("--output", type=Path, help="results file (default: from --name)")
    arguments = parser.parse_args()
    rounds = arguments.rounds or (200 if arguments.quick else 2000)
    output = arguments.output or RESULTS / f"{arguments.name}.json"
    with tempfile.TemporaryDirectory() as folder:
        results = asyncio.run(run(rounds, Path(folder)))
    results["load_average_1m"] = round(os.getloadavg()[0], 2)
    base = results["reads"]["API key"]["p50_us"]
    print(f"session read through the app, server CPU per request ({rounds} rounds):")
    for case, figure in results["reads"].items():
        ratio = figure["p50_us"] / base
        p50, p95 = figure["p50_us"], figure["p95_us"]
        print(f"  {case:14s} p50 {p50:8.1f} us  p95 {p95:8.1f} us  x{ratio:.2f}")
    print("the token check alone (EndUserTokens.verify, keys held):")
    for name, figure in results["verify"].items():
        print(f"  {name:14s} p50 {figure['p50_us']:8.1f} us  p95 {figure['p95_us']:8.1f} us")
    worst = max(figure["p50_us"] for figure in results["reads"].values()) / base
    met = "met" if worst <= 1.5 else "not met"
    print(f"goal (a token read within 1.5x a key read's CPU at p50): {met} (x{worst:.2f})")
    print(f"load average (1 min) {results['load_average_1m']}")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {output}")


if __name__ == "__main__":
    main()
