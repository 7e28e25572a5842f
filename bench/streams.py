"""Live streams: delivery latency across processes, memory per
idle stream, and append latency with idle subscribers.

Two `serve` processes on one PostgreSQL database (one machine): readers
follow sessions on process A while writers append through process B, so
every message crosses processes by LISTEN/NOTIFY.

- delivery: 4 sessions appended to concurrently (each append answered, then
  the next), one reader per session; latency is from the append's answer to
  the message with its revision arriving at the reader (p50, p99).
- idle memory: process A's RSS before and after `--idle` streams are opened
  (raw sockets, nothing sent after the request), per stream.
- append latency: p50/p99 of sequential appends answered by process A with
  0, 200 and 1000 idle streams open on it (following another session).
- fan-out: storage reads per change with 50 streams following one session in
  one process (the app in-process, streams driven directly, appends through
  its HTTP API), each stream reading alone and then sharing reads, side by
  side in one run (the counter session_state_live_stream_reads_total).

    python -m bench.streams [--appends 200] [--idle 1000] [--fanout-only]
    python -m bench.streams --quick   # 20 appends, 0/20/100 idle streams, 10 followers

Figures go to bench/results/<name>.json (streams.json).
"""

import argparse
import asyncio
import json
import socket
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from bench import RESULTS
from tests.conftest import (
    ServerProcess,
    _async_url,
    create_postgres_database,
    drop_postgres_database,
    migrate,
)

EVENT = {"author": "agent", "invocationId": "bench", "content": {"parts": [{"text": "step"}]}}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise LookupError("VmRSS")


async def _session(http: httpx.AsyncClient, user: str) -> str:
    created = await http.post(f"/apps/bench-streams/users/{user}/sessions", json={})
    created.raise_for_status()
    return f"/apps/bench-streams/users/{user}/sessions/{created.json()['id']}"


async def _delivery(reader_url: str, writer_url: str, appends: int) -> dict[str, float]:
    answered: dict[tuple[int, int], float] = {}
    arrived: dict[tuple[int, int], float] = {}
    async with (
        httpx.AsyncClient(base_url=reader_url, timeout=60) as reader,
        httpx.AsyncClient(base_url=writer_url, timeout=60) as writer,
    ):
        sessions = [await _session(writer, f"delivery-{n}") for n in range(4)]
        ready = asyncio.Event()
        opened = 0

        async def follow(index: int, session: str) -> None:
            nonlocal opened
            async with reader.stream("GET", f"{session}/events/stream") as response:
                opened += 1
                if opened == len(sessions):
                    ready.set()
                async for line in response.aiter_lines():
                    if line.startswith("id: "):
                        revision = int(line[4:])
                        arrived[(index, revision)] = time.perf_counter()
                        if revision == appends:
                            return

        async def write(index: int, session: str) -> None:
            await ready.wait()
            for _ in range(appends):
                answer = await writer.post(f"{session}/events", json=EVENT)
                answered[(index, int(answer.headers["etag"].strip('"')))] = time.perf_counter()

        await asyncio.gather(
            *(follow(n, s) for n, s in enumerate(sessions)),
            *(write(n, s) for n, s in enumerate(sessions)),
        )
    # A message may arrive before its append's answer is read: 0 then.
    latencies = [max(0.0, arrived[key] - answered[key]) for key in answered]
    return {
        "messages": len(arrived),
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * _percentile(latencies, 0.99),
    }


async def _user_delivery(reader_url: str, writer_url: str, appends: int) -> dict[str, float]:
    """The user stream's delivery: 4 sessions of one user appended to at
    once on one process, followed by one user stream on the other. A summary
    at revision r delivers every append of its session up to r (summaries
    coalesce)."""
    answered: dict[tuple[str, int], float] = {}
    arrived: dict[tuple[str, int], float] = {}
    user = f"user-delivery-{time.time_ns()}"
    async with (
        httpx.AsyncClient(base_url=reader_url, timeout=60) as reader,
        httpx.AsyncClient(base_url=writer_url, timeout=60) as writer,
    ):
        sessions = [await _session(writer, user) for _ in range(4)]
        ids = [session.rsplit("/", 1)[1] for session in sessions]
        ready = asyncio.Event()

        async def follow() -> None:
            newest = dict.fromkeys(ids, 0)
            path = f"/apps/bench-streams/users/{user}/sessions/stream"
            headers = {"Accept": "text/event-stream"}
            async with reader.stream("GET", path, headers=headers) as response:
                ready.set()
                async for line in response.aiter_lines():
                    if not line.startswith("data: "):
                        continue
                    summary = json.loads(line[6:])
                    now = time.perf_counter()
                    session_id, revision = summary["sessionId"], summary["revision"]
                    for number in range(newest[session_id] + 1, revision + 1):
                        arrived[(session_id, number)] = now
                    newest[session_id] = max(newest[session_id], revision)
                    if all(value >= appends for value in newest.values()):
                        return

        async def write(session: str) -> None:
            await ready.wait()
            await asyncio.sleep(0.2)  # the stream has read its start
            session_id = session.rsplit("/", 1)[1]
            for _ in range(appends):
                answer = await writer.post(f"{session}/events", json=EVENT)
                revision = int(answer.headers["etag"].strip('"'))
                answered[(session_id, revision)] = time.perf_counter()

        await asyncio.wait_for(
            asyncio.gather(follow(), *(write(session) for session in sessions)), 300
        )
    latencies = [max(0.0, arrived[key] - answered[key]) for key in answered]
    return {
        "appends": len(answered),
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * _percentile(latencies, 0.99),
    }


