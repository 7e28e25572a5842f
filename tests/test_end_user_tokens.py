"""End-user tokens (OIDC/JWT): a valid token acts as its user only, in the
apps it may use; every token that is not valid is a 401 that says why and
never echoes it; refusals are in the audit trail. Through the whole app
(fast paths included), on both backends, with keys made at test time and a
JWKS file."""

import asyncio
import logging
import time
from pathlib import Path

import httpx
import pytest

from session_state.core.config import Settings

from .conftest import asgi_client
from .token_issuer import (
    AUDIENCE,
    ISSUER,
    SigningKey,
    bearer,
    raw_token,
    unsigned_token,
    write_jwks,
)

API_KEY = "operator-key-0123456789"
APP = "travel"


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey("k1")


@pytest.fixture
def jwks(tmp_path: Path, key: SigningKey) -> Path:
    return write_jwks(tmp_path / "jwks.json", key)


def token_settings(database_url: str, jwks: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "database_url": database_url,
        "db_timeout_seconds": 30,
        "api_keys": {API_KEY: ["*"]},
        "jwt_jwks": str(jwks),
        "jwt_issuer": ISSUER,
        "jwt_audience": AUDIENCE,
        "jwt_apps": [APP, "other"],
        **overrides,
    }
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
async def http(database_url: str, jwks: Path):
    async with asgi_client(token_settings(database_url, jwks)) as client:
        yield client


def operator() -> dict[str, str]:
    return bearer(API_KEY)


