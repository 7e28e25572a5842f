"""Clients that hold connections open without finishing a request head
(slowloris): a started server, with the head timeout at 1 s, must close them
while serving everyone else, and must leave slow bodies, pipelining and
uvicorn's own keep-alive timeout alone (see app/http/uvicorn_protocol.py)."""

import asyncio
import contextlib
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from session_state.core.config import Settings
from session_state.http import uvicorn_protocol as http_protocol
from tests.conftest import ServerProcess, free_port

TIMEOUT = 1.0
# Room for a busy machine; without the timeout these connections stay open forever.
SLACK = 2.5
KEEP_ALIVE = 5.0  # uvicorn's default timeout_keep_alive
PARTIAL_HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
GET_HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('slow') / 'slow.db'}"
    process = ServerProcess(url, SESSION_STATE_REQUEST_HEAD_TIMEOUT_SECONDS=str(TIMEOUT)).start()
    yield process
    process.stop()


def _connect(server: ServerProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=5)


def _closed_by_peer(sock: socket.socket) -> bool:
    """True when the server has closed (or reset) a readable socket."""
    try:
        data = sock.recv(65536)
    except (ConnectionResetError, BrokenPipeError):
        return True
    assert data == b"", f"unexpected data from the server: {data[:200]!r}"
    return True


def _wait_until_closed(
    sock: socket.socket, within: float, trickle: bytes | None = None, every: float = 0.3
) -> float | None:
    """Seconds until the server closed `sock` (sending `trickle` every `every`
    seconds meanwhile), or None if it was still open after `within` seconds."""
    start = time.monotonic()
    while (elapsed := time.monotonic() - start) < within:
        if trickle is not None:
            try:
                sock.send(trickle)
            except (ConnectionResetError, BrokenPipeError):
                return time.monotonic() - start
        sock.settimeout(min(every, within - elapsed))
        try:
            if _closed_by_peer(sock):
                return time.monotonic() - start
        except TimeoutError:
            continue
    return None


def _read_responses(sock: socket.socket, count: int = 1) -> list[tuple[int, bytes]]:
    """The next `count` responses of a kept-alive connection: status and body of each."""
    sock.settimeout(5)
    data = b""
    responses = []
    while len(responses) < count:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, f"connection closed mid-response: {data!r}"
            data += chunk
        head, _, data = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in lines
            if line.lower().startswith(b"content-length:")
        )
        while len(data) < length:
            chunk = sock.recv(65536)
            assert chunk, "connection closed mid-body"
            data += chunk
        responses.append((int(lines[0].split()[1]), data[:length]))
        data = data[length:]
    assert data == b"", f"more bytes than {count} responses: {data[:200]!r}"
    return responses


def _read_response(sock: socket.socket) -> tuple[int, bytes]:
    return _read_responses(sock)[0]


def _healthz(server: ServerProcess) -> int:
    return httpx.get(f"{server.base_url}/healthz", timeout=5).status_code


def test_a_connection_trickling_a_partial_head_is_closed_while_others_are_served(server):
    with _connect(server) as slow:
        slow.sendall(PARTIAL_HEAD)
        assert _healthz(server) == 200
        elapsed = _wait_until_closed(slow, TIMEOUT + SLACK, trickle=b"a")
    assert elapsed is not None, "a connection trickling its head was never closed"
    assert _healthz(server) == 200


def test_a_connection_that_sends_nothing_is_closed(server):
    with _connect(server) as silent:
        start = time.monotonic()
        assert _healthz(server) == 200
        elapsed = _wait_until_closed(silent, TIMEOUT + SLACK)
        assert elapsed is not None, "a silent connection was never closed"
        assert time.monotonic() - start >= TIMEOUT * 0.9, "closed before the timeout"


