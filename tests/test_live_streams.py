"""Live session streams (GET .../events/stream, Server-Sent Events): every
change once, in revision order, with ids equal to the append ETags; resume
without gap or repeat; removals and deletion; across two server processes on
PostgreSQL; a slow reader cut off and resuming whole; the browser guard and
API keys as for reads."""

import asyncio
import contextlib
import json
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest

from session_state.core.config import Settings
from session_state.sessions.postgresql_statements import CHANGE_NUMBER
from session_state.stores import open_store
from session_state.streams.live import UserCursor
from session_state.streams.routes import asks_for_event_stream
from session_state_client import AsyncSessionStateClient, SessionStateClient, StreamMessage

from .conftest import ServerProcess, asgi_client

STREAM_ENV = {
    "SESSION_STATE_STREAM_HEARTBEAT_SECONDS": "1",
    "SESSION_STATE_STREAM_SEND_TIMEOUT_SECONDS": "2",
    # Expired sessions are swept (and their expiry announced) within a second.
    "SESSION_STATE_SWEEP_INTERVAL_SECONDS": "1",
}


# What EventSource sends; the user stream's path answers only such a GET.
EVENT_STREAM = {"Accept": "text/event-stream"}


@dataclass(frozen=True)
class Message:
    event: str
    data: str
    id: int | None
    raw_id: str = ""


# Every wait on a stream is bounded: a message that never comes fails the
# test in seconds (a stream's heartbeats would keep it waiting until pytest's
# own timeout).
MESSAGE_WAIT_SECONDS = 15


async def next_message(
    received: AsyncIterator[Message], seconds: float = MESSAGE_WAIT_SECONDS
) -> Message:
    """The stream's next message; a failure if none comes within `seconds`."""
    try:
        return await asyncio.wait_for(anext(received), seconds)
    except TimeoutError:
        raise AssertionError(f"no stream message within {seconds} s") from None


async def messages(response: httpx.Response) -> AsyncIterator[Message]:
    """The stream's messages (comments and retry lines skipped)."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line == "":
            if "event" in fields:
                identifier = fields.get("id", "")
                number = int(identifier) if identifier.isdigit() else None
                yield Message(fields["event"], fields["data"], number, identifier)
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            fields[name] = value


@pytest.fixture(scope="module")
def streaming_servers(
    postgres_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, list[ServerProcess]]]:
    """One server on SQLite; two server processes on one PostgreSQL database."""
    sqlite_url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('streams') / 'streams.db'}"
    started = [ServerProcess(url, **STREAM_ENV) for url in (sqlite_url, postgres_url, postgres_url)]
    try:
        # Started side by side: each takes seconds on a loaded machine.
        with ThreadPoolExecutor(len(started)) as pool:
            list(pool.map(ServerProcess.start, started))
        yield {"sqlite": started[:1], "postgresql": started[1:]}
    finally:
        with ThreadPoolExecutor(len(started)) as pool:
            list(pool.map(ServerProcess.stop, started))


@pytest.fixture(params=["sqlite", "postgresql"])
def servers(
    request: pytest.FixtureRequest, streaming_servers: dict[str, list[ServerProcess]]
) -> list[ServerProcess]:
    chosen = streaming_servers[request.param]
    for process in chosen:
        if process.process is None:  # stopped by the shutdown test
            process.start()
    return chosen


async def new_session(http: httpx.AsyncClient) -> str:
    path = f"/apps/live/users/u{uuid.uuid4().hex[:8]}/sessions"
    created = await http.post(path, json={})
    assert created.status_code == 201
    return f"{path}/{created.json()['id']}"


async def append(http: httpx.AsyncClient, session: str, count: int = 1) -> list[int]:
    """Appends `count` events (one batch when more than one); the ETags."""
    if count == 1:
        answer = await http.post(f"{session}/events", json={"author": "user", "invocationId": "i"})
        assert answer.status_code == 201
        return [int(answer.headers["etag"].strip('"'))]
    events = [{"author": "user", "invocationId": "i"} for _ in range(count)]
    answer = await http.post(f"{session}/events/batch", json={"events": events})
    assert answer.status_code == 201
    last = int(answer.headers["etag"].strip('"'))
    return list(range(last - count + 1, last + 1))


async def collect(
    http: httpx.AsyncClient, session: str, until: int, **headers: str
) -> list[Message]:
    """The stream's messages until one with id `until` (or `deleted`)."""
    got: list[Message] = []
    params = {}
    if "after" in headers:
        params["after"] = headers.pop("after")
    async with http.stream(
        "GET", f"{session}/events/stream", headers=headers, params=params
    ) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        received = messages(response)
        while True:
            message = await next_message(received)
            got.append(message)
            if message.event == "deleted" or (message.id is not None and message.id >= until):
                break
    return got


