"""The sync and async clients are one contract: the same methods and
signatures, the same requests on the wire, the same retries, timeouts and
errors. Each behaviour test runs on both clients against a scripted HTTP
server in a thread (for the failures a real server never produces)."""

import asyncio
import inspect
import json
import socket
import threading
import time
import typing
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import httpx
import pytest

from session_state_client import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AsyncSessionStateClient,
    NotFoundError,
    ServiceUnavailableError,
    SessionStateClient,
    _requests,
)
from session_state_client._coalescing import MIN_PART
from tests.client.both_clients import CLIENTS, open_client

# -- signatures ----------------------------------------------------------------


def _public(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")}


def test_both_clients_have_the_same_public_methods():
    # aclose: asyncio's name for close, on the async client only.
    assert _public(SessionStateClient) == _public(AsyncSessionStateClient) - {"aclose"}
    assert "append_event" in _public(SessionStateClient)


@pytest.mark.parametrize("name", [*sorted(_public(SessionStateClient)), "__init__"])
def test_both_clients_take_the_same_arguments(name):
    sync_method = getattr(SessionStateClient, name)
    async_method = getattr(AsyncSessionStateClient, name)
    sync_signature, async_signature = (
        inspect.signature(sync_method),
        inspect.signature(async_method),
    )
    sync_hints = typing.get_type_hints(sync_method)
    async_hints = typing.get_type_hints(async_method)
    assert list(sync_signature.parameters) == list(async_signature.parameters)
    for parameter in sync_signature.parameters.values():
        other = async_signature.parameters[parameter.name]
        assert (parameter.kind, parameter.default) == (other.kind, other.default), parameter.name
        if parameter.name == "http_client":  # each client's own HTTP library
            assert sync_hints[parameter.name] == httpx.Client | None
            assert async_hints[parameter.name] == aiohttp.ClientSession | None
        elif parameter.name != "self":
            assert sync_hints[parameter.name] == async_hints[parameter.name], parameter.name
    if name == "__init__":
        return
    if name != "close":  # closing differs: the async client's spans event loops
        assert sync_method.__doc__ == async_method.__doc__
    sync_return, async_return = sync_hints["return"], async_hints["return"]
    if typing.get_origin(sync_return) is Iterator:
        # Pages walked: a generator, and an async generator of the same items.
        assert inspect.isasyncgenfunction(async_method)
        assert typing.get_origin(async_return) is AsyncIterator
        assert typing.get_args(sync_return) == typing.get_args(async_return)
    else:
        assert inspect.iscoroutinefunction(async_method)
        assert sync_return == async_return


def test_both_clients_are_context_managers():
    assert inspect.iscoroutinefunction(AsyncSessionStateClient.__aenter__)
    assert inspect.iscoroutinefunction(AsyncSessionStateClient.__aexit__)
    assert callable(SessionStateClient.__enter__) and callable(SessionStateClient.__exit__)


# -- a scripted server ---------------------------------------------------------

# What the server does with a request: answer with a status (a problem body and
# Retry-After: 0), "drop" the connection unanswered, or an Answer.


@dataclass
class Answer:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # before the answer
    trickle: float = 0.0  # between the pieces of the body, sent in five


Action = int | str | Answer


@dataclass
class Seen:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.target).query)

    def json(self) -> Any:
        return json.loads(self.body)