def _open_idle(base_url: str, session: str, count: int) -> list[socket.socket]:
    host, port = base_url.removeprefix("http://").split(":")
    sockets = []
    for _ in range(count):
        connection = socket.create_connection((host, int(port)))
        connection.sendall(f"GET {session}/events/stream HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        sockets.append(connection)
    for connection in sockets:  # every stream answered (its opening read)
        connection.settimeout(30)
        assert connection.recv(4096).startswith(b"HTTP/1.1 200")
    return sockets


async def _append_latency(base_url: str, session: str, appends: int) -> dict[str, float]:
    times = []
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        for _ in range(appends):
            started = time.perf_counter()
            (await http.post(f"{session}/events", json=EVENT)).raise_for_status()
            times.append(time.perf_counter() - started)
    return {"p50_ms": 1000 * statistics.median(times), "p99_ms": 1000 * _percentile(times, 0.99)}


async def _reads_per_change(url: str, followers: int, changes: int) -> dict[str, float]:
    from session_state.core.config import Settings
    from session_state.core.metrics import LIVE_STREAM_READS
    from session_state.main import create_app
    from session_state.sessions.domain import SessionKey
    from session_state.streams.live import SessionStream

    app = create_app(Settings(database_url=url, sweep_interval_seconds=0))
    figures: dict[str, float] = {}
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as http,
    ):
        service = app.state.service
        for shared in (False, True):
            path = await _session(http, f"fanout-{shared}")
            _, _, _, _, user, _, session_id = path.split("/")
            key = SessionKey("bench-streams", user, session_id)
            streams = [
                SessionStream(
                    service.store, app.state.changes, key, heartbeat_seconds=15, share_reads=shared
                )
                for _ in range(followers)
            ]
            for stream in streams:
                await stream.open(None, after_field=["query", "after"])

            async def follow(stream: SessionStream) -> None:
                async for message in stream.messages():
                    if message is not None and message.id == changes:
                        return

            reads_before = LIVE_STREAM_READS._value.get()
            following = [asyncio.create_task(follow(stream)) for stream in streams]
            for _ in range(changes):
                (await http.post(f"{path}/events", json=EVENT)).raise_for_status()
                await asyncio.sleep(0.02)  # a change at a time, as a chat produces them
            await asyncio.wait_for(asyncio.gather(*following), 60)
            reads = LIVE_STREAM_READS._value.get() - reads_before
            figures["shared" if shared else "alone"] = reads / changes
    return {"followers": followers, "changes": changes, **figures}


