"""Capacity on paper, from measurements: the CPU one append and one session
read cost on the PostgreSQL primary and in an API process, so that appends/s
and reads/s per core follow, and the connections an API process holds.

    python -m bench.capacity            # 50 sessions x 40 appends, then reads, 3 rounds
    python -m bench.capacity --quick    # 10 sessions x 10, 1 round

A started `session-state serve` (one worker process) on a database of its
own; 50 concurrent writers append through the async client (If-Match, as the
ADK adapter sends), then 50 concurrent readers read each session with its
last 20 events (as ADK's Runner does at the start of a turn). CPU is counted
from /proc: the server process, and the PostgreSQL backends serving its
database (found in pg_stat_activity; PostgreSQL's shared background work,
WAL writer and checkpointer, is not in it, nor is the load generator's).
CPU time, not wall time, so that other work on the machine matters less.
Writes bench/results/<name>.json.
"""

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import asyncpg

from bench import RESULTS
from bench.client_cpu import _free_port
from bench.events import event_document, spread_delta
from bench.run import Server, create_database, drop_database, dsn, migrate

READ_EVENTS = 20


def _process_cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:  # a backend that ended meanwhile
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _backend_pids(database: str) -> list[int]:
    connection = await asyncpg.connect(dsn("postgres"))
    try:
        rows = await connection.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            database,
        )
    finally:
        await connection.close()
    return [row["pid"] for row in rows]


class CpuMeter:
    """CPU seconds of the server process and of its database's backends."""

    def __init__(self, server: Server, database: str) -> None:
        self.server = server
        self.database = database

    async def read(self) -> tuple[float, float, int]:
        pids = await _backend_pids(self.database)
        database_cpu = sum(_process_cpu_seconds(pid) for pid in pids)
        return self.server.cpu_seconds(), database_cpu, len(pids)


async def _round(
    base_url: str, meter: CpuMeter, app: str, sessions: int, appends: int
) -> dict[str, float]:
    from session_state_client import AsyncSessionStateClient

    async with AsyncSessionStateClient(base_url=base_url, max_retries=0, timeout=120) as client:
        ids = [f"s{index}" for index in range(sessions)]
        revisions = {}
        for session_id in ids:
            created = await client.create_session(app_name=app, user_id="u", session_id=session_id)
            revisions[session_id] = created.revision

        async def writer(session_id: str, count: int) -> None:
            for step in range(count):
                event = event_document(author="agent", delta=spread_delta(session_id, step))
                appended = await client.append_event(
                    app_name=app,
                    user_id="u",
                    session_id=session_id,
                    event=event,
                    if_match=revisions[session_id],
                )
                revisions[session_id] = appended.revision

        async def reader(session_id: str, count: int) -> None:
            for _ in range(count):
                await client.get_session(
                    app_name=app, user_id="u", session_id=session_id, num_recent_events=READ_EVENTS
                )

        await asyncio.gather(*(writer(session_id, 2) for session_id in ids))  # warm up
        server_before, database_before, _ = await meter.read()
        started = time.perf_counter()
        await asyncio.gather(*(writer(session_id, appends) for session_id in ids))
        append_seconds = time.perf_counter() - started
        server_after, database_after, connections = await meter.read()
        started = time.perf_counter()
        await asyncio.gather(*(reader(session_id, appends) for session_id in ids))
        read_seconds = time.perf_counter() - started
        server_end, database_end, _ = await meter.read()
    count = sessions * appends
    return {
        "appends_per_second": count / append_seconds,
        "server_cpu_ms_per_append": (server_after - server_before) * 1000 / count,
        "database_cpu_ms_per_append": (database_after - database_before) * 1000 / count,
        "reads_per_second": count / read_seconds,
        "server_cpu_ms_per_read": (server_end - server_after) * 1000 / count,
        "database_cpu_ms_per_read": (database_end - database_after) * 1000 / count,
        "database_connections": connections,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default="capacity")
    arguments = parser.parse_args()
    sessions, appends, rounds = (10, 10, 1) if arguments.quick else (50, 40, 3)

    database = asyncio.run(create_database("bench_capacity"))
    migrate(database)
    server = Server(database, _free_port(), workers=1)
    meter = CpuMeter(server, database)
    results: list[dict[str, float]] = []
    try:
        for repetition in range(rounds):
            figures = asyncio.run(
                _round(server.base_url, meter, f"capacity-{repetition}", sessions, appends)
            )
            results.append(figures)
            print(
                f"round {repetition}: "
                + ", ".join(f"{key} {value:.3f}" for key, value in figures.items()),
                flush=True,
            )
    finally:
        server.stop()
        asyncio.run(drop_database(database))

    medians = {key: statistics.median(result[key] for result in results) for key in results[0]}
    per_core = {
        "appends_per_primary_core": _per_core(medians["database_cpu_ms_per_append"]),
        "appends_per_api_process_core": _per_core(medians["server_cpu_ms_per_append"]),
        "reads_per_primary_core": _per_core(medians["database_cpu_ms_per_read"]),
        "reads_per_api_process_core": _per_core(medians["server_cpu_ms_per_read"]),
    }
    summary: dict[str, Any] = {
        "what": f"{sessions} concurrent sessions x {appends} appends, then as many reads "
        f"of a session with its last {READ_EVENTS} events; one API process",
        "cpus": os.cpu_count(),
        "rounds": rounds,
        "medians": {key: round(value, 3) for key, value in medians.items()},
        "per_core": {
            key: None if value is None else round(value) for key, value in per_core.items()
        },
        "raw": results,
    }
    print(json.dumps({"medians": summary["medians"], "per_core": summary["per_core"]}, indent=2))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(summary, indent=2) + "\n")


def _per_core(cpu_ms: float) -> float | None:
    """Operations one core serves; None when a short run spent less CPU than
    the clock that counts it can see (/proc counts in 10 ms ticks)."""
    return 1000 / cpu_ms if cpu_ms > 0 else None


if __name__ == "__main__":
    main()
