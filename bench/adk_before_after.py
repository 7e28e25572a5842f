"""Two checkouts of the server, side by side in one run, driven as ADK users
drive it: concurrent appends through `HttpSessionService` with an ADK
`Event` built in every timed append (bench.adk_api's workload), each
checkout's server on a database of its own, alternating per round.

    git worktree add /tmp/before <commit>
    python -m bench.adk_before_after --before /tmp/before
    python -m bench.adk_before_after --before /tmp/before --shapes 10x40 --rounds 8
    python -m bench.adk_before_after --quick   # 4 x 10, one round, against HEAD

Besides events/s and latency, the CPU each process spends per append: this
load generator over the timed appends (`time.process_time`), and over the
whole workload the server (its /proc stat) and PostgreSQL (every
`postgres` process's /proc stat: the backends and the background writers
alike, so run it on a database server nothing else uses). Prints the
medians of the rounds and after/before; writes bench/results/<name>.json.
"""

import argparse
import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

from bench.adk_api import AdkApi, Shape, workload
from bench.run import (
    Server,
    create_database,
    drop_database,
    head_checkout,
    medians_of,
    migrate,
    nothing_lost,
    write_results,
)

WARM_UP = Shape(4, 10)
_TICKS = os.sysconf("SC_CLK_TCK")


def postgres_cpu_seconds() -> float:
    """CPU time (user + system) of every process named postgres so far."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone since the listing
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        if name.startswith("postgres"):
            fields = text.rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
    return ticks / _TICKS


async def workload_with_cpu(
    server: Server, target: AdkApi, app: str, shape: Shape
) -> dict[str, float]:
    """`workload`'s figures (with this load generator's CPU per timed
    append), and the CPU the server and PostgreSQL spent per append in it
    (sessions made and read back included)."""
    served, database = server.cpu_seconds(), postgres_cpu_seconds()
    figures = await workload(target, app, shape)
    appends = shape.sessions * shape.events
    return figures | {
        "server_cpu_ms": (server.cpu_seconds() - served) / appends * 1000,
        "postgres_cpu_ms": (postgres_cpu_seconds() - database) / appends * 1000,
    }


async def _side(name: str, source: Path | None, port: int) -> tuple[Server, AdkApi, str]:
    from session_state_client.adk import HttpSessionService

    database = await create_database("bench_adk_before_after")
    migrate(database)
    server = Server(database, port=port, workers=1, source=source)
    service = HttpSessionService(base_url=server.base_url)
    return server, AdkApi(name, service, service.close), database


async def run(before: Path, shapes: list[Shape], rounds: int, port: int) -> dict[str, Any]:
    sides = {
        "before": await _side("before", before, port),
        "after": await _side("after", None, port + 1),  # this checkout, installed
    }
    runs: dict[str, dict[str, list[dict[str, float]]]] = {}
    try:
        for _, target, _ in sides.values():
            await workload(target, "warm-up", WARM_UP)
        for index in range(rounds):
            order = ["before", "after"] if index % 2 == 0 else ["after", "before"]
            for shape in shapes:
                label = f"{shape.sessions}x{shape.events}"
                for side in order:
                    server, target, _ = sides[side]
                    figures = await workload_with_cpu(server, target, f"r{index}-{label}", shape)
                    runs.setdefault(label, {}).setdefault(side, []).append(figures)
                    shown = ", ".join(f"{key}={value:,.3f}" for key, value in figures.items())
                    print(f"round {index + 1}/{rounds} {label} {side}: {shown}", flush=True)
    finally:
        for server, target, database in sides.values():
            await target.close()
            server.stop()
            await drop_database(database)
    return {"rounds": rounds, "runs": runs, "medians": medians_of(runs)}


FIGURES = ("events_per_s", "p99_ms", "load_cpu_ms", "server_cpu_ms", "postgres_cpu_ms")


def table(results: dict[str, Any]) -> str:
    lines = [
        "| shape | figure | before | after | after / before |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for label, by_side in results["medians"].items():
        for figure in FIGURES:
            before, after = by_side["before"][figure], by_side["after"][figure]
            lines.append(
                f"| {label} | {figure} | {before:,.3f} | {after:,.3f} | {after / before:.2f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, help="the checkout to compare with")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="shape 4x10, one round; without --before, against this repository's HEAD",
    )
    parser.add_argument("--shapes", help="sessions x events, by commas (default 10x40,50x40)")
    parser.add_argument("--rounds", type=int, help="default 4 (--quick: 1)")
    parser.add_argument("--port", type=int, default=18801, help="before's; after's is the next")
    parser.add_argument("--name", default="adk_before_after")
    arguments = parser.parse_args(argv)
    if arguments.before is None and not arguments.quick:
        parser.error("--before is required (or --quick, which compares with HEAD)")
    shapes = Shape.parse_all(arguments.shapes or ("4x10" if arguments.quick else "10x40,50x40"))
    rounds = arguments.rounds or (1 if arguments.quick else 4)
    with contextlib.ExitStack() as stack:
        before = arguments.before or stack.enter_context(head_checkout())
        results = asyncio.run(run(before.resolve(), shapes, rounds, arguments.port))
    print(f"\n{table(results)}")
    write_results(arguments.name, results)
    return 0 if nothing_lost(results["runs"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
