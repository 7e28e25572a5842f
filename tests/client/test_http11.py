"""The async client's own HTTP/1.1 against real sockets: a scripted raw server
for the framings and failures uvicorn never produces, a real `session-state
serve` for keep-alive, and httpx as the reference for what is sent."""

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from session_state_client import (
    APIConnectionError,
    APITimeoutError,
    AsyncSessionStateClient,
    NotFoundError,
)
from session_state_client._http11 import Http11Client

# What the scripted server answers to each request it reads: raw bytes, or None
# to close the connection without answering.
Script = Callable[[bytes], bytes | None]


class ScriptedServer:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[bytes] = []
        self.connections = 0

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                answer = self.script(request)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
                framing = answer.lower()
                delimited = b"content-length" in framing or b"transfer-encoding" in framing
                closing = b"connection: close" in framing or b"x-test-close-idle" in framing
                if closing or not (delimited or b" 204 " in framing):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def scripted() -> AsyncIterator[Callable[[Script], tuple[ScriptedServer, str]]]:
    servers: list[asyncio.Server] = []

    async def start(script: Script) -> tuple[ScriptedServer, str]:
        scripted_server = ScriptedServer(script)
        server = await asyncio.start_server(scripted_server._handle, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return scripted_server, f"http://127.0.0.1:{port}"

    yield start  # type: ignore[misc]
    for server in servers:
        server.close()
        await server.wait_closed()


def _answer(body: bytes, *headers: bytes, status: bytes = b"200 OK") -> bytes:
    lines = [b"HTTP/1.1 " + status, *headers]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _json(body: bytes, *extra: bytes, status: bytes = b"200 OK") -> bytes:
    return _answer(
        body,
        b"content-type: application/json",
        b"content-length: %d" % len(body),
        *extra,
        status=status,
    )


@asynccontextmanager
async def _http11(base_url: str) -> AsyncIterator[Http11Client]:
    client = Http11Client(base_url, {}, 5.0)
    try:
        yield client
    finally:
        await client.aclose()


async def _get(client: Http11Client, path: str = "/") -> httpx.Response:
    return await client.send("GET", path, {}, None, {})


async def test_requests_share_one_kept_alive_connection(scripted):
    server, url = await scripted(lambda request: _json(b'{"ok": true}'))
    async with _http11(url) as client:
        for _ in range(5):
            response = await client.send("POST", "/p", {"q": 1}, b'{"a": 1}', {})
            assert response.json() == {"ok": True}
    assert server.connections == 1
    assert server.requests[0].startswith(b"POST /p?q=1 HTTP/1.1\r\n")
    assert server.requests[0].endswith(b'\r\n\r\n{"a": 1}')


async def test_a_chunked_response_with_trailers_is_read_whole(scripted):
    chunked = _answer(
        b"4\r\nabcd\r\n3;ext=1\r\nefg\r\n0\r\nx-trailer: 1\r\n\r\n", b"transfer-encoding: chunked"
    )
    server, url = await scripted(lambda request: chunked)
    async with _http11(url) as client:
        assert (await _get(client)).content == b"abcdefg"
        assert (await _get(client)).content == b"abcdefg"
    assert server.connections == 1


async def test_connection_close_and_close_delimited_bodies_open_a_new_connection(scripted):
    answers = iter(
        [
            _json(b"1", b"connection: close"),
            _answer(b"until the end", b"content-type: text/plain"),
            _json(b"3"),
        ]
    )

    def script(request: bytes) -> bytes:
        return next(answers)

    server, url = await scripted(script)
    async with _http11(url) as client:
        assert (await _get(client)).content == b"1"
        assert (await _get(client)).content == b"until the end"
        assert (await _get(client)).content == b"3"
    assert server.connections == 3


async def test_interim_responses_are_skipped_and_204_has_no_body(scripted):
    answers = iter(
        [
            b"HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n" + _json(b"[]"),
            _answer(b"", status=b"204 No Content"),
        ]
    )
    _, url = await scripted(lambda request: next(answers))
    async with _http11(url) as client:
        assert (await _get(client)).json() == []
        response = await client.send("DELETE", "/", {}, None, {})
        assert response.status_code == 204 and response.content == b""


async def test_a_connection_the_server_closed_while_idle_is_not_reused(scripted):
    # Answers that keep the connection alive, then the server closes it idle
    # (as uvicorn does after its keep-alive timeout).
    server, url = await scripted(lambda request: _json(b"1", b"x-test-close-idle: 1"))
    async with _http11(url) as client:
        assert (await _get(client)).content == b"1"
        await asyncio.sleep(0.05)
        assert (await _get(client)).content == b"1"
    assert server.connections == 2


async def test_a_kept_connection_dropped_without_an_answer_is_an_error_then_replaced(scripted):
    answers = iter([_json(b"1", b"connection: keep-alive"), None])

    def script(request: bytes) -> bytes | None:
        # The first connection answers once, then the server drops it idle.
        return next(answers, _json(b"2"))

    server, url = await scripted(script)
    async with _http11(url) as client:
        assert (await _get(client)).content == b"1"
        # The server reads the next request on the kept connection, answers
        # nothing and closes: that is a protocol error, not a hang.
        with pytest.raises(httpx.RemoteProtocolError):
            await _get(client)
        # The broken connection was dropped; the next request opens a new one.
        assert (await _get(client)).content == b"2"
    assert server.connections == 2


async def test_malformed_answers_are_protocol_errors(scripted):
    _, url = await scripted(lambda request: b"SSH-2.0-OpenSSH\r\n\r\n")
    async with _http11(url) as client:
        with pytest.raises(httpx.RemoteProtocolError):
            await _get(client)


async def test_a_server_that_does_not_answer_times_out(scripted):
    async def never(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)

    server = await asyncio.start_server(never, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with AsyncSessionStateClient(
            base_url=f"http://127.0.0.1:{port}", timeout=0.3, max_retries=0
        ) as client:
            with pytest.raises(APITimeoutError):
                await client.get_app_state(app_name="a")
    finally:
        server.close()


async def test_a_refused_connection_is_a_connection_error():
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    async with AsyncSessionStateClient(
        base_url=f"http://127.0.0.1:{port}", max_retries=1
    ) as client:
        with pytest.raises(APIConnectionError):
            await client.get_app_state(app_name="a")


async def test_a_cancelled_request_leaves_no_half_read_connection_behind(scripted):
    release = asyncio.Event()

    async def slow_then_fast(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if b"slow" in head:
            await release.wait()
            writer.write(_json(b'"late"'))
        else:
            writer.write(_json(b'"fast"'))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(slow_then_fast, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with _http11(f"http://127.0.0.1:{port}") as client:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2):
                    await _get(client, "/slow")
            release.set()
            # Had the cancelled connection gone back to the pool, this would
            # read the late answer to the other request.
            assert (await _get(client, "/fast")).json() == "fast"
    finally:
        server.close()


async def test_the_client_keeps_alive_against_a_real_server(base_url, app_name):
    async with AsyncSessionStateClient(base_url=base_url) as client:
        assert client._http11 is not None
        await client.create_session(app_name=app_name, user_id="u", session_id="s")
        results = await asyncio.gather(
            *(
                client.append_event(
                    app_name=app_name, user_id="u", session_id="s", event={"author": "a"}
                )
                for _ in range(30)
            )
        )
        assert sorted(result.revision for result in results) == list(range(1, 31))
        with pytest.raises(NotFoundError):
            await client.get_session(app_name=app_name, user_id="u", session_id="missing")
        idle = client._http11._idle
        assert 1 <= len(idle) <= 20


# -- what is sent: the same as httpx sends ------------------------------------


def _parsed(request: bytes) -> tuple[str, str, dict[str, list[str]], dict[str, str], bytes]:
    from urllib.parse import parse_qs, unquote, urlsplit

    head, _, body = request.partition(b"\r\n\r\n")
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, target, _ = request_line.split(" ")
    url = urlsplit(target)
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return method, unquote(url.path), parse_qs(url.query), headers, body


async def _calls(client: AsyncSessionStateClient) -> None:
    await client.append_event(
        app_name="a p/p", user_id="ü", session_id="s", event={"id": "e", "author": "a"}, if_match=3
    )
    await client.list_events(
        app_name="a", user_id="u", session_id="s", order="desc", page_token="x y+z=", page_size=5
    )
    await client.delete_session(app_name="a", user_id="u", session_id="s", delete_memories=True)
    await client.search_memory(app_name="a", user_id="u", query="where & why?")


async def test_requests_are_sent_as_httpx_sends_them(scripted):
    answer = _json(b'{"events": [], "nextPageToken": null, "memories": []}', b'etag: "4"')
    direct_server, direct_url = await scripted(lambda request: answer)
    httpx_server, httpx_url = await scripted(lambda request: answer)
    async with AsyncSessionStateClient(base_url=direct_url, api_key="k" * 32) as direct:
        assert direct._http11 is not None
        await _calls(direct)
    through_httpx = httpx.AsyncClient(base_url=httpx_url)
    async with AsyncSessionStateClient(http_client=through_httpx, api_key="k" * 32) as client:
        assert client._http11 is None
        await _calls(client)
    assert len(direct_server.requests) == len(httpx_server.requests) == 4
    compared = ("authorization", "content-type", "content-length", "if-match", "host")
    for ours, theirs in zip(direct_server.requests, httpx_server.requests, strict=True):
        method, path, query, headers, body = _parsed(ours)
        their_method, their_path, their_query, their_headers, their_body = _parsed(theirs)
        assert (method, path, query, body) == (their_method, their_path, their_query, their_body)
        for name in compared:
            expected = their_headers.get(name)
            if name == "host":
                expected = expected.replace(httpx_url.split(":")[-1], direct_url.split(":")[-1])
            assert headers.get(name) == expected, name


async def test_a_base_url_prefix_is_kept(scripted):
    server, url = await scripted(lambda request: _json(b'{"state": {"k": 1}}'))
    async with AsyncSessionStateClient(base_url=url + "/behind/proxy/") as client:
        assert await client.get_app_state(app_name="a") == {"k": 1}
    assert server.requests[0].startswith(b"GET /behind/proxy/apps/a/state HTTP/1.1\r\n")


async def test_errors_carry_their_request(scripted):
    problem = b'{"code": "session_not_found", "detail": "session \'s\' not found"}'
    _, url = await scripted(lambda request: _json(problem, status=b"404 Not Found"))
    async with AsyncSessionStateClient(base_url=url) as client:
        with pytest.raises(NotFoundError) as raised:
            await client.get_session(app_name="a", user_id="u", session_id="s")
    response = raised.value.response
    assert response.request.method == "GET"
    assert response.request.url.path == "/apps/a/users/u/sessions/s"
    assert "not found" in str(raised.value)


async def test_a_proxy_from_the_environment_is_honoured(scripted, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with AsyncSessionStateClient(base_url="http://session-state.internal:8000") as client:
        assert client._http11 is None and client._http is not None


async def test_a_refused_large_body_leaves_the_client_usable(tmp_path):
    from session_state_client import PayloadTooLargeError
    from tests.conftest import ServerProcess

    url = f"sqlite+aiosqlite:///{tmp_path / 'limit.db'}"
    server = ServerProcess(url, SESSION_STATE_MAX_BODY_BYTES="10000").start()
    try:
        async with AsyncSessionStateClient(base_url=server.base_url, max_retries=0) as client:
            await client.create_session(app_name="a", user_id="u", session_id="s")
            for size in (20_000, 5_000_000):  # answered before the body was read
                with pytest.raises(PayloadTooLargeError):
                    await client.append_event(
                        app_name="a", user_id="u", session_id="s", event={"author": "x" * size}
                    )
                appended = await client.append_event(
                    app_name="a", user_id="u", session_id="s", event={"author": "a"}
                )
                assert appended.persisted
    finally:
        server.stop()
