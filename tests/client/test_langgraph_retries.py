"""SessionStateSaver and SessionStateStore retry as the main client does: a
request answered 503 (or 429, 502, 504) is sent again, with the server's
Retry-After, up to `max_retries` times, when sending it twice is harmless;
copy_thread, which is not, is sent once. A small HTTP server stands in for a
session-state server that is overloaded for a moment."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from session_state_client import ServiceUnavailableError
from session_state_client.langgraph import SessionStateSaver, SessionStateStore
from tests.conftest import free_port

CONFIG = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}


class _Overloaded(BaseHTTPRequestHandler):
    """Answers 503 (Retry-After: 0) to the first `busy` requests, then an
    empty page of checkpoints or an empty batch."""

    busy: ClassVar[int] = 2
    seen: ClassVar[list[str]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        type(self).seen.append(f"{self.command} {self.path.split('?')[0]}")
        if len(type(self).seen) <= type(self).busy:
            body = b'{"status":503,"code":"database_unavailable","title":"Busy"}'
            self.send_response(503)
            self.send_header("Retry-After", "0")
        else:
            answer = {"checkpoints": [], "nextPageToken": None, "results": [[]]}
            body = json.dumps(answer).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def overloaded() -> Iterator[str]:
    _Overloaded.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _Overloaded)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_sync_reads_are_retried_on_503(overloaded: str) -> None:
    with SessionStateSaver(overloaded) as saver:
        assert saver.get_tuple(CONFIG) is None  # type: ignore[arg-type]
    assert _Overloaded.seen == ["GET /apps/langgraph/threads/t1/checkpoints"] * 3


async def test_async_store_batches_are_retried_on_503(overloaded: str) -> None:
    async with SessionStateStore(overloaded) as store:
        assert await store.asearch(("alice",)) == []
    assert _Overloaded.seen == ["POST /apps/langgraph/store/batch"] * 3


async def test_retries_stop_at_max_retries(overloaded: str) -> None:
    async with SessionStateSaver(overloaded, max_retries=1) as saver:
        with pytest.raises(ServiceUnavailableError):
            await saver.aget_tuple(CONFIG)  # type: ignore[arg-type]
    assert len(_Overloaded.seen) == 2


def test_copy_thread_is_sent_once(overloaded: str) -> None:
    with SessionStateSaver(overloaded) as saver, pytest.raises(ServiceUnavailableError):
        saver.copy_thread("t1", "t2")
    assert _Overloaded.seen == ["POST /apps/langgraph/threads/t1/copy"]