def assert_problem(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == code, body
    return body


# -- what a valid token reaches ---------------------------------------------------


async def test_a_token_for_u1_creates_and_reads_u1s_sessions(http, key):
    u1 = bearer(key.token("u1"))
    base = f"/apps/{APP}/users/u1/sessions"
    created = await http.post(
        base, json={"sessionId": "s1", "state": {"user:plan": "gold"}}, headers=u1
    )
    assert created.status_code == 201, created.text
    appended = await http.post(
        f"{base}/s1/events",
        json={"author": "user", "invocationId": "i1", "actions": {"stateDelta": {"topic": "tea"}}},
        headers=u1,
    )
    assert appended.status_code == 201, appended.text
    read = await http.get(f"{base}/s1", headers=u1)
    assert read.status_code == 200
    assert read.json()["state"] == {"user:plan": "gold", "topic": "tea"}
    assert [s["id"] for s in (await http.get(base, headers=u1)).json()["sessions"]] == ["s1"]
    assert (await http.get(f"/apps/{APP}/users/u1/state", headers=u1)).status_code == 200
    assert (await http.get(f"/apps/{APP}/users/u1/memory?query=tea", headers=u1)).status_code == 200


async def test_a_token_gets_403_on_another_users_data_and_on_app_wide_paths(http, key):
    await http.post(f"/apps/{APP}/users/u2/sessions", json={"sessionId": "s2"}, headers=operator())
    u1 = bearer(key.token("u1"))
    for method, path in [
        ("GET", f"/apps/{APP}/users/u2/sessions/s2"),
        ("GET", f"/apps/{APP}/users/u2/sessions"),
        ("POST", f"/apps/{APP}/users/u2/sessions/s2/events"),
        ("POST", f"/apps/{APP}/users/u2/sessions"),
        ("GET", f"/apps/{APP}/users/u2/state"),
        ("GET", f"/apps/{APP}/users/u2/memory"),
        ("GET", f"/apps/{APP}/users/u2/sessions/stream"),
        ("DELETE", f"/apps/{APP}/users/u2"),
        ("GET", f"/apps/{APP}/sessions"),
        ("GET", f"/apps/{APP}/users"),
        ("GET", "/apps"),
        ("DELETE", f"/apps/{APP}?confirm={APP}"),
        ("PATCH", f"/apps/{APP}/state"),
        ("POST", f"/apps/{APP}/runs/delete"),
        ("POST", f"/apps/{APP}/threads/prune"),
        ("GET", "/apps/billing/users/u1/sessions"),  # an app it may not use
        ("GET", f"/apps/{APP}%2Fx/users/u1/sessions"),
        ("GET", f"/apps/{APP}/%75sers/u2/sessions"),  # "users", spelled escaped
        ("GET", f"/apps/{APP}/users/%75%32/sessions"),  # "u2", spelled escaped
    ]:
        response = await http.request(method, path, headers=u1, json={"author": "user"})
        assert_problem(response, 403, "forbidden")
    # The operator's key still reaches everything.
    assert (
        await http.get(f"/apps/{APP}/users/u2/sessions/s2", headers=operator())
    ).status_code == 200


async def test_a_token_may_not_write_app_state_but_reads_it_in_its_sessions(http, key):
    await http.post(
        f"/apps/{APP}/users/ops/sessions", json={"state": {"app:motd": "hi"}}, headers=operator()
    )
    u1 = bearer(key.token("u1"))
    base = f"/apps/{APP}/users/u1/sessions"
    assert_problem(
        await http.post(base, json={"sessionId": "s1", "state": {"app:motd": "x"}}, headers=u1),
        403,
        "forbidden",
    )
    assert (await http.post(base, json={"sessionId": "s1"}, headers=u1)).status_code == 201
    event = {"author": "user", "actions": {"stateDelta": {"app:motd": "pwned", "mine": 1}}}
    assert_problem(await http.post(f"{base}/s1/events", json=event, headers=u1), 403, "forbidden")
    batch = {"events": [{"author": "user", "actions": {"state_delta": {"app:motd": "pwned"}}}]}
    assert_problem(
        await http.post(f"{base}/s1/events/batch", json=batch, headers=u1), 403, "forbidden"
    )
    assert_problem(
        await http.patch(f"{base}/s1", json={"stateDelta": {"app:motd": "pwned"}}, headers=u1),
        403,
        "forbidden",
    )
    session = (await http.get(f"{base}/s1", headers=u1)).json()
    assert session["events"] == []
    assert session["state"] == {"app:motd": "hi"}
    assert (await http.get(f"/apps/{APP}/state", headers=u1)).json()["state"] == {"motd": "hi"}


async def test_appends_to_several_sessions_only_when_all_are_the_users(http, key):
    u1 = bearer(key.token("u1"))
    await http.post(f"/apps/{APP}/users/u1/sessions", json={"sessionId": "s1"}, headers=u1)
    await http.post(f"/apps/{APP}/users/u2/sessions", json={"sessionId": "s2"}, headers=operator())
    mine = {"userId": "u1", "sessionId": "s1", "event": {"author": "user", "id": "e1"}}
    theirs = {"userId": "u2", "sessionId": "s2", "event": {"author": "user", "id": "e2"}}
    refused = await http.post(f"/apps/{APP}/appends", json={"appends": [mine, theirs]}, headers=u1)
    assert_problem(refused, 403, "forbidden")
    assert (await http.get(f"/apps/{APP}/users/u1/sessions/s1", headers=u1)).json()["events"] == []
    accepted = await http.post(f"/apps/{APP}/appends", json={"appends": [mine]}, headers=u1)
    assert accepted.status_code == 200
    assert [r["status"] for r in accepted.json()["results"]] == [201]


CHECKPOINT = {
    "checkpoint": {"type": "json", "data": "eyJ2IjogNH0="},
    "metadata": {"source": "input", "step": -1},
    "channelVersions": {},
}


BATCHED_WRITES = {"op": "putWrites", "checkpointId": "c1", "writes": []}


async def test_a_thread_is_reachable_only_by_the_user_it_was_first_written_for(http, key):
    u1, u2 = bearer(key.token("u1")), bearer(key.token("u2"))
    thread = f"/apps/{APP}/threads/t1"
    put = await http.put(f"{thread}/checkpoints/c1?checkpointNs=", json=CHECKPOINT, headers=u1)
    assert put.status_code == 204, put.text
    assert len((await http.get(f"{thread}/checkpoints", headers=u1)).json()["checkpoints"]) == 1
    for method, path, body in [
        ("GET", f"{thread}/checkpoints", None),
        ("GET", f"{thread}/checkpoints/c1?checkpointNs=", None),
        ("PUT", f"{thread}/checkpoints/c2?checkpointNs=", CHECKPOINT),
        ("POST", f"{thread}/checkpoints/c1/writes?checkpointNs=", {"writes": []}),
        ("POST", f"{thread}/operations", {"operations": [BATCHED_WRITES]}),
        ("POST", f"{thread}/copy", {"targetThreadId": "mine-now"}),
        ("DELETE", thread, None),
    ]:
        assert_problem(await http.request(method, path, json=body, headers=u2), 403, "forbidden")
    # A body naming another user is refused, even on a new thread.
    naming = {**CHECKPOINT, "userId": "u1"}
    assert_problem(
        await http.put(
            f"/apps/{APP}/threads/t2/checkpoints/c1?checkpointNs=", json=naming, headers=u2
        ),
        403,
        "forbidden",
    )
    assert_problem(
        await http.post(
            f"/apps/{APP}/threads/t2/operations",
            json={"operations": [BATCHED_WRITES], "userId": "u1"},
            headers=u2,
        ),
        403,
        "forbidden",
    )
    # A thread an API key wrote under the default user is not a token's.
    await http.put(
        f"/apps/{APP}/threads/t3/checkpoints/c1?checkpointNs=", json=CHECKPOINT, headers=operator()
    )
    assert_problem(
        await http.get(f"/apps/{APP}/threads/t3/checkpoints", headers=u1), 403, "forbidden"
    )
    batch = {"operations": [{"op": "put", "checkpointId": "c9", **CHECKPOINT}, BATCHED_WRITES]}
    assert_problem(
        await http.post(f"/apps/{APP}/threads/t3/operations", json=batch, headers=u1),
        403,
        "forbidden",
    )
    listed = await http.get(f"/apps/{APP}/threads/t3/checkpoints", headers=operator())
    assert [c["checkpointId"] for c in listed.json()["checkpoints"]] == ["c1"]
    # A token's batch on its own thread is taken.
    mine = await http.post(f"{thread}/operations", json=batch, headers=u1)
    assert mine.status_code == 204, mine.text
    # Erasing u1 with the operator's key takes t1: it was recorded under u1.
    assert (await http.delete(f"/apps/{APP}/users/u1", headers=operator())).status_code == 204
    assert (await http.get(f"{thread}/checkpoints", headers=operator())).json()["checkpoints"] == []
    assert (await http.delete(f"/apps/{APP}/threads/t2", headers=u2)).status_code == 204


async def test_several_threads_batches_reach_only_the_tokens_own_threads(http, key):
    """POST /apps/{app}/thread-operations: each batch is held to its own
    route's rule, so a token's own thread is written and another's, or a
    batch naming another user, is that batch's 403 alone."""
    u1 = bearer(key.token("u1"))
    theirs = await http.put(
        f"/apps/{APP}/threads/ops/checkpoints/c1?checkpointNs=", json=CHECKPOINT, headers=operator()
    )
    assert theirs.status_code == 204, theirs.text
    put = {"op": "put", "checkpointId": "c2", **CHECKPOINT}
    response = await http.post(
        f"/apps/{APP}/thread-operations",
        json={
            "threads": [
                {"threadId": "mine", "operations": [put]},
                {"threadId": "ops", "operations": [put]},
                {"threadId": "named", "operations": [put], "userId": "u2"},
            ]
        },
        headers=u1,
    )
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [result["status"] for result in results] == [204, 403, 403]
    assert {result["problem"]["code"] for result in results[1:]} == {"forbidden"}
    for thread_id, expected in [("mine", ["c2"]), ("ops", ["c1"]), ("named", [])]:
        listed = await http.get(f"/apps/{APP}/threads/{thread_id}/checkpoints", headers=operator())
        assert [c["checkpointId"] for c in listed.json()["checkpoints"]] == expected
    listed = await http.get(f"/apps/{APP}/threads", params={"userId": "u1"}, headers=u1)
    assert [thread["threadId"] for thread in listed.json()["threads"]] == ["mine"]


# An app's list of threads, and of their checkpoints (list(None)): each
# item's thread id.
APP_LISTS = {
    "threads": lambda body: [thread["threadId"] for thread in body["threads"]],
    "checkpoints": lambda body: [checkpoint["threadId"] for checkpoint in body["checkpoints"]],
}


@pytest.mark.parametrize("listed", sorted(APP_LISTS))
async def test_a_token_lists_only_its_own_users_threads_and_must_say_so(http, key, listed):
    threads_of = APP_LISTS[listed]
    u1 = bearer(key.token("u1"))
    for thread, headers in [("mine", u1), ("theirs", bearer(key.token("u2"))), ("ops", operator())]:
        put = await http.put(
            f"/apps/{APP}/threads/{thread}/checkpoints/c1", json=CHECKPOINT, headers=headers
        )
        assert put.status_code == 204, put.text
    path = f"/apps/{APP}/{listed}"
    own = await http.get(path, params={"userId": "u1"}, headers=u1)
    assert threads_of(own.json()) == ["mine"]
    for params in [{}, {"userId": "u2"}, {"userId": "langgraph"}]:
        assert_problem(await http.get(path, params=params, headers=u1), 403, "forbidden")
    # Another app the token may not use: refused before the list.
    assert_problem(
        await http.get(f"/apps/billing/{listed}", params={"userId": "u1"}, headers=u1),
        403,
        "forbidden",
    )
    everyone = await http.get(path, headers=operator())
    assert set(threads_of(everyone.json())) == {"mine", "theirs", "ops"}


async def test_the_store_is_reachable_under_the_users_own_namespaces_only(http, key):
    u1 = bearer(key.token("u1"))
    store = f"/apps/{APP}/store"
    put = await http.put(
        f"{store}/items?namespace=u1&namespace=notes&key=k", json={"value": {"a": 1}}, headers=u1
    )
    assert put.status_code == 204, put.text
    assert (await http.get(f"{store}/items?namespace=u1&namespace=notes&key=k", headers=u1)).json()[
        "value"
    ] == {"a": 1}
    found = await http.post(f"{store}/search", json={"namespacePrefix": ["u1"]}, headers=u1)
    assert [item["key"] for item in found.json()["items"]] == ["k"]
    listed = await http.post(
        f"{store}/namespaces",
        json={"matchConditions": [{"matchType": "prefix", "path": ["u1"]}]},
        headers=u1,
    )
    assert listed.json()["namespaces"] == [["u1", "notes"]]
    for method, path, body in [
        ("GET", f"{store}/items?namespace=u2&key=k", None),
        ("PUT", f"{store}/items?namespace=u2&key=k", {"value": {}}),
        ("DELETE", f"{store}/items?namespace=notes&namespace=u1&key=k", None),
        ("POST", f"{store}/search", {}),
        ("POST", f"{store}/search", {"namespacePrefix": ["*"]}),
        ("POST", f"{store}/namespaces", {}),
        (
            "POST",
            f"{store}/namespaces",
            {"matchConditions": [{"matchType": "suffix", "path": ["u1"]}]},
        ),
        (
            "POST",
            f"{store}/batch",
            {
                "ops": [
                    {"op": "get", "namespace": ["u1"], "key": "k"},
                    {"op": "get", "namespace": ["u2"], "key": "k"},
                ]
            },
        ),
    ]:
        assert_problem(await http.request(method, path, json=body, headers=u1), 403, "forbidden")


async def test_a_user_may_erase_themselves_and_the_audit_trail_says_who(http, key, caplog):
    caplog.set_level(logging.INFO, logger="session_state")
    u1 = bearer(key.token("u1"))
    await http.post(f"/apps/{APP}/users/u1/sessions", json={"sessionId": "s1"}, headers=u1)
    assert (await http.delete(f"/apps/{APP}/users/u1", headers=u1)).status_code == 204
    [record] = [r for r in caplog.records if getattr(r, "audit_action", None) == "erase_user"]
    assert record.audit_outcome == "ok"
    assert (record.audit_app, record.audit_user, record.audit_end_user) == (APP, "u1", "u1")
    assert record.audit_sessions == 1


# -- what is refused ------------------------------------------------------------


async def test_every_token_that_is_not_valid_is_a_401_naming_why(http, key, caplog):
    caplog.set_level(logging.INFO, logger="session_state")
    stranger = SigningKey("k1")  # the same key id, another key
    cases = {
        "expired": key.token(exp=1_000_000),
        "wrong audience": key.token(aud="another-service"),
        "wrong issuer": key.token(iss="https://evil.example.com/"),
        "algorithm not allowed": unsigned_token(),
        "bad signature": stranger.token(),
        "unknown key": key.token(header={"kid": "k-unknown"}),
        "not yet valid": key.token(nbf=4_000_000_000),
        "missing claim": key.token(sub=None),
        "bad user claim": key.token(sub="a\x00b"),
    }
    cases["algorithm not allowed (HS256 with the public key)"] = key.hs256_with_public_key()
    for reason, token in cases.items():
        response = await http.get(f"/apps/{APP}/users/u1/sessions", headers=bearer(token))
        body = assert_problem(response, 401, "invalid_token")
        assert response.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
        assert token not in response.text and token.split(".")[1] not in response.text
        logged = [r for r in caplog.records if getattr(r, "audit_action", None) == "token_refused"]
        expected = reason.split(" (")[0]
        assert logged[-1].audit_outcome == expected, (reason, body)
        assert token not in caplog.text
    assert len(logged) == len(cases)


async def test_a_token_expired_within_the_leeway_is_still_accepted(http, key):
    token = key.token(exp=int(time.time()) - 10)
    assert (
        await http.get(f"/apps/{APP}/users/u1/sessions", headers=bearer(token))
    ).status_code == 200


@pytest.mark.parametrize(
    "token",
    [
        "a.b.c",
        "x" * 40_000 + ".e30.sig",
        raw_token(b"not json", {"sub": "u1"}),
        raw_token([1, 2], {"sub": "u1"}),
        raw_token({"alg": ["RS256"], "kid": "k1"}, {"sub": "u1"}),
        raw_token({"alg": "RS256", "kid": 7}, {"sub": "u1"}),
        raw_token({"alg": "RS256", "kid": "k1"}, b"not json"),
        raw_token({"alg": "RS256", "kid": "k1"}, [1]),
        raw_token({"alg": "RS256", "kid": "k1", "crit": ["exp"]}, {"sub": "u1"}),
        raw_token({"alg": "RS256", "kid": "k1", "jku": "https://evil.example/jwks"}, {"sub": "u1"}),
        raw_token({"alg": "ES256", "kid": "k1"}, {"sub": "u1"}),  # an RSA key, an EC algorithm
        raw_token({"alg": "RS256", "kid": "k1", "b64": False}, {"sub": "u1"}),
        raw_token({"alg": "RS256", "kid": "\x00" * 1000}, {"sub": "u1"}),
    ],
)
async def test_hostile_tokens_are_a_401_never_a_500(http, token):
    response = await http.get(f"/apps/{APP}/users/u1/sessions", headers=bearer(token))
    assert_problem(response, 401, "invalid_token")


async def test_an_algorithm_outside_the_allow_list_is_refused(database_url, jwks, key):
    settings = token_settings(database_url, jwks, jwt_algorithms="ES256")
    async with asgi_client(settings) as http:
        response = await http.get(f"/apps/{APP}/users/u1/sessions", headers=bearer(key.token()))
        assert "algorithm" in assert_problem(response, 401, "invalid_token")["detail"]


async def test_api_keys_keep_working_beside_tokens_and_a_bearer_is_needed(http):
    assert (await http.get(f"/apps/{APP}/sessions", headers=operator())).status_code == 200
    assert_problem(await http.get(f"/apps/{APP}/sessions"), 401, "unauthorized")
    assert_problem(
        await http.get(f"/apps/{APP}/sessions", headers=bearer("not-a-key-0123456789")),
        401,
        "unauthorized",
    )


async def test_with_tokens_only_the_api_is_not_open(database_url, jwks, key):
    async with asgi_client(token_settings(database_url, jwks, api_keys={})) as http:
        assert_problem(await http.get(f"/apps/{APP}/users/u1/sessions"), 401, "unauthorized")
        assert_problem(await http.get("/apps"), 401, "unauthorized")
        assert_problem(
            await http.get(
                f"/apps/{APP}/users/u1/sessions", headers=bearer("some-api-key-0123456789")
            ),
            401,
            "invalid_token",
        )
        ok = await http.get(f"/apps/{APP}/users/u1/sessions", headers=bearer(key.token()))
        assert ok.status_code == 200


async def test_the_apps_claim_narrows_what_a_token_may_use(database_url, jwks, key):
    settings = token_settings(database_url, jwks, jwt_apps=["*"], jwt_apps_claim="apps")
    async with asgi_client(settings) as http:
        path = "/apps/{}/users/u1/sessions"
        token = bearer(key.token(apps=["travel"]))
        assert (await http.get(path.format("travel"), headers=token)).status_code == 200
        assert_problem(await http.get(path.format("billing"), headers=token), 403, "forbidden")
        spaced = bearer(key.token(apps="billing travel"))
        assert (await http.get(path.format("billing"), headers=spaced)).status_code == 200
        assert_problem(
            await http.get(path.format("travel"), headers=bearer(key.token())), 403, "forbidden"
        )


# -- the key set -------------------------------------------------------------------


async def test_a_key_rotated_at_the_jwks_is_picked_up(database_url, jwks, key):
    settings = token_settings(database_url, jwks, jwt_jwks_min_refresh_seconds=0)
    async with asgi_client(settings) as http:
        path = f"/apps/{APP}/users/u1/sessions"
        assert (await http.get(path, headers=bearer(key.token()))).status_code == 200
        rotated = SigningKey("k2", "ES256")
        write_jwks(jwks, rotated)
        assert (await http.get(path, headers=bearer(rotated.token()))).status_code == 200
        # k1 is gone from the set, but was held: a withdrawn key stops working
        # once the set is read again (at most an hour later, or at a new kid).
        write_jwks(jwks, SigningKey("k3"))
        third = await http.get(path, headers=bearer(SigningKey("k4").token()))
        assert_problem(third, 401, "invalid_token")
        assert_problem(await http.get(path, headers=bearer(rotated.token())), 401, "invalid_token")


async def test_reading_the_jwks_again_is_rate_limited(database_url, jwks, key):
    settings = token_settings(database_url, jwks, jwt_jwks_min_refresh_seconds=3600)
    async with asgi_client(settings) as http:
        path = f"/apps/{APP}/users/u1/sessions"
        assert (await http.get(path, headers=bearer(key.token()))).status_code == 200
        rotated = SigningKey("k2")
        write_jwks(jwks, key, rotated)
        # Read at the first token: a new kid within the hour is not fetched for.
        response = await http.get(path, headers=bearer(rotated.token()))
        assert "key id" in assert_problem(response, 401, "invalid_token")["detail"]


async def test_tokens_arriving_before_the_jwks_is_first_read_wait_for_that_read(http, key):
    # The first token starts the read; those arriving while it runs wait for
    # it rather than find no keys (a 503 to each of a burst of first requests).
    answers = await asyncio.gather(
        *(
            http.get(f"/apps/{APP}/users/u{index}/sessions", headers=bearer(key.token(f"u{index}")))
            for index in range(8)
        )
    )
    assert [answer.status_code for answer in answers] == [200] * 8, answers[-1].text


async def test_an_unreadable_jwks_is_a_503_to_retry(database_url, jwks, key):
    settings = token_settings(database_url, jwks)
    async with asgi_client(settings) as http:
        jwks.unlink()
        response = await http.get(f"/apps/{APP}/users/u1/sessions", headers=bearer(key.token()))
        assert_problem(response, 503, "token_keys_unavailable")
        assert response.headers["Retry-After"] == "1"


async def test_a_live_stream_opened_with_a_token_ends_once_the_token_expires(
    database_url, jwks, key
):
    settings = token_settings(database_url, jwks, stream_heartbeat_seconds=1)
    async with asgi_client(settings) as http:
        u1 = bearer(key.token("u1"))
        await http.post(f"/apps/{APP}/users/u1/sessions", json={"sessionId": "s1"}, headers=u1)
        soon = bearer(key.token("u1", exp=int(time.time()) + 2))
        started = time.monotonic()
        # The ASGI transport answers once the stream has ended.
        streamed = await asyncio.wait_for(
            http.get(f"/apps/{APP}/users/u1/sessions/s1/events/stream", headers=soon), 30
        )
        assert streamed.status_code == 200
        assert b": heartbeat" in streamed.content
        assert 1.0 <= time.monotonic() - started < 20