def test_hundreds_of_slow_connections_are_all_closed_and_normal_requests_are_served(server):
    count = 300
    selector = selectors.DefaultSelector()
    sockets = []
    try:
        for index in range(count):
            sock = _connect(server)
            sockets.append(sock)
            if index % 2 == 0:  # half trickle a partial head, half send nothing
                sock.sendall(PARTIAL_HEAD)
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, index)
        open_ = set(range(count))
        served_during = 0
        deadline = time.monotonic() + TIMEOUT + SLACK + 1
        while open_ and time.monotonic() < deadline:
            for index in open_:
                if index % 2 == 0:
                    # A closed one raises here; the selector reports it below.
                    with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                        sockets[index].send(b"a")
            if _healthz(server) == 200:
                served_during += 1
            for key, _ in selector.select(timeout=0.3):
                try:
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                except ConnectionResetError:
                    data = b""
                assert data == b"", f"unexpected data: {data[:200]!r}"
                selector.unregister(key.fileobj)
                open_.discard(key.data)
        assert not open_, f"{len(open_)} of {count} slow connections were never closed"
        assert served_during >= 1
        assert all(_healthz(server) == 200 for _ in range(5))
    finally:
        selector.close()
        for sock in sockets:
            sock.close()


def test_a_kept_alive_connection_that_stalls_in_its_second_head_is_closed(server):
    with _connect(server) as sock:
        sock.sendall(GET_HEALTHZ)
        assert _read_response(sock)[0] == 200
        sock.sendall(PARTIAL_HEAD)
        elapsed = _wait_until_closed(sock, TIMEOUT + SLACK)
    assert elapsed is not None, "a stalled second request head was never closed"
    assert elapsed >= TIMEOUT * 0.9, "closed before the timeout"


def test_a_kept_alive_connection_trickling_blank_lines_between_requests_is_closed(server):
    # The parser skips CR/LF between requests without starting a message, while
    # each byte cancels uvicorn's keep-alive timer.
    with _connect(server) as sock:
        sock.sendall(GET_HEALTHZ)
        assert _read_response(sock)[0] == 200
        elapsed = _wait_until_closed(sock, TIMEOUT + SLACK, trickle=b"\r\n")
    assert elapsed is not None, "a connection trickling blank lines was never closed"


def test_a_complete_head_with_a_slow_body_is_not_cut_off(server):
    body = b'{"sessionId": "slow-body"}'
    parts = [body[:8], body[8:16], body[16:]]
    with _connect(server) as sock:
        sock.sendall(
            b"POST /apps/a/users/u/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
        )
        for part in parts:
            time.sleep(0.6)  # 1.8 s in all, longer than the head timeout
            sock.sendall(part)
        status, answer = _read_response(sock)
    assert status == 201, answer


def test_pipelined_requests_are_all_answered(server):
    with _connect(server) as sock:
        sock.sendall(GET_HEALTHZ * 3)
        assert [status for status, _ in _read_responses(sock, 3)] == [200, 200, 200]
        # Still usable afterwards.
        sock.sendall(GET_HEALTHZ)
        assert _read_response(sock)[0] == 200


def test_an_idle_kept_alive_connection_is_closed_by_the_keep_alive_timeout_only(server):
    with _connect(server) as sock:
        sock.sendall(GET_HEALTHZ)
        assert _read_response(sock)[0] == 200
        elapsed = _wait_until_closed(sock, KEEP_ALIVE + SLACK)
    assert elapsed is not None, "an idle kept-alive connection was never closed"
    assert elapsed >= KEEP_ALIVE - 0.5, f"closed after {elapsed:.2f} s, before the keep-alive"


def _children(pid: int) -> set[int]:
    children = set()
    for process in Path("/proc").iterdir():
        if process.name.isdigit():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                # pid (name) state ppid ...: the name may hold spaces.
                parent = (process / "stat").read_text().rsplit(")", 1)[1].split()[1]
                if int(parent) == pid:
                    children.add(int(process.name))
    return children


def _tcp_sockets(port: int) -> dict[int, tuple[str, int]]:
    """The server side of TCP sockets on `port`, by inode: (state, peer port)."""
    sockets = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            local, peer, state, inode = fields[1], fields[2], fields[3], int(fields[9])
            if int(local.rsplit(":", 1)[1], 16) == port and inode:
                sockets[inode] = (state, int(peer.rsplit(":", 1)[1], 16))
    return sockets


