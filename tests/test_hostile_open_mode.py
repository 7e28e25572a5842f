"""Open mode (no API keys) against a hostile web page in the user's browser:
cross-site requests (a text/plain POST needs no CORS preflight) and DNS
rebinding (a foreign Host) are refused; curl, the Python client, same-origin
Swagger UI and health probes keep working; with API keys none of this applies."""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from session_state.core.config import Settings
from session_state.main import create_app
from tests.conftest import ServerProcess

SESSIONS = "/apps/victim/users/u/sessions"
SESSION = f"{SESSIONS}/s"
LOCAL = "http://127.0.0.1"  # the ASGI clients' own origin
EVIL = "http://attacker.example:8000"
API_KEY = "a-key-long-enough-0123456789"
# What a browser adds to a request a page at EVIL makes to this service.
CROSS_SITE = {"Origin": EVIL, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
SAME_ORIGIN = {"Origin": LOCAL, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
# A form or fetch() with text/plain is a "simple" request: no preflight.
TEXT_PLAIN = {"Content-Type": "text/plain;charset=UTF-8"}
BODY = '{"sessionId": "s", "state": {"stolen": true}}'


@asynccontextmanager
async def open_client(database_url: str, **settings: Any) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(database_url=database_url, **settings))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=LOCAL) as http,
    ):
        yield http


def assert_forbidden(response: httpx.Response, *mentions: str) -> None:
    assert response.status_code == 403, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["code"] == "forbidden"
    for mention in mentions:
        assert mention in problem["detail"], problem["detail"]


async def assert_nothing_written(client: httpx.AsyncClient) -> None:
    """Read back as curl would (no Origin, no Sec-Fetch-*, a local Host)."""
    assert (await client.get(SESSION)).status_code == 404
    assert (await client.get(SESSIONS)).json()["sessions"] == []


# -- cross-site requests ---------------------------------------------------


@pytest.mark.parametrize(
    "browser_headers",
    [
        CROSS_SITE,
        {"Origin": EVIL},  # a browser that sends no Sec-Fetch-*
        {"Sec-Fetch-Site": "cross-site"},  # and one that sends no Origin
        {"Origin": "null", "Sec-Fetch-Site": "cross-site"},  # a sandboxed iframe
    ],
    ids=["origin-and-fetch-metadata", "origin-only", "fetch-metadata-only", "null-origin"],
)
async def test_a_cross_site_text_plain_post_writes_nothing(client, browser_headers):
    response = await client.post(SESSIONS, content=BODY, headers={**TEXT_PLAIN, **browser_headers})
    assert_forbidden(response, "configure API keys")
    appended = await client.post(
        f"{SESSION}/events", content='{"author": "a"}', headers={**TEXT_PLAIN, **browser_headers}
    )
    assert_forbidden(appended)
    await assert_nothing_written(client)


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
async def test_cross_site_and_same_site_reads_are_refused(client, site):
    # same-site: a page of another local service (http://localhost:3000, say).
    assert (await client.post(SESSIONS, json={"sessionId": "s"})).status_code == 201
    for path in (SESSION, SESSIONS, "/apps/victim/state", "/openapi.json", "/metrics"):
        response = await client.get(path, headers={"Sec-Fetch-Site": site})
        assert_forbidden(response, site)


async def test_a_foreign_origin_is_refused_even_when_it_claims_same_origin(client):
    response = await client.get(
        SESSIONS, headers={"Origin": "http://127.0.0.1:3000", "Sec-Fetch-Site": "same-origin"}
    )
    assert_forbidden(response, "http://127.0.0.1:3000")


async def test_origin_null_is_refused(client):
    response = await client.post(SESSIONS, json={"sessionId": "s"}, headers={"Origin": "null"})
    assert_forbidden(response, "null")
    await assert_nothing_written(client)


