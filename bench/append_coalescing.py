"""Appends sent together or each alone, side by side in one run: the ADK
workload of bench.adk_api (concurrent appends through `HttpSessionService`,
an ADK `Event` built in every timed append) against one server, with the
client's appends each in a request of their own ("alone") and sent
together behind 1, 2 or 4 requests in flight per app, rotating per round;
with `--before`, also through the coalescer of another checkout
(`client/session_state_client/_coalescing.py` there), in the same client.

    python -m bench.append_coalescing
    python -m bench.append_coalescing --shapes 10x40 --rounds 6 --in-flight 1,2,4
    git worktree add /tmp/before <commit>
    python -m bench.append_coalescing --in-flight 2 --before /tmp/before
    python -m bench.append_coalescing --quick   # 4 x 10, one round, with HEAD's coalescer

Prints the medians of the rounds, with the CPU each process spent per
append (this load generator over the timed appends, the server and
PostgreSQL over the workload); each timed workload starts on a vacuumed
database. Writes bench/results/<name>.json.
"""

import argparse
import asyncio
import contextlib
import importlib.util
from pathlib import Path
from typing import Any

from bench.adk_api import AdkApi, Shape, workload
from bench.adk_before_after import WARM_UP, workload_with_cpu
from bench.run import (
    Server,
    create_database,
    drop_database,
    head_checkout,
    medians_of,
    migrate,
    nothing_lost,
    vacuum,
    write_results,
)

# A client that never sends appends together: every request its own (the
# coalescer's own setting for a server without the route).
ALONE = "alone"


BEFORE = "before"


def _coalescer_of(checkout: Path) -> Any:
    """The coalescer class of another checkout's client, loaded beside this
    one's (it imports the client's other modules, which it shares)."""
    path = checkout / "client" / "session_state_client" / "_coalescing.py"
    spec = importlib.util.spec_from_file_location("session_state_client._before_coalescing", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.AppendCoalescer


def _variant(service: Any, name: str, coalescers: dict[str, Any]) -> None:
    """The client's coalescer set for `name` (bench only: private state)."""
    client = service.client
    client._appends = coalescers[BEFORE if name == BEFORE else "now"]
    if name == BEFORE:
        return
    client._appends.together = name != ALONE
    if name != ALONE:
        client._appends.gathering.max_in_flight = int(name.removeprefix("in-flight-"))


async def run(
    shapes: list[Shape], in_flight: list[int], rounds: int, port: int, before: Path | None = None
) -> dict[str, Any]:
    from session_state_client.adk import HttpSessionService

    database = await create_database("bench_append_coalescing")
    migrate(database)
    server = Server(database, port=port, workers=1)
    service = HttpSessionService(base_url=server.base_url)
    target = AdkApi("session-state", service, service.close)
    variants = [ALONE, *(f"in-flight-{n}" for n in in_flight)]
    coalescers = {"now": service.client._appends}
    if before is not None:
        variants.append(BEFORE)
        coalescers[BEFORE] = _coalescer_of(before)(service.client._send, service.client._revisions)
    runs: dict[str, dict[str, list[dict[str, float]]]] = {}
    try:
        await workload(target, "warm-up", WARM_UP)
        for index in range(rounds):
            order = variants[index % len(variants) :] + variants[: index % len(variants)]
            for shape in shapes:
                label = f"{shape.sessions}x{shape.events}"
                for variant in order:
                    _variant(service, variant, coalescers)
                    await vacuum(database)
                    figures = await workload_with_cpu(
                        server, target, f"r{index}-{label}-{variant}", shape
                    )
                    runs.setdefault(label, {}).setdefault(variant, []).append(figures)
                    shown = ", ".join(f"{key}={value:,.3f}" for key, value in figures.items())
                    print(f"round {index + 1}/{rounds} {label} {variant}: {shown}", flush=True)
    finally:
        await target.close()
        server.stop()
        await drop_database(database)
    return {"rounds": rounds, "runs": runs, "medians": medians_of(runs)}


FIGURES = ("events_per_s", "p50_ms", "p99_ms", "load_cpu_ms", "server_cpu_ms", "postgres_cpu_ms")


def table(results: dict[str, Any]) -> str:
    lines = ["| shape | variant | " + " | ".join(FIGURES) + " |", "| --- | --- |" + " ---: |" * 6]
    for label, by_variant in results["medians"].items():
        alone = by_variant[ALONE]["events_per_s"]
        for variant, figures in by_variant.items():
            shown = " | ".join(f"{figures[figure]:,.3f}" for figure in FIGURES)
            ratio = figures["events_per_s"] / alone
            lines.append(f"| {label} | {variant} ({ratio:.2f}x) | {shown} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="shape 4x10, one round; without --before, HEAD's coalescer as before",
    )
    parser.add_argument("--shapes", help="sessions x events, by commas (default 10x40,50x40)")
    parser.add_argument("--in-flight", default="1,2,4", help="requests in flight, by commas")
    parser.add_argument("--rounds", type=int, help="default 4 (--quick: 1)")
    parser.add_argument("--port", type=int, default=18811)
    parser.add_argument("--name", default="append_coalescing")
    parser.add_argument("--before", type=Path, help="a checkout whose coalescer to compare")
    args = parser.parse_args(argv)
    shapes = Shape.parse_all(args.shapes or ("4x10" if args.quick else "10x40,50x40"))
    in_flight = [int(n) for n in args.in_flight.split(",")]
    rounds = args.rounds or (1 if args.quick else 4)
    with contextlib.ExitStack() as stack:
        before = args.before or (stack.enter_context(head_checkout()) if args.quick else None)
        results = asyncio.run(run(shapes, in_flight, rounds, args.port, before))
    print(table(results))
    write_results(args.name, results)
    return 0 if nothing_lost(results["runs"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
