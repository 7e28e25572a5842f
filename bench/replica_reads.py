"""The share of reads a streaming replica takes, and the primary's CPU per
turn with and without it.

ADK's Runner, per turn: read the session (get_session), append the user's
event, append the agent's; through the client package's HttpSessionService,
which sends the revision it last saw with each read (read-your-writes).
`sessions` agents run their turns at once against `serve` on a primary and
its streaming replica (tests/replica_pair.py, PostgreSQL 15, one machine),
once without SESSION_STATE_READ_DATABASE_URL and once with it.

    python -m bench.replica_reads [--sessions 20] [--turns 30]
    python -m bench.replica_reads --quick   # 4 sessions x 3 turns

Writes bench/results/<name>.json (replica_reads.json).
"""

import argparse
import asyncio
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import httpx

from bench import RESULTS
from bench.adk_api import event_json
from tests.conftest import ServerProcess, free_port, migrate
from tests.replica_pair import ReplicaPair

APP = "bench-replicas"


def _cpu_seconds_of_children(parent_pid: int) -> float:
    """User + system CPU of a postmaster and its backends so far."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        if pid == parent_pid or int(fields[1]) == parent_pid:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "postmaster.pid").read_text().split()[0])


async def _turns(base_url: str, sessions: int, turns: int, run: str) -> float:
    from google.adk.events import Event

    from session_state_client.adk import HttpSessionService

    service = HttpSessionService(base_url=base_url)
    started = time.perf_counter()

    async def agent(index: int) -> None:
        user, session_id = f"u{index % 5}", f"{run}-s{index}"
        await service.create_session(app_name=APP, user_id=user, session_id=session_id)
        for turn in range(turns):
            session = await service.get_session(app_name=APP, user_id=user, session_id=session_id)
            assert session is not None and len(session.events) == 2 * turn
            for step in (2 * turn, 2 * turn + 1):
                document: dict[str, Any] = event_json(session_id, step)
                await service.append_event(session, Event.model_validate(document))

    await asyncio.gather(*(agent(index) for index in range(sessions)))
    elapsed = time.perf_counter() - started
    await service.close()
    return elapsed


def _reads(metrics: str) -> dict[str, float]:
    found = re.findall(r'session_state_reads_total\{target="(\w+)"\} ([0-9.e+]+)', metrics)
    return {target: float(count) for target, count in found}


def measure(sessions: int, turns: int) -> list[dict[str, Any]]:
    pair = ReplicaPair(free_port(), free_port()).start()
    rows = []
    try:
        migrate(pair.primary_url.replace("postgresql://", "postgresql+asyncpg://"))
        primary = _postmaster_pid(pair.primary_dir)
        for with_replica in (False, True):
            env = {"SESSION_STATE_SWEEP_INTERVAL_SECONDS": "0"}
            if with_replica:
                env["SESSION_STATE_READ_DATABASE_URL"] = pair.replica_url
            server = ServerProcess(pair.primary_url, **env).start()
            try:
                run = "replica" if with_replica else "primary"
                cpu_before = _cpu_seconds_of_children(primary)
                elapsed = asyncio.run(_turns(server.base_url, sessions, turns, run))
                cpu = _cpu_seconds_of_children(primary) - cpu_before
                reads = _reads(httpx.get(f"{server.base_url}/metrics").text)
            finally:
                server.stop()
            total = sessions * turns
            rows.append(
                {
                    "replica": with_replica,
                    "turns_per_s": total / elapsed,
                    "primary_cpu_ms_per_turn": 1000 * cpu / total,
                    "reads_on_replica": reads.get("replica", 0.0),
                    "reads_on_primary": reads.get("primary", 0.0),
                }
            )
    finally:
        pair.stop()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 sessions x 3 turns")
    parser.add_argument("--sessions", type=int, help="default 20 (--quick: 4)")
    parser.add_argument("--turns", type=int, help="default 30 (--quick: 3)")
    parser.add_argument("--name", default="replica_reads", help="results file name")
    arguments = parser.parse_args(argv)
    sessions = arguments.sessions or (4 if arguments.quick else 20)
    turns = arguments.turns or (3 if arguments.quick else 30)
    rows = measure(sessions, turns)
    print("| replica | turns/s | primary CPU ms/turn | reads on replica | reads on primary |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        reads = row["reads_on_replica"] + row["reads_on_primary"]
        share = row["reads_on_replica"] / max(1.0, reads)
        print(
            f"| {'yes' if row['replica'] else 'no'} | {row['turns_per_s']:.0f} "
            f"| {row['primary_cpu_ms_per_turn']:.2f} | {row['reads_on_replica']:.0f} "
            f"({share:.0%}) | {row['reads_on_primary']:.0f} |"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    document = {"sessions": sessions, "turns": turns, "rows": rows}
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(document, indent=2) + "\n")
    alone, paired = rows
    # Without SESSION_STATE_READ_DATABASE_URL nothing may read the replica;
    # with it, the replica takes reads (those it has caught up for).
    kept = alone["reads_on_replica"] == 0
    taken = paired["reads_on_replica"] > 0
    print(f"Check: without a replica configured, no read on it: {'met' if kept else 'NOT met'}")
    print(f"Goal (issue 24): the replica takes reads: {'met' if taken else 'NOT met'}")
    return 0 if kept else 1


if __name__ == "__main__":
    raise SystemExit(main())
