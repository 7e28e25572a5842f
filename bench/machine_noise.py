"""How steady this machine is on its own: fixed workloads with none of
session-state's code or its peers', timed in windows as the side-by-side
benches time theirs, in alternating rounds, with their spread
(bench.spread). A bench's sides cannot be steadier than the machine under
them; this says how steady that is, and which part moves.

Workloads, each one process and one loop, nothing else started:
- `python`: a 2 KB JSON document encoded, decoded and hashed, over and
  over (the CPU alone);
- `round trip`: `SELECT 1` on one asyncpg connection (loopback TCP and a
  PostgreSQL backend, no disk);
- `commit`: a one-row `INSERT` committed on its own (as an append's commit:
  the WAL flushed to disk, `synchronous_commit` on);
- `commit, no flush`: the same with `synchronous_commit = off`.

Beside each window, the CPU time the hypervisor took (steal, /proc/stat)
and the load average.

    python -m bench.machine_noise                    # 5 rounds of 6 s windows
    python -m bench.machine_noise --window 10        # the LangGraph bench's
    python -m bench.machine_noise --quick            # CI's smoke run

Figures: docs/performance.md, "How steady the machine is".
"""

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg

from bench import RESULTS
from bench.run import create_database, drop_database, dsn
from bench.spread import percent, spread

DOCUMENT = {"messages": [{"role": "user", "text": "x" * 200, "n": n} for n in range(8)]}
Workload = Callable[[float], Awaitable[int]]


def _cpu_ticks() -> tuple[int, int]:
    """(all, steal) jiffies of the machine's CPUs since boot."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields), fields[7]


async def _python(window: float) -> int:
    done, end = 0, time.perf_counter() + window
    while time.perf_counter() < end:
        text = json.dumps(DOCUMENT)
        hashlib.sha256(json.dumps(json.loads(text)).encode()).digest()
        done += 1
    return done


def _on_database(
    statement: str, setup: str = "", numbered: bool = False
) -> Callable[[str], Workload]:
    def arguments(done: int) -> tuple[int, ...]:
        return (done,) if numbered else ()

    def bound(address: str) -> Workload:
        async def run(window: float) -> int:
            connection = await asyncpg.connect(address)
            try:
                if setup:
                    await connection.execute(setup)
                done, end = 0, time.perf_counter() + window
                while time.perf_counter() < end:
                    await connection.execute(statement, *arguments(done))
                    done += 1
                return done
            finally:
                await connection.close()

        return run

    return bound


_INSERT = "INSERT INTO noise (n) VALUES ($1)"
DATABASE_WORKLOADS = {
    "round trip": _on_database("SELECT 1"),
    "commit": _on_database(_INSERT, numbered=True),
    "commit, no flush": _on_database(_INSERT, "SET synchronous_commit = off", numbered=True),
}


async def measure(rounds: int, window: float) -> dict[str, Any]:
    database = await create_database("bench_machine_noise")
    address = dsn(database)
    try:
        setup = await asyncpg.connect(address)
        try:
            await setup.execute("CREATE TABLE noise (id bigserial PRIMARY KEY, n bigint)")
        finally:
            await setup.close()
        workloads: dict[str, Workload] = {"python": _python}
        workloads.update({name: bound(address) for name, bound in DATABASE_WORKLOADS.items()})
        figures: dict[str, list[float]] = {name: [] for name in workloads}
        steal: dict[str, list[float]] = {name: [] for name in workloads}
        load: list[float] = []
        names = list(workloads)
        for round_number in range(rounds):
            load.append(os.getloadavg()[0])
            # Alternating: each round starts one workload later.
            shift = round_number % len(names)
            for name in names[shift:] + names[:shift]:
                before = _cpu_ticks()
                started = time.perf_counter()
                done = await workloads[name](window)
                elapsed = time.perf_counter() - started
                after = _cpu_ticks()
                figures[name].append(done / elapsed)
                all_ticks = after[0] - before[0]
                steal[name].append((after[1] - before[1]) / all_ticks if all_ticks else 0.0)
    finally:
        await drop_database(database)
    return {
        "rounds": rounds,
        "window_seconds": window,
        "cpus": os.cpu_count(),
        "load_average_at_each_round": load,
        "workloads": {
            name: {
                "per_second": values,
                "median": statistics.median(values),
                "spread": spread(values),
                "steal": steal[name],
            }
            for name, values in figures.items()
        },
    }


def report(found: dict[str, Any]) -> None:
    print(
        f"{found['rounds']} rounds, {found['window_seconds']} s windows, "
        f"{found['cpus']} CPUs, load average "
        + ", ".join(f"{value:.2f}" for value in found["load_average_at_each_round"])
    )
    print(f"  {'workload':18} {'median /s':>11} {'spread':>8}  steal (max)  rounds")
    for name, figure in found["workloads"].items():
        rounds = ", ".join(f"{value:,.0f}" for value in figure["per_second"])
        print(
            f"  {name:18} {figure['median']:11,.0f} {percent(figure['spread']):>8}"
            f"  {percent(max(figure['steal'])):>11}  {rounds}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--window", type=float, default=6.0, help="seconds a workload a round")
    parser.add_argument("--name", default="machine_noise")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 0.3 s windows")
    arguments = parser.parse_args(argv)
    rounds, window = (2, 0.3) if arguments.quick else (arguments.rounds, arguments.window)
    found = asyncio.run(measure(rounds, window))
    report(found)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(found, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