async def test_a_same_origin_browser_request_is_accepted(client):
    created = await client.post(SESSIONS, json={"sessionId": "s"}, headers=SAME_ORIGIN)
    assert created.status_code == 201, created.text
    typed = await client.get(SESSION, headers={"Sec-Fetch-Site": "none"})  # the address bar
    assert typed.status_code == 200
    explicit_port = await client.get(SESSION, headers={"Origin": "http://127.0.0.1:80"})
    assert explicit_port.status_code == 200


async def test_curl_and_httpx_without_browser_headers_keep_working(client):
    assert (await client.post(SESSIONS, json={"sessionId": "s"})).status_code == 201
    assert (await client.get(SESSION)).status_code == 200


# -- DNS rebinding: the Host header ------------------------------------------


async def test_a_rebinding_host_cannot_read(client):
    assert (await client.post(SESSIONS, json={"sessionId": "s"})).status_code == 201
    # The page at attacker.example now resolves to 127.0.0.1: same origin for
    # the browser, so no Origin, Sec-Fetch-Site same-origin, and a foreign Host.
    rebinding = {"Host": "attacker.example:8000", "Sec-Fetch-Site": "same-origin"}
    for path in (SESSION, "/openapi.json", "/docs", "/metrics"):
        response = await client.get(path, headers=rebinding)
        assert_forbidden(response, "'attacker.example'", "SESSION_STATE_ALLOWED_HOSTS")
    written = await client.post(SESSIONS, json={"sessionId": "t"}, headers=rebinding)
    assert_forbidden(written)
    assert (await client.get(f"{SESSIONS}/t")).status_code == 404


@pytest.mark.parametrize(
    "host",
    ["localhost:8000", "LocalHost", "127.0.0.1:8000", "127.0.0.1", "[::1]:8000", "[::1]"],
)
async def test_loopback_hosts_are_accepted(client, host):
    assert (await client.post(SESSIONS, json={"sessionId": "s"}, headers={"Host": host})).is_success
    assert (await client.get(SESSION, headers={"Host": host})).status_code == 200


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example",
        "localhost.attacker.example",
        "127.0.0.1.attacker.example",
        "evil.localhost",
        "0.0.0.0:8000",
        "",
        "[::1",
        "local host",
    ],
)
async def test_other_hosts_are_refused(client, host):
    assert_forbidden(await client.get(SESSIONS, headers={"Host": host}), "Host")


async def test_the_bound_address_is_accepted_unless_it_is_a_wildcard(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'bound.db'}"
    async with open_client(url, host="192.0.2.7") as client:
        assert (await client.get(SESSIONS, headers={"Host": "192.0.2.7:8000"})).status_code == 200
        assert_forbidden(await client.get(SESSIONS, headers={"Host": "192.0.2.8:8000"}))
    async with open_client(url, host="2001:DB8::7") as client:
        assert (await client.get(SESSIONS, headers={"Host": "[2001:db8::7]:80"})).status_code == 200
    for wildcard in ("0.0.0.0", "::"):
        async with open_client(url, host=wildcard) as client:
            assert_forbidden(await client.get(SESSIONS, headers={"Host": "0.0.0.0"}))
            assert_forbidden(await client.get(SESSIONS, headers={"Host": "[::]:8000"}))
            assert (await client.get(SESSIONS, headers={"Host": "localhost"})).status_code == 200


async def test_allowed_hosts_are_accepted_and_a_star_accepts_any(database_url):
    async with open_client(database_url, allowed_hosts=["api", "Sessions.Internal"]) as client:
        for host in ("api:8000", "sessions.internal", "SESSIONS.internal:443"):
            assert (await client.get(SESSIONS, headers={"Host": host})).status_code == 200, host
        assert_forbidden(await client.get(SESSIONS, headers={"Host": "attacker.example"}))
    async with open_client(database_url, allowed_hosts=["*"]) as client:
        anywhere = {"Host": "anything.example:8000"}
        assert (await client.post(SESSIONS, json={"sessionId": "s"}, headers=anywhere)).is_success
        # Any Host, but still no cross-site browser requests.
        cross = {**anywhere, **CROSS_SITE, **TEXT_PLAIN}
        assert_forbidden(await client.post(SESSIONS, content=BODY, headers=cross))
        same = {**anywhere, "Origin": "http://anything.example:8000"}
        assert (await client.get(SESSION, headers=same)).status_code == 200


