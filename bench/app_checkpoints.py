"""What a page of an app's checkpoints across threads costs (LangGraph's
list(None), GET /apps/{app}/checkpoints) beside a page of one thread's.

`checkpoints` checkpoints of one app, over `threads` threads of 10 users,
are written straight into the tables of a migrated database (each with a
1 KB checkpoint blob and metadata; no channel values or writes, which both
lists read alike per listed checkpoint). Then each list's first page of 100
is timed through the ASGI app: the app's, one user's, the app's with
`before` (half-way down) and a metadata filter, and one thread's, on SQLite
and PostgreSQL; p50 and p95 of `rounds` requests each, and this process's
CPU (the app and SQLite's thread; PostgreSQL works in its own).

    python -m bench.app_checkpoints [--checkpoints 100000] [--threads 1000] [--rounds 20]
    python -m bench.app_checkpoints --quick    # 5,000 checkpoints, 5 rounds
"""

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from typing import Any

from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import create_async_engine

from bench import RESULTS
from session_state.core.config import Settings
from session_state.langgraph.checkpoints.tables import lg_checkpoints, lg_threads
from tests.conftest import asgi_client, create_postgres_database, drop_postgres_database, migrate

APP = "bench-across"
BATCH = 5000
PAGE = 100


def checkpoint_id(index: int) -> str:
    """Ids that grow with time, as LangGraph's uuid6 ones do."""
    return f"1f0{index:013d}-0000-6000-8000-000000000000"


async def seed(url: str, count: int, threads: int) -> None:
    engine = create_async_engine(url)
    start = 1_700_000_000.0
    try:
        async with engine.begin() as connection:
            await connection.execute(
                insert(lg_threads),
                [
                    {
                        "app_name": APP,
                        "thread_id": f"t{thread:05d}",
                        "user_id": f"u{thread % 10}",
                        "create_time": start,
                        "update_time": start + thread,
                    }
                    for thread in range(threads)
                ],
            )
        for first in range(0, count, BATCH):
            rows = [
                {
                    "app_name": APP,
                    "thread_id": f"t{index % threads:05d}",
                    "checkpoint_ns": "",
                    "checkpoint_id": checkpoint_id(index),
                    "parent_checkpoint_id": None,
                    "checkpoint_type": "msgpack",
                    "checkpoint": bytes(1024),
                    "channel_versions": {"messages": str(index)},
                    "metadata": {"source": "loop", "step": index // threads},
                }
                for index in range(first, min(first + BATCH, count))
            ]
            async with engine.begin() as connection:
                await connection.execute(insert(lg_checkpoints), rows)
        async with engine.begin() as connection:
            await connection.execute(text("ANALYZE"))
    finally:
        await engine.dispose()


async def measure(url: str, count: int, rounds: int) -> dict[str, dict[str, float]]:
    cases: dict[str, tuple[str, dict[str, Any]]] = {
        "one thread's": (f"/apps/{APP}/threads/t00000/checkpoints", {}),
        "the app's": (f"/apps/{APP}/checkpoints", {}),
        "one user's of the app's": (f"/apps/{APP}/checkpoints", {"userId": "u3"}),
        "the app's, before half-way": (
            f"/apps/{APP}/checkpoints",
            {"before": checkpoint_id(count // 2)},
        ),
        "the app's, metadata step 0": (
            f"/apps/{APP}/checkpoints",
            {"metadata": json.dumps({"step": 0})},
        ),
    }
    figures: dict[str, dict[str, float]] = {}
    settings = Settings(database_url=url, sweep_interval_seconds=0)
    async with asgi_client(settings) as http:
        timings: dict[str, list[float]] = {name: [] for name in cases}
        cpu: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(rounds):
            for name, (path, params) in cases.items():
                began, began_cpu = time.perf_counter(), time.process_time()
                answer = await http.get(path, params={**params, "limit": PAGE})
                timings[name].append((time.perf_counter() - began) * 1000)
                cpu[name].append((time.process_time() - began_cpu) * 1000)
                assert answer.status_code == 200, answer.text
                assert 0 < len(answer.json()["checkpoints"]) <= PAGE
        for name in cases:
            ordered = sorted(timings[name])
            figures[name] = {
                "p50_ms": round(statistics.median(ordered), 2),
                "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)], 2),
                "cpu_p50_ms": round(statistics.median(cpu[name]), 2),
            }
    return figures


async def run_backend(backend: str, count: int, threads: int, rounds: int) -> dict[str, Any]:
    name = None if backend == "sqlite" else create_postgres_database("across_bench")
    url = (
        f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='across-bench-')}/bench.db"
        if name is None
        else f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"
    )
    try:
        migrate(url)
        began = time.perf_counter()
        await seed(url, count, threads)
        return {
            "seed_seconds": round(time.perf_counter() - began, 1),
            "pages": await measure(url, count, rounds),
        }
    finally:
        if name is not None:
            drop_postgres_database(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default="app_checkpoints")
    args = parser.parse_args()
    if args.quick:
        args.checkpoints, args.threads, args.rounds = 5000, 100, 5
        args.name = f"{args.name}_quick"
    results: dict[str, Any] = {
        "checkpoints": args.checkpoints,
        "threads": args.threads,
        "rounds": args.rounds,
        "page": PAGE,
    }
    for backend in args.backends.split(","):
        results[backend] = asyncio.run(
            run_backend(backend, args.checkpoints, args.threads, args.rounds)
        )
        print(f"{backend} ({args.checkpoints:,} checkpoints, {args.threads:,} threads):")
        for case, figure in results[backend]["pages"].items():
            print(
                f"  {case:32s} p50 {figure['p50_ms']:8.2f} ms  p95 {figure['p95_ms']:8.2f} ms"
                f"  CPU p50 {figure['cpu_p50_ms']:7.2f} ms"
            )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{args.name}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