def measure(
    appends: int,
    idle: int,
    steps: tuple[int, ...] = (0, 200, 1000),
    fanout: tuple[int, int] = (50, 20),
) -> dict[str, Any]:
    """`steps`: the idle streams open while append latency is measured;
    `fanout`: followers of one session, and changes made to it."""
    database = create_postgres_database("streams_bench")
    url = _async_url(database)
    servers: list[ServerProcess] = []
    try:
        migrate(url)
        env = {"SESSION_STATE_SWEEP_INTERVAL_SECONDS": "0", "SESSION_STATE_LOG_LEVEL": "warning"}
        servers = [ServerProcess(url, **env).start(), ServerProcess(url, **env).start()]
        reader, writer = servers
        results: dict[str, Any] = {
            "delivery": asyncio.run(_delivery(reader.base_url, writer.base_url, appends)),
            "user_delivery": asyncio.run(_user_delivery(reader.base_url, writer.base_url, appends)),
            "fanout": asyncio.run(_reads_per_change(url, *fanout)),
        }

        async def sessions() -> tuple[str, str]:
            async with httpx.AsyncClient(base_url=reader.base_url) as http:
                return await _session(http, "idle"), await _session(http, "appended")

        idle_session, appended = asyncio.run(sessions())
        assert reader.process is not None
        pid = reader.process.pid
        rows = []
        opened: list[socket.socket] = []
        before = 0
        for subscribers in steps:
            opened += _open_idle(reader.base_url, idle_session, subscribers - len(opened))
            time.sleep(1)
            if subscribers == 0:
                before = _rss_kib(pid)
            rows.append(
                {
                    "idle_streams": subscribers,
                    **asyncio.run(_append_latency(reader.base_url, appended, appends)),
                }
            )
        results["append_latency"] = rows
        opened += _open_idle(reader.base_url, idle_session, max(idle - len(opened), 0))
        time.sleep(2)
        after = _rss_kib(pid)
        results["idle_memory"] = {
            "streams_open": len(opened),
            "rss_without_streams_kib": before,
            "rss_with_streams_kib": after,
            "kib_per_stream": (after - before) / max(len(opened), 1),
        }
        for connection in opened:
            connection.close()
    finally:
        for server in servers:
            server.stop()
        drop_postgres_database(database)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="20 appends, 0/20/100 idle streams, 10 followers"
    )
    parser.add_argument("--appends", type=int, help="default 200 (--quick: 20)")
    parser.add_argument("--idle", type=int, help="default 2000 (--quick: 100)")
    parser.add_argument("--name", default="streams", help="results file name")
    parser.add_argument("--fanout-only", action="store_true")
    parser.add_argument("--user-delivery-only", action="store_true")
    arguments = parser.parse_args(argv)
    arguments.appends = arguments.appends or (20 if arguments.quick else 200)
    arguments.idle = arguments.idle or (100 if arguments.quick else 2000)
    results_file = RESULTS / f"{arguments.name}.json"
    results_file.parent.mkdir(parents=True, exist_ok=True)
    if arguments.user_delivery_only:
        print_user_delivery(user_delivery_only(arguments.appends))
        return 0
    if arguments.fanout_only:
        database = create_postgres_database("streams_bench")
        try:
            migrate(_async_url(database))
            fanout = asyncio.run(_reads_per_change(_async_url(database), 50, 20))
        finally:
            drop_postgres_database(database)
        _print_fanout(fanout)
        # The other figures of the last full run stay as they were.
        previous = json.loads(results_file.read_text()) if results_file.exists() else {}
        results_file.write_text(json.dumps({**previous, "fanout": fanout}, indent=2) + "\n")
        return 0
    if arguments.quick:
        results = measure(arguments.appends, arguments.idle, (0, 20, 100), (10, 5))
    else:
        results = measure(arguments.appends, arguments.idle)
    _print_fanout(results["fanout"])
    delivery = results["delivery"]
    print(
        f"delivery (4 sessions, cross-process): p50 {delivery['p50_ms']:.1f} ms, "
        f"p99 {delivery['p99_ms']:.1f} ms over {delivery['messages']} messages"
    )
    print_user_delivery(results["user_delivery"])
    print("| idle streams | append p50 ms | append p99 ms |")
    print("| --- | --- | --- |")
    for row in results["append_latency"]:
        print(f"| {row['idle_streams']} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} |")
    memory = results["idle_memory"]
    print(
        f"idle memory: {memory['kib_per_stream']:.1f} KiB RSS per stream, "
        f"{memory['streams_open']} open: {memory['rss_with_streams_kib'] / 1024:.0f} MiB "
        f"(without streams {memory['rss_without_streams_kib'] / 1024:.0f} MiB)"
    )
    results_file.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def user_delivery_only(appends: int) -> dict[str, float]:
    """The user stream's delivery alone, on two fresh server processes."""
    database = create_postgres_database("streams_bench")
    url = _async_url(database)
    servers: list[ServerProcess] = []
    try:
        migrate(url)
        env = {"SESSION_STATE_SWEEP_INTERVAL_SECONDS": "0", "SESSION_STATE_LOG_LEVEL": "warning"}
        servers = [ServerProcess(url, **env).start(), ServerProcess(url, **env).start()]
        return asyncio.run(_user_delivery(servers[0].base_url, servers[1].base_url, appends))
    finally:
        for server in servers:
            server.stop()
        drop_postgres_database(database)


def print_user_delivery(delivery: dict[str, float]) -> None:
    print(
        f"user stream delivery (4 sessions of one user, cross-process): "
        f"p50 {delivery['p50_ms']:.1f} ms, p99 {delivery['p99_ms']:.1f} ms "
        f"over {delivery['appends']:.0f} appends"
    )


def _print_fanout(fanout: dict[str, float]) -> None:
    print(
        f"fan-out ({fanout['followers']:.0f} streams on one session, {fanout['changes']:.0f} "
        f"changes): {fanout['alone']:.2f} storage reads per change reading alone, "
        f"{fanout['shared']:.2f} sharing reads"
    )


if __name__ == "__main__":
    raise SystemExit(main())
