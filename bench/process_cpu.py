"""CPU time spent by the processes a side's users pay for, over a timed
window: this process (the application, with the client or the in-process
service), a server process and its workers, the PostgreSQL backends serving
one database, and the local redis-server.

Read from /proc (Linux): user + system time. The PostgreSQL backends are
those connected to the side's database when the window starts or ends (a
pool's connections, opened before the window or during it); other databases'
backends on the shared cluster are not counted. redis-server is one process
serving every client of the machine: its figure includes whatever else uses
that Redis meanwhile.
"""

import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import asyncpg

TICK = os.sysconf("SC_CLK_TCK")


def pid_cpu(pid: int) -> float:
    """User + system CPU seconds of one process (0 once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def with_children(pid: int) -> list[int]:
    """The process and its child processes (a server's workers)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return [pid, *map(int, children)]


async def backend_pids(admin_dsn: str, database: str) -> list[int]:
    """The PostgreSQL backends connected to `database` now."""
    connection = await asyncpg.connect(admin_dsn)
    try:
        rows = await connection.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1", database
        )
    finally:
        await connection.close()
    return [row["pid"] for row in rows]


async def redis_server_pid(host: str = "127.0.0.1", port: int = 6379) -> int:
    import redis.asyncio as redis

    client = redis.Redis(host=host, port=port)
    try:
        info = await client.info("server")
    finally:
        await client.aclose()
    return int(info["process_id"])


class Meter:
    """CPU seconds by process group over one window: `start()`, the work,
    `stop()`. Each group is a name and a coroutine function listing its pids
    (asked at both ends, so a connection opened mid-window counts too)."""

    def __init__(self, groups: dict[str, Callable[[], Awaitable[list[int]]]]) -> None:
        self.groups = groups
        self._before: dict[str, dict[int, float]] = {}
        self._process = 0.0
        self._wall = 0.0

    async def start(self) -> None:
        self._before = {
            name: {pid: pid_cpu(pid) for pid in await pids()} for name, pids in self.groups.items()
        }
        self._wall = time.perf_counter()
        self._process = time.process_time()

    async def stop(self) -> dict[str, float]:
        """Seconds of CPU per group, "app" being this process."""
        spent = {"app": time.process_time() - self._process}
        for name, pids in self.groups.items():
            before = self._before[name]
            now = set(await pids()) | set(before)
            spent[name] = sum(max(0.0, pid_cpu(pid) - before.get(pid, 0.0)) for pid in now)
        return spent


async def postmaster_pid(admin_dsn: str) -> int:
    """The PostgreSQL cluster's main process (its data directory's
    postmaster.pid, read by the server: a superuser's DSN)."""
    connection = await asyncpg.connect(admin_dsn)
    try:
        text = await connection.fetchval("SELECT pg_read_file('postmaster.pid')")
    finally:
        await connection.close()
    return int(text.split()[0])


def cluster_cpu(postmaster: int) -> float:
    """CPU seconds the whole cluster has spent so far: each process it runs
    now (backends, WAL writer, checkpointer...) and the postmaster with the
    backends it has reaped (a client's pool that closed), so that a delta
    over a window counts every database's work, both sides' alike."""
    fields = Path(f"/proc/{postmaster}/stat").read_text().rsplit(")", 1)[1].split()
    own_and_reaped = sum(int(field) for field in fields[11:15]) / TICK
    return own_and_reaped + sum(pid_cpu(pid) for pid in with_children(postmaster)[1:])