async def test_health_and_readiness_answer_any_host_and_any_site(client):
    hostile = {"Host": "10.0.0.5:8000", **CROSS_SITE}
    for path in ("/healthz", "/readyz"):
        assert (await client.get(path, headers=hostile)).status_code == 200, path


# -- with API keys, none of this applies ---------------------------------------


async def test_with_api_keys_the_guard_is_off_and_keys_decide(database_url):
    async with open_client(database_url, api_keys={API_KEY: ["*"]}) as client:
        hostile = {"Host": "attacker.example:8000", **CROSS_SITE}
        keyed = {**hostile, "Authorization": f"Bearer {API_KEY}"}
        created = await client.post(SESSIONS, json={"sessionId": "s"}, headers=keyed)
        assert created.status_code == 201
        assert (await client.get(SESSION, headers=keyed)).status_code == 200
        assert (await client.get("/openapi.json", headers=hostile)).status_code == 200
        unkeyed = await client.post(SESSIONS, content=BODY, headers={**hostile, **TEXT_PLAIN})
        assert unkeyed.status_code == 401
        assert unkeyed.json()["code"] == "unauthorized"


# -- a real server, raw Host headers ------------------------------------------


async def test_a_started_server_refuses_rebinding_and_cross_site_and_serves_local_hosts(server):
    port = server.port
    origin = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        path = "/apps/real/users/u/sessions"
        assert_forbidden(
            await http.post(path, content=BODY, headers={**TEXT_PLAIN, **CROSS_SITE}),
            "configure API keys",
        )
        assert (await http.get(f"{path}/s")).status_code == 404
        for host in ("attacker.example:8000", f"attacker.example:{port}"):
            assert_forbidden(await http.get(f"{path}/s", headers={"Host": host}), "attacker")
            assert_forbidden(await http.get("/openapi.json", headers={"Host": host}))
        # Another local service's page (a different port) is another origin.
        other = {"Origin": f"http://127.0.0.1:{port + 1}", "Sec-Fetch-Site": "same-site"}
        assert_forbidden(await http.post(path, json={"sessionId": "s"}, headers=other))
        same = {"Origin": origin, "Sec-Fetch-Site": "same-origin", **TEXT_PLAIN}
        assert (await http.post(path, content=BODY, headers=same)).status_code == 201
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
            local = {"Host": host, "Origin": f"http://{host}", "Sec-Fetch-Site": "same-origin"}
            assert (await http.get(f"{path}/s", headers=local)).status_code == 200, host
        mismatched = {"Host": f"localhost:{port}", "Origin": origin}
        assert_forbidden(await http.get(f"{path}/s", headers=mismatched))
        assert (await http.get("/healthz", headers={"Host": "attacker.example"})).status_code == 200


async def _raw(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), timeout=10)
    finally:
        writer.close()
        await writer.wait_closed()


async def test_a_started_server_refuses_a_request_without_host(server):
    answer = await _raw(server.port, b"GET /apps/real/users/u/sessions HTTP/1.0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403"), answer[:200]
    assert b"Host" in answer
    health = await _raw(server.port, b"GET /healthz HTTP/1.0\r\n\r\n")
    assert health.startswith(b"HTTP/1.1 200"), health[:200]


def test_allowed_hosts_from_the_environment(tmp_path: Path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'env.db'}"
    process = ServerProcess(url, SESSION_STATE_ALLOWED_HOSTS=" API , Sessions.Internal ").start()
    try:
        path = f"{process.base_url}/apps/a/users/u/sessions"
        for host in ("api:8000", "sessions.internal"):
            assert httpx.get(path, headers={"Host": host}).status_code == 200, host
        refused = httpx.get(path, headers={"Host": "attacker.example"})
        assert_forbidden(refused, "'attacker.example'", "SESSION_STATE_ALLOWED_HOSTS")
    finally:
        process.stop()