async def test_every_event_arrives_once_in_revision_order_with_the_append_etags(servers):
    first, last = servers[0], servers[-1]  # two processes on PostgreSQL
    async with (
        httpx.AsyncClient(base_url=first.base_url, timeout=30) as reader,
        httpx.AsyncClient(base_url=last.base_url, timeout=30) as writer,
    ):
        session = await new_session(writer)
        etags: list[int] = []

        async def write() -> None:
            for round_number in range(12):
                etags.extend(await append(writer, session, 1 + round_number % 3))

        async def read() -> list[Message]:
            # 24 events: 12 rounds of 1, 2 or 3.
            return await collect(reader, session, until=24)

        reading = asyncio.create_task(read())
        await asyncio.sleep(0.3)  # the stream is open (it starts at revision 0)
        await write()
        got = await asyncio.wait_for(reading, 30)
    assert [m.id for m in got] == etags == list(range(1, 25))
    assert all(m.event == "appended" for m in got)
    stored = [json.loads(m.data)["id"] for m in got]
    assert len(set(stored)) == 24


async def test_a_resume_mid_stream_while_appends_continue_misses_and_repeats_nothing(servers):
    first, last = servers[0], servers[-1]
    async with (
        httpx.AsyncClient(base_url=first.base_url, timeout=30) as reader,
        httpx.AsyncClient(base_url=last.base_url, timeout=30) as writer,
    ):
        session = await new_session(writer)
        appending = asyncio.create_task(_append_for(writer, session, 40))
        part = await collect(reader, session, until=10, after="0")
        assert part[-1].id == 10
        # Disconnected; appends go on; resume as EventSource would.
        rest = await collect(reader, session, until=40, **{"Last-Event-ID": "10"})
        await appending
    ids = [m.id for m in part] + [m.id for m in rest]
    assert ids == list(range(1, 41))


async def _append_for(http: httpx.AsyncClient, session: str, count: int) -> None:
    for _ in range(count):
        await append(http, session)
        await asyncio.sleep(0.01)


async def test_removals_and_deletion_arrive_and_a_resume_after_them_sees_them(servers):
    first, last = servers[0], servers[-1]
    async with (
        httpx.AsyncClient(base_url=first.base_url, timeout=30) as reader,
        httpx.AsyncClient(base_url=last.base_url, timeout=30) as writer,
    ):
        session = await new_session(writer)
        await append(writer, session, 3)  # revisions 1-3
        stored = (await writer.get(f"{session}/events")).json()["events"]
        removed = await writer.delete(f"{session}/events", params={"last": 2})
        assert removed.headers["etag"] == '"4"'
        await append(writer, session)  # 5
        # A stream resuming after revision 3 reads the removal from storage.
        got = await collect(reader, session, until=5, after="3")
        assert [(m.event, m.id) for m in got] == [("removed", 4), ("appended", 5)]
        assert json.loads(got[0].data) == {
            "removedEventIds": [stored[1]["id"], stored[2]["id"]],
            "revision": 4,
        }
        deleting = asyncio.create_task(collect(reader, session, until=10**9))
        await asyncio.sleep(0.3)
        assert (await writer.delete(session)).status_code == 204
        ended = await asyncio.wait_for(deleting, 10)
    assert [m.event for m in ended] == ["deleted"]