class Scripted(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[Action] = []
        self.default: Callable[[Seen], Answer] = lambda seen: Answer(200, {"state": {}})
        self.seen: list[Seen] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Scripted

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        seen = Seen(
            self.command,
            self.path,
            {name.lower(): value for name, value in self.headers.items()},
            self.rfile.read(length),
        )
        self.server.seen.append(seen)
        action = self.server.script.pop(0) if self.server.script else self.server.default(seen)
        if action == "drop":
            self.close_connection = True
            return
        if isinstance(action, int):
            problem = {"code": "scripted", "detail": "scripted"}
            action = Answer(action, problem, {"Retry-After": "0"})
        assert isinstance(action, Answer)
        time.sleep(action.delay)
        body = b"" if action.body is None else json.dumps(action.body).encode()
        self.send_response(action.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in action.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if not action.trickle:
            self.wfile.write(body)
            return
        piece = -(-len(body) // 5)
        for start in range(0, len(body), piece):
            self.wfile.write(body[start : start + piece])
            self.wfile.flush()
            time.sleep(action.trickle)

    do_GET = do_POST = do_PATCH = do_DELETE = _handle


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    server = Scripted()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_requests, "INITIAL_RETRY_DELAY", 0.001)


def call(kind: str, method: str, options: dict[str, Any], **arguments: Any) -> Any:
    """One call on a new client of that kind."""
    with open_client(kind, **options) as client:
        return getattr(client, method)(**arguments)


def _echo_event(seen: Seen) -> Answer:
    return Answer(201, seen.json(), {"ETag": '"1"'})


SESSION = {"app_name": "a", "user_id": "u", "session_id": "s"}


# -- retries -------------------------------------------------------------------


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("failure", [503, 502, 504, 429, "drop"])
def test_safe_requests_are_retried_with_the_same_event_id(scripted, kind, failure):
    scripted.script = [failure, failure]
    scripted.default = _echo_event
    appended = call(
        kind, "append_event", {"base_url": scripted.url, "max_retries": 3},
        **SESSION, event={"author": "a"},
    )  # fmt: skip
    assert len(scripted.seen) == 3
    assert {seen.json()["id"] for seen in scripted.seen} == {appended.event["id"]}


@pytest.mark.parametrize("kind", CLIENTS)
def test_retries_stop_after_max_retries(scripted, kind):
    scripted.script = [503, 503, 503]
    with pytest.raises(ServiceUnavailableError):
        call(kind, "get_app_state", {"base_url": scripted.url, "max_retries": 2}, app_name="a")
    assert len(scripted.seen) == 3


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("status", [409, 412])
def test_conflicts_and_preconditions_are_never_retried(scripted, kind, status):
    scripted.script = [status]
    with pytest.raises(APIStatusError) as raised:
        call(kind, "get_app_state", {"base_url": scripted.url}, app_name="a")
    assert raised.value.status_code == status
    assert len(scripted.seen) == 1


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("failure", ["drop", 503])
def test_non_idempotent_writes_are_not_retried_after_an_answer_was_possibly_lost(
    scripted, kind, failure
):
    scripted.script = [failure, 503]
    expected = APIConnectionError if failure == "drop" else ServiceUnavailableError
    with pytest.raises(expected):
        call(kind, "patch_state", {"base_url": scripted.url}, **SESSION, state_delta={"k": 1})
    assert [seen.method for seen in scripted.seen] == ["PATCH"]


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_request_that_never_reached_the_server_is_always_retried(kind, monkeypatch):
    delays: list[int] = []
    retry_delay = _requests.retry_delay

    def counted(attempt: int, response: Any) -> float:
        delays.append(attempt)
        return retry_delay(attempt, response)

    monkeypatch.setattr(_requests, "retry_delay", counted)
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    with pytest.raises(APIConnectionError) as raised:
        call(kind, "create_session", {"base_url": url, "max_retries": 2}, app_name="a", user_id="u")
    assert not isinstance(raised.value, APITimeoutError)
    assert delays == [0, 1]  # a create, yet retried: it was never sent


# -- timeouts: a bound on connecting and on each read --------------------------


@pytest.mark.parametrize("kind", CLIENTS)
def test_the_timeout_bounds_each_read_not_the_whole_answer(scripted, kind):
    # Five pieces 0.25 s apart: over a second in all, each wait well under 0.6 s.
    scripted.default = lambda seen: Answer(200, {"state": {"k": "v" * 100}}, trickle=0.25)
    started = time.monotonic()
    state = call(kind, "get_app_state", {"base_url": scripted.url, "timeout": 0.6}, app_name="a")
    assert state == {"k": "v" * 100}
    assert time.monotonic() - started > 1.0


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_server_silent_for_longer_than_the_timeout_times_out(scripted, kind):
    scripted.default = lambda seen: Answer(200, {"state": {}}, delay=1.5)
    options = {"base_url": scripted.url, "timeout": 0.3, "max_retries": 0}
    started = time.monotonic()
    with pytest.raises(APITimeoutError):
        call(kind, "get_app_state", options, app_name="a")
    assert time.monotonic() - started < 1.2


# -- what is sent --------------------------------------------------------------


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("key", ["k\r\nX-Injected: 1", "k\n", "k\r", " k", "kü", "k\x00"])
def test_an_api_key_that_cannot_be_a_header_is_refused_before_anything_is_sent(
    scripted, kind, key, monkeypatch
):
    with pytest.raises(ValueError, match="api_key"):
        call(kind, "get_app_state", {"base_url": scripted.url, "api_key": key}, app_name="a")
    if "\x00" not in key:  # the environment cannot hold a NUL
        monkeypatch.setenv("SESSION_STATE_API_KEY", key)
        with pytest.raises(ValueError, match="api_key"):
            call(kind, "get_app_state", {"base_url": scripted.url}, app_name="a")
    assert scripted.seen == []


@pytest.mark.parametrize("kind", CLIENTS)
def test_the_api_key_is_sent_as_a_bearer_token(scripted, kind, monkeypatch):
    call(kind, "get_app_state", {"base_url": scripted.url, "api_key": "k-123"}, app_name="a")
    monkeypatch.setenv("SESSION_STATE_API_KEY", "k-env")
    call(kind, "get_app_state", {"base_url": scripted.url}, app_name="a")
    assert [seen.headers["authorization"] for seen in scripted.seen] == [
        "Bearer k-123",
        "Bearer k-env",
    ]


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_token_is_sent_in_place_of_the_api_key_and_a_callable_is_read_per_request(
    scripted, kind, monkeypatch
):
    monkeypatch.setenv("SESSION_STATE_API_KEY", "k-env")
    call(kind, "get_app_state", {"base_url": scripted.url, "token": "t.o.k"}, app_name="a")
    issued = iter(["t.1.x", "t.2.x"])
    with open_client(kind, base_url=scripted.url, token=lambda: next(issued)) as client:
        client.get_app_state(app_name="a")
        client.get_app_state(app_name="a")
    assert [seen.headers["authorization"] for seen in scripted.seen] == [
        "Bearer t.o.k",
        "Bearer t.1.x",
        "Bearer t.2.x",
    ]


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_token_that_cannot_be_a_header_or_beside_a_key_is_refused_before_sending(scripted, kind):
    with pytest.raises(ValueError, match="not both"):
        call(kind, "get_app_state", {"base_url": scripted.url, "api_key": "k", "token": "t"})
    with pytest.raises(ValueError, match="token"):
        call(kind, "get_app_state", {"base_url": scripted.url, "token": "t\r\nX: 1"}, app_name="a")
    with pytest.raises(ValueError, match="token"):
        call(
            kind, "get_app_state", {"base_url": scripted.url, "token": lambda: "t\n"}, app_name="a"
        )
    with pytest.raises(TypeError, match="token"):
        call(kind, "get_app_state", {"base_url": scripted.url, "token": 42}, app_name="a")
    assert scripted.seen == []


def _calls(kind: str, url: str) -> None:
    options = {"base_url": url, "api_key": "k" * 32}
    call(
        kind, "append_event", options,
        app_name="a p/p", user_id="ü", session_id="..", event={"id": "e", "author": "a"},
        if_match=3,
    )  # fmt: skip
    call(
        kind, "list_events", options,
        **SESSION, order="desc", page_token="x y+z=&", page_size=5, after_timestamp=1.5,
    )  # fmt: skip
    call(kind, "delete_session", options, **SESSION, delete_memories=True)
    call(kind, "search_memory", options, app_name="a", user_id="u", query="where & why?")
    call(kind, "erase_app", options, app_name="a p/p & q")


def test_a_huge_identifier_is_encoded_but_never_kept():
    """Path segments are cached (a client names the same sessions again and
    again), but only as long as the server's identifiers: a huge one, which
    the server refuses, is encoded each time and does not stay in memory."""
    from session_state_client import _requests

    huge = "é/" * 50_000
    _requests._cached_segment.cache_clear()
    call = _requests.append_event("a", "u", huge, {"id": "e"}, None)
    assert call.path == "/apps/a/users/u/sessions/" + "%C3%A9%2F" * 50_000 + "/events"
    assert _requests._cached_segment.cache_info().currsize == 2  # "a" and "u" only


def test_both_clients_send_the_same_requests(scripted):
    def answer(seen: Seen) -> Answer:
        if seen.method == "DELETE":
            return Answer(204)
        body = {"events": [], "nextPageToken": None, "memories": [], "id": "e", "author": "a"}
        return Answer(200, body, {"ETag": '"4"'})

    scripted.default = answer
    _calls("sync", scripted.url)
    _calls("async", scripted.url)
    assert len(scripted.seen) == 10
    compared = ("authorization", "content-type", "if-match", "host")
    for sync_seen, async_seen in zip(scripted.seen[:5], scripted.seen[5:], strict=True):
        assert sync_seen.method == async_seen.method
        # The same bytes in the path ('/' as %2F, '..' escaped), the same query.
        assert sync_seen.path == async_seen.path
        assert sync_seen.query == async_seen.query
        assert sync_seen.body == async_seen.body
        # (aiohttp says "Content-Length: 0" for an empty DELETE; httpx says nothing)
        length = sync_seen.headers.get("content-length", "0")
        assert length == async_seen.headers.get("content-length", "0")
        for name in compared:
            assert sync_seen.headers.get(name) == async_seen.headers.get(name), name
    assert scripted.seen[0].path == "/apps/a%20p%2Fp/users/%C3%BC/sessions/%2E%2E/events"
    assert scripted.seen[1].query["pageToken"] == ["x y+z=&"]
    # An app erasure names the app twice: in the path, and as its confirmation.
    assert scripted.seen[4].path == "/apps/a%20p%2Fp%20%26%20q"
    assert scripted.seen[4].query == {"confirm": ["a p/p & q"]}


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_memory_search_from_a_server_without_match_fields_still_parses(scripted, kind):
    entry = {"id": "m", "author": "user", "timestamp": "2026-01-01T00:00:00Z", "content": {}}
    scripted.default = lambda seen: Answer(200, {"memories": [entry]})
    found = call(
        kind, "search_memory", {"base_url": scripted.url}, app_name="a", user_id="u", query="q"
    )
    (memory,) = found.memories
    assert (memory.id, memory.matched_by, memory.score) == ("m", None, None)
    assert "mode" not in scripted.seen[0].query


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_base_url_prefix_is_kept(scripted, kind):
    scripted.default = lambda seen: Answer(200, {"state": {"k": 1}})
    options = {"base_url": scripted.url + "/behind/proxy/"}
    assert call(kind, "get_app_state", options, app_name="a") == {"k": 1}
    assert scripted.seen[0].target == "/behind/proxy/apps/a/state"


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_proxy_from_the_environment_is_used(scripted, kind, monkeypatch):
    for name in ("NO_PROXY", "no_proxy", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", scripted.url)
    options = {"base_url": "http://session-state.internal:8000"}
    assert call(kind, "get_app_state", options, app_name="a") == {}
    # A proxy gets the absolute URL.
    assert scripted.seen[0].target == "http://session-state.internal:8000/apps/a/state"


# -- errors --------------------------------------------------------------------


@pytest.mark.parametrize("kind", CLIENTS)
def test_errors_carry_the_response_and_its_request(scripted, kind):
    problem = {"code": "session_not_found", "detail": "session 's' not found"}
    scripted.default = lambda seen: Answer(404, problem, {"X-Request-ID": "r-1"})
    with pytest.raises(NotFoundError) as raised:
        call(kind, "get_session", {"base_url": scripted.url}, **SESSION)
    error = raised.value
    assert (error.status_code, error.code, error.request_id) == (404, "session_not_found", "r-1")
    assert error.body == problem and "not found" in str(error)
    # The same type on both clients: an httpx.Response with its request.
    assert isinstance(error.response, httpx.Response)
    assert error.response.json() == problem
    assert error.response.request.method == "GET"
    assert error.response.request.url.path == "/apps/a/users/u/sessions/s"


@pytest.mark.parametrize("kind", CLIENTS)
def test_an_answer_that_is_not_http_is_a_connection_error(kind):
    def garbage(connection: socket.socket) -> None:
        connection.recv(65536)
        connection.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")
        connection.close()

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        thread = threading.Thread(target=lambda: garbage(listener.accept()[0]), daemon=True)
        thread.start()
        with pytest.raises(APIConnectionError):
            call(kind, "get_app_state", {"base_url": url, "max_retries": 0}, app_name="a")


# -- your own HTTP client ------------------------------------------------------


def test_an_http_client_of_your_own_is_used_and_left_open(scripted):
    with httpx.Client(headers={"X-Mine": "1"}) as http:
        client = SessionStateClient(base_url=scripted.url, http_client=http, api_key="k")
        assert client.get_app_state(app_name="a") == {}
        client.close()
        assert not http.is_closed

    async def run() -> None:
        async with aiohttp.ClientSession(headers={"X-Mine": "1"}) as http:
            client = AsyncSessionStateClient(base_url=scripted.url, http_client=http, api_key="k")
            assert await client.get_app_state(app_name="a") == {}
            await client.close()
            assert not http.closed

    asyncio.run(run())
    assert [seen.headers.get("x-mine") for seen in scripted.seen] == ["1", "1"]
    assert {seen.headers["authorization"] for seen in scripted.seen} == {"Bearer k"}


def test_the_async_client_follows_its_caller_from_event_loop_to_event_loop(scripted):
    client = AsyncSessionStateClient(base_url=scripted.url)
    for _ in range(3):  # as ADK's sync Runner: each call on a new loop
        assert asyncio.run(client.get_app_state(app_name="a")) == {}

    async def close() -> None:
        await client.close()

    asyncio.run(close())
    assert len(scripted.seen) == 3


# -- appends sent together (async client) ----------------------------------------


def _appends_behind_two(url: str, count: int) -> list[Any]:
    """`count` appends to as many sessions through one async client: the
    first two each made in a turn of the loop of its own (so each goes
    alone, and both are in flight), the others at once, behind them."""

    async def run() -> list[Any]:
        async with AsyncSessionStateClient(base_url=url, max_retries=2) as client:

            def append(n: int) -> "asyncio.Task[Any]":
                return asyncio.create_task(
                    client.append_event(
                        app_name="a", user_id="u", session_id=f"s{n}", event={"author": "a"}
                    )
                )

            leads = []
            for n in range(2):
                leads.append(append(n))
                await asyncio.sleep(0.05)
            rest = [append(n) for n in range(2, count)]
            return await asyncio.gather(*leads, *rest, return_exceptions=True)

    return asyncio.run(run())


@pytest.mark.parametrize("count", [4, 2 * MIN_PART])
def test_appends_made_in_one_turn_of_the_loop_go_together(scripted, count):
    """Nothing in flight: an append made alone goes alone; those made in the
    same turn of the event loop (as the conversations one answer woke) go
    together: in one request when there are too few for two parts of
    MIN_PART, else split between the app's two free requests, oldest first."""

    def answer(seen: Seen) -> Answer:
        if seen.path == "/apps/a/appends":
            results = [
                {"status": 201, "revision": 1, "event": item["event"]}
                for item in seen.json()["appends"]
            ]
            return Answer(200, {"results": results})
        return Answer(201, seen.json(), {"ETag": '"1"'})

    scripted.default = answer

    async def run() -> list[Any]:
        async with AsyncSessionStateClient(base_url=scripted.url) as client:

            def append(n: int) -> Any:
                return client.append_event(
                    app_name="a", user_id="u", session_id=f"s{n}", event={"author": "a"}
                )

            alone = await append(0)
            return [alone, *await asyncio.gather(*(append(n) for n in range(1, count + 1)))]

    appended = asyncio.run(run())
    assert [result.revision for result in appended] == [1] * (count + 1)
    assert scripted.seen[0].path == "/apps/a/users/u/sessions/s0/events"
    groups = [[item["sessionId"] for item in seen.json()["appends"]] for seen in scripted.seen[1:]]
    made = [f"s{n}" for n in range(1, count + 1)]
    if count < 2 * MIN_PART:
        assert groups == [made]
    else:
        assert sorted(groups) == [made[:MIN_PART], made[MIN_PART:]]


def test_a_sessions_appends_made_in_one_turn_stay_in_one_request_in_order(scripted):
    """Split among the free requests, a session's appends still go in one
    request, in the order they were made (two requests run at once)."""

    def answer(seen: Seen) -> Answer:
        if seen.path != "/apps/a/appends":
            return Answer(201, seen.json(), {"ETag": '"1"'})
        results = [
            {"status": 201, "revision": 1, "event": item["event"]}
            for item in seen.json()["appends"]
        ]
        return Answer(200, {"results": results})

    scripted.default = answer

    async def run() -> list[Any]:
        async with AsyncSessionStateClient(base_url=scripted.url) as client:
            client._appends.min_part = 1  # split among the free requests
            sessions = ["s1", "s2", "s1", "s3"]
            return await asyncio.gather(
                *(
                    client.append_event(
                        app_name="a", user_id="u", session_id=session, event={"id": f"e{n}"}
                    )
                    for n, session in enumerate(sessions)
                )
            )

    asyncio.run(run())
    together, alone = scripted.seen
    if together.path != "/apps/a/appends":
        together, alone = alone, together
    sent = [(item["sessionId"], item["event"]["id"]) for item in together.json()["appends"]]
    assert sent == [("s1", "e0"), ("s2", "e1"), ("s1", "e2")]
    assert alone.path == "/apps/a/users/u/sessions/s3/events" and alone.json()["id"] == "e3"


def test_appends_made_at_once_go_alone_when_not_together(scripted):
    """`appends_together=False` (a gateway that passes only the single
    append's route): appends made at once go as single appends, each a
    request of its own, through the ADK adapter too."""
    from google.adk.events import Event
    from google.adk.sessions import Session as AdkSession

    from session_state_client.adk import HttpSessionService

    def answer(seen: Seen) -> Answer:
        return Answer(201, seen.json(), {"ETag": '"1"'})

    scripted.default = answer

    async def run() -> None:
        service = HttpSessionService(base_url=scripted.url, appends_together=False)
        sessions = [AdkSession(app_name="a", user_id="u", id=f"s{n}") for n in range(3)]
        try:
            await asyncio.gather(
                *(
                    service.append_event(session, Event(id=f"e{n}", author="agent"))
                    for n, session in enumerate(sessions)
                )
            )
        finally:
            await service.close()

    asyncio.run(run())
    assert sorted(seen.path for seen in scripted.seen) == [
        f"/apps/a/users/u/sessions/s{n}/events" for n in range(3)
    ]


def test_the_appends_gathered_by_a_cancelled_caller_still_go(scripted):
    """The caller whose append was to carry those made in the same turn is
    cancelled before its request leaves: its append is never sent, the
    others go (together, in one request: too few for two parts)."""

    def answer(seen: Seen) -> Answer:
        if seen.path == "/apps/a/appends":
            results = [
                {"status": 201, "revision": 1, "event": item["event"]}
                for item in seen.json()["appends"]
            ]
            return Answer(200, {"results": results})
        return Answer(201, seen.json(), {"ETag": '"1"'})

    scripted.default = answer

    async def run() -> list[Any]:
        async with AsyncSessionStateClient(base_url=scripted.url) as client:
            appends = [
                asyncio.create_task(
                    client.append_event(
                        app_name="a", user_id="u", session_id=f"s{n}", event={"author": "a"}
                    )
                )
                for n in range(3)
            ]
            await asyncio.sleep(0)  # each has made its append; the first gathers
            appends[0].cancel()
            return await asyncio.gather(*appends, return_exceptions=True)

    cancelled, *appended = asyncio.run(run())
    assert isinstance(cancelled, asyncio.CancelledError)
    assert [result.revision for result in appended] == [1, 1]
    assert [seen.path for seen in scripted.seen] == ["/apps/a/appends"]
    assert [item["sessionId"] for item in scripted.seen[0].json()["appends"]] == ["s1", "s2"]


def test_an_append_answered_503_among_others_is_retried_alone(scripted):
    """The first two appends are in flight (slow), the next two wait and go
    together; the server answers one of those 503 (its database went away
    for it), which is then sent again alone, with the same event id."""
    singles = 0

    def answer(seen: Seen) -> Answer:
        nonlocal singles
        if seen.path == "/apps/a/appends":
            first, _ = seen.json()["appends"]
            unavailable = {"code": "database_unavailable", "status": 503, "detail": "away"}
            results = [
                {"status": 201, "revision": 1, "event": first["event"]},
                {"status": 503, "problem": unavailable},
            ]
            return Answer(200, {"results": results})
        singles += 1
        return Answer(201, seen.json(), {"ETag": '"1"'}, delay=0.5 if singles <= 2 else 0.0)

    scripted.default = answer
    appended = _appends_behind_two(scripted.url, 4)
    assert [result.revision for result in appended] == [1, 1, 1, 1]
    paths = [seen.path.rsplit("/", 2)[-1] for seen in scripted.seen]
    assert paths == ["events", "events", "appends", "events"]
    together, again = scripted.seen[2].json()["appends"], scripted.seen[3]
    assert again.path == f"/apps/a/users/u/sessions/{together[1]['sessionId']}/events"
    assert again.json()["id"] == together[1]["event"]["id"]


def test_appends_sent_together_are_sent_again_together_after_a_lost_answer(scripted):
    """The request of appends together loses its answer (the connection
    drops): it is sent again whole, the same body (the same event ids),
    and every caller gets its result."""
    singles = 0
    together: list[Seen] = []

    def answer(seen: Seen) -> Action:
        nonlocal singles
        if seen.path == "/apps/a/appends":
            together.append(seen)
            if len(together) == 1:
                return "drop"
            results = [
                {"status": 201, "revision": 1, "event": item["event"]}
                for item in seen.json()["appends"]
            ]
            return Answer(200, {"results": results})
        singles += 1
        return Answer(201, seen.json(), {"ETag": '"1"'}, delay=0.5 if singles <= 2 else 0.0)

    scripted.default = answer
    appended = _appends_behind_two(scripted.url, 5)
    assert [result.revision for result in appended] == [1] * 5
    assert len(together) == 2 and together[0].body == together[1].body
    assert len(together[0].json()["appends"]) == 3