def _held_by(pid: int) -> set[int]:
    """The socket inodes process `pid` has open."""
    inodes = set()
    for descriptor in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(FileNotFoundError):
            target = descriptor.readlink().name
            if target.startswith("socket:["):
                inodes.add(int(target[len("socket:[") : -1]))
    return inodes


LISTEN = "0A"  # the state /proc/net/tcp gives a listening socket


def _connections_by_worker(server: ServerProcess) -> dict[int, set[int]]:
    """Each worker process of `server` (a child holding its listening socket):
    the client ports of the connections it accepted."""
    assert server.process is not None
    sockets = _tcp_sockets(server.port)
    accepted = {}
    for child in _children(server.process.pid):
        held = _held_by(child)
        if any(sockets.get(inode, ("", 0))[0] == LISTEN for inode in held):
            accepted[child] = {
                sockets[inode][1]
                for inode in held
                if inode in sockets and sockets[inode][0] != LISTEN
            }
    return accepted


def _slow_connections_on_both_workers(
    server: ServerProcess, at_least: int, within: float
) -> list[socket.socket]:
    """Connections trickling a partial head, opened until there are
    `at_least` and both workers hold some (the kernel picks the worker of
    each)."""
    slow: list[socket.socket] = []
    held: dict[int, set[int]] = {}
    deadline = time.monotonic() + within
    while True:
        slow.append(_connect(server))
        slow[-1].sendall(PARTIAL_HEAD)
        time.sleep(0.02)
        if len(slow) >= at_least:
            ours = {sock.getsockname()[1] for sock in slow}
            held = {pid: ports & ours for pid, ports in _connections_by_worker(server).items()}
            if len(held) == 2 and all(held.values()):
                return slow
        if time.monotonic() > deadline:
            for sock in slow:
                sock.close()
            raise AssertionError(f"not both of 2 workers held a connection: {held}")


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc")
def test_the_timeout_setting_reaches_every_worker_process(tmp_path: Path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'workers.db'}"
    server = ServerProcess(
        url, SESSION_STATE_WORKERS="2", SESSION_STATE_REQUEST_HEAD_TIMEOUT_SECONDS=str(TIMEOUT)
    ).start(timeout=90)  # two workers, each importing the app
    try:
        # The first worker answers the start-up check; the second may still
        # be starting, and takes connections once it is.
        started = _slow_connections_on_both_workers(server, at_least=1, within=60)
        for sock in started:
            sock.close()
        # uvicorn pickles its config into spawned workers: the class crosses by
        # name and each worker reads the timeout (not the 10 s default).
        slow = _slow_connections_on_both_workers(server, at_least=8, within=10)
        try:
            assert all(_wait_until_closed(sock, TIMEOUT + SLACK) is not None for sock in slow)
        finally:
            for sock in slow:
                sock.close()
    finally:
        server.stop()


async def _slow_app(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["path"] == "/slow":
        await asyncio.sleep(TIMEOUT * 1.6)
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    await send({"type": "http.response.body", "body": b"ok"})


def test_a_pipelined_head_waiting_behind_a_long_response_is_not_cut_off(monkeypatch):
    # uvicorn stops reading while a pipelined request waits for the one before
    # it, so the rest of the next head stays unread through no fault of the
    # client. The app here (in this process) has a slow route; the real one has none.
    timeout = Settings(request_head_timeout_seconds=TIMEOUT)
    monkeypatch.setattr(http_protocol, "get_settings", lambda: timeout)
    port = free_port()
    config = uvicorn.Config(
        _slow_app,
        port=port,
        http=http_protocol.RequestHeadTimeoutProtocol,
        lifespan="off",
        log_level="warning",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive(), "the server did not start"
            time.sleep(0.05)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n" + GET_HEALTHZ + PARTIAL_HEAD)
            time.sleep(0.2)
            sock.sendall(b"1\r\n\r\n")
            assert [status for status, _ in _read_responses(sock, 3)] == [200, 200, 200]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