async def test_an_unknown_session_or_a_bad_resume_point_is_a_problem_before_streaming(servers):
    async with httpx.AsyncClient(base_url=servers[0].base_url, timeout=10) as http:
        missing = await http.get("/apps/live/users/u/sessions/nope/events/stream")
        assert missing.status_code == 404
        assert missing.headers["content-type"] == "application/problem+json"
        session = await new_session(http)
        bad = await http.get(f"{session}/events/stream", headers={"Last-Event-ID": "0x10"})
        assert bad.status_code == 400
        assert "Last-Event-ID" in bad.json()["detail"]
        ahead = await http.get(f"{session}/events/stream", params={"after": 7})
        assert ahead.status_code == 422
        assert "revision 0" in ahead.text


async def test_a_slow_reader_is_cut_off_and_resumes_whole(streaming_servers):
    server = streaming_servers["postgresql"][0]
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        session = await new_session(http)
        host, port = server.base_url.removeprefix("http://").split(":")
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect((host, int(port)))
        slow.sendall(f"GET {session}/events/stream HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        await asyncio.sleep(0.3)
        big = "x" * 60_000
        batches = 36  # ~8.6 MB: more than the socket buffers on loopback hold
        for _ in range(batches):
            events = [{"author": "user", "invocationId": "i", "customMetadata": {"t": big}}] * 4
            answer = await http.post(f"{session}/events/batch", json={"events": events})
            assert answer.status_code == 201
        # Nothing read for longer than the send timeout (2 s): the server cuts
        # the reader off (what it had sent may still be read, then the end).
        await asyncio.sleep(4)
        slow.settimeout(5)
        cut = False
        try:
            while slow.recv(1 << 20):
                pass
            cut = True
        except ConnectionResetError:
            cut = True
        except TimeoutError:
            pass
        slow.close()
        assert cut
        got = await collect(http, session, until=4 * batches, after="0")
    assert [m.id for m in got] == list(range(1, 4 * batches + 1))


async def test_a_foreign_origin_is_refused_in_open_mode(tmp_path):
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'guard.db'}")
    async with asgi_client(settings) as http:
        session = await new_session(http)
        refused = await http.get(
            f"{session}/events/stream", headers={"Origin": "https://evil.example"}
        )
    assert refused.status_code == 403


async def test_api_key_scopes_hold_for_streams(tmp_path):
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'keys.db'}",
        api_keys={"k-live-0123456789abcdef": ["live"], "k-other-0123456789abcdef": ["other"]},
    )
    async with asgi_client(settings) as http:
        allowed = {"Authorization": "Bearer k-live-0123456789abcdef"}
        created = await http.post("/apps/live/users/u/sessions", json={}, headers=allowed)
        path = f"/apps/live/users/u/sessions/{created.json()['id']}/events/stream"
        assert (await http.get(path)).status_code == 401
        other = await http.get(path, headers={"Authorization": "Bearer k-other-0123456789abcdef"})
        assert other.status_code == 403


