"""End-user tokens end to end: `session-state serve` reading its JWKS from a
URL (a server on 127.0.0.1, the one place plain http is allowed), the Python
clients sending a token from a callable they call per request, a key rotated
at the URL picked up, and the audit trail's JSON lines in the server's log,
on both backends."""

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from session_state_client import AsyncSessionStateClient, SessionStateClient
from session_state_client._exceptions import AuthenticationError, PermissionDeniedError

from .conftest import ServerProcess, free_port
from .token_issuer import AUDIENCE, ISSUER, SigningKey

APP = "travel"


class JwksServer:
    """Serves a JWKS that a test may replace, counting the reads."""

    def __init__(self, *keys: SigningKey) -> None:
        self.document = b""
        self.reads = 0
        self.publish(*keys)
        served = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.reads += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(served.document)))
                self.end_headers()
                self.wfile.write(served.document)

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/.well-known/jwks.json"

    def publish(self, *keys: SigningKey) -> None:
        self.document = json.dumps({"keys": [key.public_jwk() for key in keys]}).encode()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def first_key() -> SigningKey:
    return SigningKey("k1")


@pytest.fixture
def jwks_server(first_key: SigningKey) -> Iterator[JwksServer]:
    server = JwksServer(first_key)
    yield server
    server.close()


@pytest.fixture
def served(database_url: str, jwks_server: JwksServer, tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(
        database_url,
        log=tmp_path / "server.log",
        SESSION_STATE_JWT_JWKS=jwks_server.url,
        SESSION_STATE_JWT_ISSUER=ISSUER,
        SESSION_STATE_JWT_AUDIENCE=AUDIENCE,
        SESSION_STATE_JWT_APPS=APP,
        SESSION_STATE_JWT_JWKS_MIN_REFRESH_SECONDS="0",
        SESSION_STATE_LOG_FORMAT="json",
    ).start()
    yield process
    process.stop()


def audit_lines(log: Path) -> list[dict]:
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("logger") == "session_state.audit"]


def test_the_client_sends_a_fresh_token_per_request_and_a_rotated_key_is_picked_up(
    served, jwks_server, first_key, tmp_path
):
    current = {"key": first_key}
    calls: list[str] = []

    def token() -> str:
        calls.append(current["key"].kid)
        return current["key"].token("u1")

    with SessionStateClient(base_url=served.base_url, token=token, max_retries=0) as client:
        client.create_session(app_name=APP, user_id="u1", session_id="s1")
        client.append_event(app_name=APP, user_id="u1", session_id="s1", event={"author": "user"})
        assert len(client.get_session(app_name=APP, user_id="u1", session_id="s1").events) == 1
        assert calls == ["k1", "k1", "k1"]
        with pytest.raises(PermissionDeniedError):
            client.get_session(app_name=APP, user_id="u2", session_id="s1")

        rotated = SigningKey("k2", "ES256")
        jwks_server.publish(rotated)
        reads = jwks_server.reads
        current["key"] = rotated
        assert client.get_session(app_name=APP, user_id="u1", session_id="s1").id == "s1"
        assert jwks_server.reads == reads + 1
        assert calls[-1] == "k2"

    async def from_the_async_client() -> list[str]:
        async with AsyncSessionStateClient(base_url=served.base_url, token=token) as client:
            listed = await client.list_sessions(app_name=APP, user_id="u1")
            return [session.id for session in listed.sessions]

    assert asyncio.run(from_the_async_client()) == ["s1"]


def test_a_refused_token_is_in_the_audit_trail_without_the_token(served, first_key, tmp_path):
    expired = first_key.token("u1", exp=1_000_000)
    with (
        SessionStateClient(base_url=served.base_url, token=expired, max_retries=0) as client,
        pytest.raises(AuthenticationError) as refused,
    ):
        client.list_sessions(app_name=APP, user_id="u1")
    assert refused.value.status_code == 401
    assert "expired" in str(refused.value)
    served.stop()  # the log is complete
    [line] = [line for line in audit_lines(tmp_path / "server.log")]
    assert line["audit_action"] == "token_refused"
    assert line["audit_outcome"] == "expired"
    assert line["audit_path"] == f"/apps/{APP}/users/u1/sessions"
    assert expired.split(".")[1] not in (tmp_path / "server.log").read_text()


def test_langgraphs_saver_and_store_with_a_token_keep_to_its_user(served, first_key):
    from typing import TypedDict

    from langgraph.graph import START, StateGraph

    from session_state_client.langgraph import SessionStateSaver, SessionStateStore

    class Chat(TypedDict):
        turns: int

    builder = StateGraph(Chat)
    builder.add_node("reply", lambda state: {"turns": state["turns"] + 1})
    builder.add_edge(START, "reply")
    config = {"configurable": {"thread_id": "chat-1"}}

    def token_of(user: str):
        return lambda: first_key.token(user)

    with SessionStateSaver(served.base_url, app_name=APP, token=token_of("ada")) as saver:
        assert builder.compile(checkpointer=saver).invoke({"turns": 0}, config) == {"turns": 1}
        assert builder.compile(checkpointer=saver).get_state(config).values == {"turns": 1}
    with (
        SessionStateSaver(
            served.base_url, app_name=APP, token=token_of("bob"), max_retries=0
        ) as saver,
        pytest.raises(PermissionDeniedError),
    ):
        builder.compile(checkpointer=saver).get_state(config)

    with SessionStateStore(served.base_url, app_name=APP, token=token_of("ada")) as store:
        store.put(("ada", "notes"), "n1", {"text": "window seat"})
        assert store.get(("ada", "notes"), "n1").value == {"text": "window seat"}
        with pytest.raises(PermissionDeniedError):
            store.get(("bob", "notes"), "n1")
