"""Two checkouts of the server, side by side in one run: the concurrent
append workloads and session reads of `bench.run`, each checkout on a fresh
database, alternating A/B per round so that neither always runs warm.

    git worktree add /tmp/before <commit>
    python -m bench.before_after --before /tmp/before --name hostile_before_after
    python -m bench.before_after --before /tmp/before --backend sqlite
    python -m bench.before_after --quick   # small sizes, one round, against HEAD

Prints medians and the after/before ratio; writes bench/results/<name>.json.
Only our server is measured (ADK and the floor are `bench.run`'s business).
"""

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import RESULTS
from bench.events import hot_delta, spread_delta
from bench.run import (
    FULL,
    QUICK,
    Server,
    Sizes,
    cli_module,
    concurrent_appends,
    create_database,
    drop_database,
    head_checkout,
    sqlalchemy_url,
    timed,
)
from bench.targets import HttpTarget

ROOT = Path(__file__).resolve().parent.parent
READS = 300


def migrate_from(source: Path, database_url: str) -> None:
    """The schema as that checkout's migrations make it."""
    env = {
        **os.environ,
        "PYTHONPATH": str(source),
        "SESSION_STATE_DATABASE_URL": database_url,
    }
    command = [sys.executable, "-m", cli_module(source), "migrate"]
    subprocess.run(command, env=env, cwd=source, check=True, capture_output=True)


async def measure(
    source: Path,
    port: int,
    round_index: int,
    backend: str,
    prefix: str = "bench_before_after",
    appends_alone: bool = False,
    sizes: Sizes = FULL,
) -> dict[str, float]:
    if backend == "sqlite":
        database = None
        folder = Path(tempfile.mkdtemp(prefix="bench_before_after_"))
        database_url = f"sqlite+aiosqlite:///{folder / 'sessions.db'}"
    else:
        database = await create_database(prefix)
        database_url = sqlalchemy_url(database)
    migrate_from(source, database_url)
    server = Server("", port, workers=1, source=source, database_url=database_url)
    target = HttpTarget(server.base_url)
    if appends_alone:
        # Every append its own request: the server's single-append path.
        target.client._appends.together = False
    try:
        cpu_before = server.cpu_seconds()
        spread = await concurrent_appends(target, f"spread-{round_index}", sizes, spread_delta)
        cpu_per_event_ms = (
            (server.cpu_seconds() - cpu_before) / (sizes.sessions * sizes.events_per_session) * 1000
        )
        hot = await concurrent_appends(target, f"hot-{round_index}", sizes, hot_delta)
        latencies: list[float] = []
        for _ in range(READS if sizes is FULL else sizes.read_samples):
            await timed(
                lambda: target.get_recent(f"spread-{round_index}", "u0", "s0", 20), latencies
            )
        return {
            "spread_events_per_s": spread["events_per_s"],
            "spread_p99_ms": spread["p99_ms"],
            "server_cpu_ms_per_event": cpu_per_event_ms,
            "hot_events_per_s": hot["events_per_s"],
            "get_last_20_p50_ms": statistics.median(latencies) * 1000,
        }
    finally:
        await target.close()
        server.stop()
        if database is None:
            shutil.rmtree(folder)
        else:
            await drop_database(database)


async def run(
    before: Path,
    rounds: int,
    backend: str = "postgresql",
    port: int = 18700,
    prefix: str = "bench_before_after",
    appends_alone: bool = False,
    sizes: Sizes = FULL,
) -> dict[str, Any]:
    sides = {"before": before, "after": ROOT}
    figures: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for index in range(rounds):
        order = ["before", "after"] if index % 2 == 0 else ["after", "before"]
        for side in order:
            print(f"round {index + 1}/{rounds}: {side}", flush=True)
            figures[side].append(
                await measure(
                    sides[side], port + index, index, backend, prefix, appends_alone, sizes
                )
            )
    medians = {
        side: {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        for side, runs in figures.items()
    }
    ratios = {key: medians["after"][key] / medians["before"][key] for key in medians["after"]}
    return {
        "rounds": rounds,
        "backend": backend,
        "runs": figures,
        "medians": medians,
        "after_over_before": ratios,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", type=Path, help="the checkout to compare with")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes, one round; without --before, against this repository's HEAD",
    )
    parser.add_argument("--rounds", type=int, help="default 4 (--quick: 1)")
    parser.add_argument("--name", default="before_after")
    parser.add_argument("--backend", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument("--port", type=int, default=18700, help="the first round's server port")
    parser.add_argument("--prefix", default="bench_before_after", help="of database names")
    parser.add_argument(
        "--appends-alone",
        action="store_true",
        help="the client sends every append in a request of its own (not together)",
    )
    arguments = parser.parse_args(argv)
    if arguments.before is None and not arguments.quick:
        parser.error("--before is required (or --quick, which compares with HEAD)")
    with contextlib.ExitStack() as stack:
        before = arguments.before or stack.enter_context(head_checkout())
        results = asyncio.run(
            run(
                before.resolve(),
                arguments.rounds or (1 if arguments.quick else 4),
                arguments.backend,
                arguments.port,
                arguments.prefix,
                arguments.appends_alone,
                QUICK if arguments.quick else FULL,
            )
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(results, indent=2) + "\n")
    for key, ratio in results["after_over_before"].items():
        before, after = results["medians"]["before"][key], results["medians"]["after"][key]
        print(f"{key:28} before {before:10.3f}  after {after:10.3f}  after/before {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