async def test_an_origin_configured_for_cors_may_follow_a_stream(tmp_path):
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'cors.db'}",
        cors_origins=["https://ui.example"],
    )
    async with asgi_client(settings) as http:
        session = await new_session(http)
        preflight = await http.options(
            f"{session}/events/stream",
            headers={
                "Origin": "https://ui.example",
                "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Headers": "last-event-id",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "https://ui.example"
        other = await http.get(
            f"{session}/events/stream", headers={"Origin": "https://evil.example"}
        )
        assert other.status_code == 403


class DroppingProxy:
    """A TCP proxy in front of a server whose connections the test drops."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.writers: list[asyncio.StreamWriter] = []
        self.connections = 0

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writers += [writer, upstream_writer]

        async def pipe(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await source.read(65536):
                    target.write(data)
                    await target.drain()
            target.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    def drop(self) -> None:
        for writer in self.writers:
            writer.transport.abort()
        self.writers = []

    async def close(self) -> None:
        self.drop()
        self.server.close()


@pytest.mark.parametrize("flavour", ["async", "sync"])
async def test_the_clients_follow_a_session_and_resume_by_themselves_after_a_drop(
    streaming_servers, flavour
):
    first, last = streaming_servers["postgresql"]
    proxy = DroppingProxy(first.port)
    proxied = await proxy.start()
    async with httpx.AsyncClient(base_url=last.base_url, timeout=30) as writer:
        session = await new_session(writer)
        app_name, user_id, session_id = session.split("/")[2::2]
        where = {"app_name": app_name, "user_id": user_id, "session_id": session_id}
        await append(writer, session, 5)
        appending = asyncio.create_task(_append_for(writer, session, 25))

        def on_tenth(count: int) -> None:
            if count == 10:
                asyncio.run_coroutine_threadsafe(_dropped(proxy), loop)

        loop = asyncio.get_running_loop()
        if flavour == "async":
            client = AsyncSessionStateClient(base_url=proxied)
            got = []
            stream = aiter(client.stream_events(**where, after=0))
            try:
                while not got or got[-1].revision != 30:
                    got.append(await asyncio.wait_for(anext(stream), MESSAGE_WAIT_SECONDS))
                    if len(got) == 10:
                        proxy.drop()
            finally:
                await client.aclose()
        else:
            sync_client = SessionStateClient(base_url=proxied)

            def follow() -> list[StreamMessage]:
                messages = []
                with sync_client:
                    for message in sync_client.stream_events(**where, after=0):
                        messages.append(message)
                        on_tenth(len(messages))
                        if message.revision == 30:
                            break
                return messages

            following = asyncio.ensure_future(asyncio.to_thread(follow))
            try:
                got = await asyncio.wait_for(asyncio.shield(following), 60)
            except TimeoutError:
                # Ends the thread's read: its connection and client closed.
                await proxy.close()
                sync_client.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(following, 30)
                raise AssertionError("the sync client's stream stalled") from None
        await appending
        await proxy.close()
    assert [m.revision for m in got] == list(range(1, 31))
    assert all(m.event == "appended" and m.data["id"] for m in got)
    assert proxy.connections >= 2  # it did reconnect


async def _dropped(proxy: DroppingProxy) -> None:
    proxy.drop()


async def test_a_user_stream_summarises_each_change_and_resumes_by_its_cursor(servers):
    first, last = servers[0], servers[-1]
    user = f"/apps/live/users/dash{uuid.uuid4().hex[:8]}"
    async with (
        httpx.AsyncClient(base_url=first.base_url, timeout=30) as reader,
        httpx.AsyncClient(base_url=last.base_url, timeout=30) as writer,
        reader.stream("GET", f"{user}/sessions/stream", headers=EVENT_STREAM) as response,
    ):
        assert response.status_code == 200
        received = messages(response)
        session = f"{user}/sessions/s1"
        assert (await writer.post(f"{user}/sessions", json={"sessionId": "s1"})).status_code == 201
        created = await next_message(received)
        assert (created.event, json.loads(created.data)["sessionId"]) == ("created", "s1")
        await append(writer, session, 2)
        appended = await next_message(received)
        assert (appended.event, json.loads(appended.data)["revision"]) == ("appended", 2)
        assert (await writer.delete(f"{session}/events", params={"last": 1})).status_code == 200
        removed = await next_message(received)
        assert (removed.event, json.loads(removed.data)["revision"]) == ("removed", 3)
        assert (await writer.delete(session)).status_code == 204
        deleted = await next_message(received)
        assert (deleted.event, json.loads(deleted.data)) == ("deleted", {"sessionId": "s1"})
        cursor = created.raw_id
    # A resume from the cursor of `created` finds what changed since: the
    # deletion, then the session created after it.
    await writer_post_session(last.base_url, user, "s2")
    resumed = await _user_messages(first, user, 2, cursor)
    assert [_summary(m) for m in resumed] == [("deleted", "s1"), ("created", "s2")]


async def writer_post_session(base_url: str, user: str, session_id: str) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        created = await http.post(f"{user}/sessions", json={"sessionId": session_id})
        assert created.status_code == 201


async def test_a_graceful_shutdown_ends_streams_cleanly(streaming_servers):
    server = streaming_servers["sqlite"][0]
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        session = await new_session(http)
        async with http.stream("GET", f"{session}/events/stream") as response:
            assert response.status_code == 200
            started = time.monotonic()
            stopping = asyncio.create_task(asyncio.to_thread(server.stop))
            # The body ends as a body ends (no protocol error), long before
            # uvicorn's 30 s grace would have run out.
            async with asyncio.timeout(20):
                rest = [line async for line in response.aiter_lines()]
            ended_after = time.monotonic() - started
    await stopping
    assert not [line for line in rest if line.startswith("event:")]
    assert ended_after < 10


def _summary(message: Message) -> tuple[str, str | None]:
    return message.event, json.loads(message.data).get("sessionId")


async def _swept_total(servers: list[ServerProcess]) -> float:
    total = 0.0
    async with httpx.AsyncClient(timeout=30) as http:
        for server in servers:
            text = (await http.get(f"{server.base_url}/metrics")).text
            total += sum(
                float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith("session_state_sessions_swept_total")
            )
    return total


async def _until_swept(servers: list[ServerProcess], total: float) -> None:
    deadline = time.monotonic() + 20
    while await _swept_total(servers) < total:
        assert time.monotonic() < deadline, "the sweeper did not sweep"
        await asyncio.sleep(0.2)


async def _user_messages(
    server: ServerProcess, user: str, count: int, cursor: str | None = None
) -> list[Message]:
    headers = EVENT_STREAM if cursor is None else {**EVENT_STREAM, "Last-Event-ID": cursor}
    async with (
        httpx.AsyncClient(base_url=server.base_url, timeout=30) as reader,
        reader.stream("GET", f"{user}/sessions/stream", headers=headers) as response,
    ):
        assert response.status_code == 200, await response.aread()
        received = messages(response)
        return [await next_message(received, 20) for _ in range(count)]


async def test_a_user_stream_resumed_replays_deletions_and_expiries_once_in_order(servers):
    first, last = servers[0], servers[-1]
    user = f"/apps/live/users/away{uuid.uuid4().hex[:8]}"
    swept_before = await _swept_total(servers)
    async with (
        httpx.AsyncClient(base_url=last.base_url, timeout=30) as writer,
        httpx.AsyncClient(base_url=first.base_url, timeout=30) as reader,
        reader.stream("GET", f"{user}/sessions/stream", headers=EVENT_STREAM) as response,
    ):
        received = messages(response)
        await writer_post_session(last.base_url, user, "s1")
        created = await writer.post(f"{user}/sessions", json={"sessionId": "s2", "ttlSeconds": 1})
        assert created.status_code == 201
        seen = [await next_message(received), await next_message(received)]
        assert [_summary(m) for m in seen] == [("created", "s1"), ("created", "s2")]
    # Away: s1 deleted on one process, s2 expired and swept, s3 created.
    async with httpx.AsyncClient(base_url=last.base_url, timeout=30) as writer:
        assert (await writer.delete(f"{user}/sessions/s1")).status_code == 204
    await _until_swept(servers, swept_before + 1)
    await writer_post_session(last.base_url, user, "s3")

    resumed = await _user_messages(first, user, 3, seen[-1].raw_id)

    assert [_summary(m) for m in resumed] == [
        ("deleted", "s1"),
        ("expired", "s2"),
        ("created", "s3"),
    ]
    # From the deletion's id: the expiry once more, never the deletion.
    again = await _user_messages(first, user, 1, resumed[0].raw_id)
    assert [_summary(m) for m in again] == [("expired", "s2")]


async def test_a_user_stream_announces_an_expiry_as_it_is_swept(servers):
    first, last = servers[0], servers[-1]
    user = f"/apps/live/users/exp{uuid.uuid4().hex[:8]}"
    async with (
        httpx.AsyncClient(base_url=last.base_url, timeout=30) as writer,
        httpx.AsyncClient(base_url=first.base_url, timeout=30) as reader,
        reader.stream("GET", f"{user}/sessions/stream", headers=EVENT_STREAM) as response,
    ):
        received = messages(response)
        created = await writer.post(f"{user}/sessions", json={"sessionId": "s", "ttlSeconds": 1})
        assert created.status_code == 201
        assert _summary(await next_message(received)) == ("created", "s")
        expired = await next_message(received, 20)
    assert _summary(expired) == ("expired", "s")


async def test_a_user_stream_cursor_older_than_the_tombstones_kept_is_told_to_reset(servers):
    server = servers[0]
    user = f"/apps/live/users/old{uuid.uuid4().hex[:8]}"
    cursor = "n0.0."  # before the user's first change and tombstone
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as writer:
        for name in ("s1", "s2"):
            await writer_post_session(server.base_url, user, name)
            assert (await writer.delete(f"{user}/sessions/{name}")).status_code == 204
        # Made-up cursors, past the user's tombstones or past every change
        # number given, are a problem; so is text that is no cursor.
        for made_up in ("n0.9.", f"n{1 << 59}.0."):
            refused = await writer.get(
                f"{user}/sessions/stream", headers={**EVENT_STREAM, "Last-Event-ID": made_up}
            )
            assert refused.status_code == 422, made_up
        for garbled in ("n1.x.s", "n1.0.%00", "n1.0.%ff", "n1.0", "soon"):
            answer = await writer.get(
                f"{user}/sessions/stream", headers={**EVENT_STREAM, "Last-Event-ID": garbled}
            )
            assert answer.status_code == 400, garbled
    store = await open_store(Settings(database_url=server.database_url))
    try:
        # The window passed for the first deletion: only the user's newest is kept.
        assert await store.prune_tombstones(time.time() + 1) >= 1
    finally:
        await store.close()

    reset, *_ = await _user_messages(server, user, 1, cursor)
    assert (reset.event, json.loads(reset.data)["reason"]) == (
        "reset",
        "the cursor is older than the tombstones kept",
    )
    # The reset's id is a fresh cursor: from it, only what comes next.
    await writer_post_session(server.base_url, user, "s3")
    after_reset = await _user_messages(server, user, 1, reset.raw_id)
    assert [_summary(m) for m in after_reset] == [("created", "s3")]
    # Cursors of the former forms (an update time, with or without the
    # tombstone number) are told to reset too.
    for former_cursor in (f"{time.time()!r}:2", f"{time.time()!r}"):
        former, *_ = await _user_messages(server, user, 1, former_cursor)
        assert (former.event, json.loads(former.data)["reason"]) == (
            "reset",
            "the cursor is of a former form",
        )


async def test_a_user_stream_resumed_sends_an_event_stored_with_an_old_time(servers):
    """An event's own time (the client's, as ADK sets it) an hour before the
    cursor's changes: its session's summary still comes after the resume."""
    first, last = servers[0], servers[-1]
    user = f"/apps/live/users/late{uuid.uuid4().hex[:8]}"
    await writer_post_session(last.base_url, user, "s1")
    await writer_post_session(last.base_url, user, "s2")
    seen = await _user_messages(first, user, 2, "n0.0.")
    assert [_summary(m) for m in seen] == [("created", "s1"), ("created", "s2")]
    async with httpx.AsyncClient(base_url=last.base_url, timeout=30) as writer:
        old = {"author": "user", "invocationId": "i", "timestamp": time.time() - 3600}
        answer = await writer.post(f"{user}/sessions/s1/events", json=old)
        assert answer.status_code == 201
    resumed = await _user_messages(first, user, 1, seen[-1].raw_id)
    assert [(m.event, json.loads(m.data)["sessionId"]) for m in resumed] == [("appended", "s1")]
    assert json.loads(resumed[0].data)["revision"] == 1
    assert json.loads(resumed[0].data)["updateTime"] < time.time() - 3000


async def test_a_user_stream_resumed_while_appends_race_sends_every_change_exactly_once(servers):
    """Four sessions appended to at once (on PostgreSQL through both
    processes) while the reader drops its stream every few messages and
    resumes from the last id: no summary twice, each session's revisions
    in order, every session's last revision sent."""
    user = f"/apps/live/users/race{uuid.uuid4().hex[:8]}"
    names = [f"s{number}" for number in range(4)]
    for name in names:
        await writer_post_session(servers[-1].base_url, user, name)
    start = (await _user_messages(servers[0], user, 4, "n0.0."))[-1].raw_id
    rounds = 15
    writers = [httpx.AsyncClient(base_url=server.base_url, timeout=30) for server in servers]

    async def write(number: int) -> None:
        http = writers[number % len(writers)]
        for _ in range(rounds):
            await append(http, f"{user}/sessions/{names[number]}")
            # Paced, so that the resumes meet the appends even where appends
            # are quick (a fast machine finished them within three resumes).
            await asyncio.sleep(0.02)

    got: list[Message] = []
    cursor = start
    resumes = 0  # begun while appends were still being made
    appending = asyncio.gather(*(write(number) for number in range(len(names))))
    try:
        async with httpx.AsyncClient(base_url=servers[0].base_url, timeout=30) as reader:
            deadline = time.monotonic() + 60
            while not _all_at(got, names, rounds):
                assert time.monotonic() < deadline, f"missing: {got}"
                headers = {**EVENT_STREAM, "Last-Event-ID": cursor}
                resumes += not appending.done()
                async with reader.stream("GET", f"{user}/sessions/stream", headers=headers) as r:
                    assert r.status_code == 200
                    received = messages(r)
                    for _ in range(3):  # then drop the stream, and resume
                        try:
                            message = await asyncio.wait_for(anext(received), 2)
                        except TimeoutError:
                            break
                        got.append(message)
                        cursor = message.raw_id
        await appending
    finally:
        for http in writers:
            await http.aclose()
    assert resumes > 3  # the resumes raced the appends
    summaries = [(json.loads(m.data)["sessionId"], json.loads(m.data)["revision"]) for m in got]
    assert all(m.event == "appended" for m in got)
    assert len(summaries) == len(set(summaries)), "a summary was sent twice"
    for name in names:
        revisions = [revision for session, revision in summaries if session == name]
        assert revisions == sorted(revisions) and revisions[-1] == rounds
    assert len({m.raw_id for m in got}) == len(got)


def _all_at(got: list[Message], names: list[str], revision: int) -> bool:
    newest = {json.loads(m.data)["sessionId"]: json.loads(m.data)["revision"] for m in got}
    return all(newest.get(name) == revision for name in names)


async def test_a_transaction_open_before_later_commits_does_not_make_its_change_skipped(
    streaming_servers,
):
    """PostgreSQL numbers a change by its transaction's id, given at its
    first write: a transaction that writes a session row, then stays open
    while later appends commit, commits a number below theirs. The stream
    waits for it (no gap), and sends each change once."""
    first, last = streaming_servers["postgresql"]
    user_id = f"held{uuid.uuid4().hex[:8]}"
    user = f"/apps/live/users/{user_id}"
    for name in ("held", "s1", "s2"):
        await writer_post_session(last.base_url, user, name)
    start = (await _user_messages(first, user, 3, "n0.0."))[-1].raw_id
    connection = await asyncpg.connect(first.database_url.replace("+asyncpg", ""))
    try:
        async with (
            httpx.AsyncClient(base_url=first.base_url, timeout=30) as reader,
            httpx.AsyncClient(base_url=last.base_url, timeout=30) as writer,
            reader.stream(
                "GET", f"{user}/sessions/stream", headers={**EVENT_STREAM, "Last-Event-ID": start}
            ) as response,
        ):
            received = messages(response)
            transaction = connection.transaction()
            await transaction.start()
            # A write of the session row, as a long fork or import would make.
            held = await connection.execute(
                f'UPDATE sessions SET labels = \'{{"held": "yes"}}\','
                f" change_number = {CHANGE_NUMBER}"
                " WHERE app_name = 'live' AND user_id = $1 AND id = 'held'",
                user_id,
            )
            assert held == "UPDATE 1"
            await append(writer, f"{user}/sessions/s1")
            await append(writer, f"{user}/sessions/s2")
            # Both appends committed after the held transaction's first write.
            committed = await connection.fetchval(
                "SELECT count(*) FROM sessions WHERE app_name = 'live' AND user_id = $1"
                " AND revision = 1 AND change_number > pg_current_xact_id()::text::bigint",
                user_id,
            )
            assert committed == 2
            await transaction.commit()
            got = [await next_message(received) for _ in range(3)]
    finally:
        await connection.close()
    # The held change first: its number is the lowest.
    assert [_summary(m) for m in got] == [
        ("created", "held"),
        ("appended", "s1"),
        ("appended", "s2"),
    ]
    # A resume from before them sends the same three, once each.
    again = await _user_messages(first, user, 3, start)
    assert [m.raw_id for m in again] == [m.raw_id for m in got]


async def test_only_a_get_asking_for_an_event_stream_is_the_user_stream(client):
    """Any other GET of .../sessions/stream reads the session whose id is
    `stream` (ADK allows that id)."""
    path = "/apps/live/users/u/sessions/stream"
    missing = await client.get(path, headers={"Accept": "application/json"})
    assert missing.status_code == 404
    assert "Accept: text/event-stream" in missing.json()["detail"]
    created = await client.post(
        "/apps/live/users/u/sessions", json={"sessionId": "stream", "state": {"k": 1}}
    )
    assert created.status_code == 201
    for accept in ("application/json", "*/*", "text/event-stream;q=0", "text/event-stream;q=5"):
        # Bounded: a stream opened instead would never end.
        found = await asyncio.wait_for(client.get(path, headers={"Accept": accept}), 10)
        assert found.status_code == 200, accept
        assert (found.json()["id"], found.json()["state"]) == ("stream", {"k": 1})
        assert found.headers["etag"] == '"0"'


def _answer(response: httpx.Response, session_id: str) -> tuple[int, Any]:
    """A read's status and body, its session id and request id left out."""
    body = json.loads(response.content.replace(f'"{session_id}"'.encode(), b'"the-id"'))
    body.pop("requestId", None)
    return response.status_code, body


async def test_the_session_named_stream_is_read_as_the_session_route_reads_any_session(client):
    """Its query is the session route's, read and checked alike: the same
    answer as a twin session's but for its id."""
    sessions = "/apps/live/users/u/sessions"
    for session_id in ("stream", "twin"):
        created = await client.post(sessions, json={"sessionId": session_id, "state": {"k": 1}})
        assert created.status_code == 201, created.text
        for event_id in ("e1", "e2"):
            document = {"id": event_id, "author": "user", "timestamp": 1.0}
            stored = await client.post(f"{sessions}/{session_id}/events", json=document)
            assert stored.status_code == 201, stored.text
    whole, last, refused = ({}, {"numRecentEvents": 1}, {"numRecentEvents": -1})
    for query in (whole, last, refused):
        named_stream = await client.get(f"{sessions}/stream", params=query)
        twin = await client.get(f"{sessions}/twin", params=query)
        assert _answer(named_stream, "stream") == _answer(twin, "twin"), query
        # The query did what it says: every event, the last one, a 422.
        status, body = _answer(twin, "twin")
        if query is refused:
            assert status == 422 and "numRecentEvents" in body["detail"]
        else:
            assert status == 200 and len(body["events"]) == (2 if query is whole else 1)


def test_event_stream_accept_headers_are_told_apart():
    assert asks_for_event_stream("text/event-stream")
    assert asks_for_event_stream("application/json, Text/Event-Stream; q=0.5")
    assert not asks_for_event_stream("text/event-stream; q=0")
    assert asks_for_event_stream("text/event-stream;q=1.000, */*;q=0.1")
    assert asks_for_event_stream("text/event-stream;Q=0.001")
    assert not asks_for_event_stream("*/*")
    assert not asks_for_event_stream("")


@pytest.mark.parametrize(
    "weight", ["5", "1.5", "1.0001", "0.0001", "-0.5", "1e0", "inf", "nan", "", "0.5x", "\u0660.5"]
)
def test_an_invalid_weight_does_not_ask_for_an_event_stream(weight: str):
    """RFC 9110: a weight is 0 to 1 with at most three decimals; any other
    is no request for the stream (as `q=0` is none)."""
    assert not asks_for_event_stream(f"text/event-stream;q={weight}")


def test_a_user_cursor_reads_back_as_written_whatever_the_session_id():
    for session_id in ("", "s1", "a.b/c d%\u00e9:\u4e2d", "n0.0."):
        cursor = UserCursor(48211, session_id, 4)
        assert cursor.text().isascii()
        assert UserCursor.parse(cursor.text()) == cursor
    assert UserCursor.parse("1795708099.99:4") == UserCursor(0, "", 0, former=True)
    assert UserCursor.parse("1795708099.99") == UserCursor(0, "", 0, former=True)
    assert UserCursor.parse("nan") is None
