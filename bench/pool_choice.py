"""Which pool could serve every PostgreSQL request: asyncpg's own pool, or
SQLAlchemy's pool lending its asyncpg connections (so that SQLAlchemy could
keep running the other statements). Each side runs the same statement from
50 concurrent tasks and pays for a checkout, one statement, a check-in. In
this bare loop they cost the same; inside the server, the greenlet switches
around SQLAlchemy's checkout cost 35-45 us per request more, so the store
runs everything on asyncpg's pool (docs/design.md).

    python -m bench.pool_choice [--url postgresql+asyncpg://...] [--rounds 7]
    python -m bench.pool_choice --quick   # 1 round of 50 tasks x 20 statements

Prints client CPU per statement (process time, the server is another
process) and statements per second, medians of the rounds, and writes them
to bench/results/<name>.json.
"""

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.util import greenlet_spawn

from bench import RESULTS

TASKS = 50
STATEMENTS_PER_TASK = 200
STATEMENT = "SELECT $1::text, $2::bigint"


async def _skip_session_reset(_connection: asyncpg.Connection) -> None:
    """As the store's connections: no RESET ALL round trip when one is given
    back (nothing sets session state on them)."""


async def _measure(
    run_one: Callable[[], Awaitable[Any]], per_task: int = STATEMENTS_PER_TASK
) -> tuple[float, float]:
    async def task() -> None:
        for _ in range(per_task):
            await run_one()

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(task() for _ in range(TASKS)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    count = TASKS * per_task
    return cpu / count * 1e6, count / wall


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="postgresql+asyncpg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--quick", action="store_true", help="1 round, 20 statements per task")
    parser.add_argument("--rounds", type=int, help="default 7 (--quick: 1)")
    parser.add_argument("--name", default="pool_choice", help="results file name")
    arguments = parser.parse_args()
    rounds = arguments.rounds or (1 if arguments.quick else 7)
    per_task = 20 if arguments.quick else STATEMENTS_PER_TASK

    pool = await asyncpg.create_pool(
        make_url(arguments.url).set(drivername="postgresql").render_as_string(False),
        min_size=0,
        max_size=10,
        reset=_skip_session_reset,
    )
    engine = create_async_engine(arguments.url, pool_size=10, max_overflow=0)

    async def through_asyncpg_pool() -> None:
        async with pool.acquire() as connection:
            await connection.fetchrow(STATEMENT, "x", 1)

    async def through_sqlalchemy_pool() -> None:
        lent = await engine.raw_connection()
        try:
            await lent.driver_connection.fetchrow(STATEMENT, "x", 1)  # type: ignore[union-attr]
        finally:
            await greenlet_spawn(lent.close)

    sides = {"asyncpg pool": through_asyncpg_pool, "SQLAlchemy pool": through_sqlalchemy_pool}
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    for run_one in sides.values():
        await _measure(run_one, per_task)  # warm-up: connections opened
    for _ in range(rounds):
        for name, run_one in sides.items():
            figures[name].append(await _measure(run_one, per_task))
    report = {
        name: {
            "cpu_us_per_statement": round(statistics.median(c for c, _ in rounds), 1),
            "statements_per_second": round(statistics.median(r for _, r in rounds)),
        }
        for name, rounds in figures.items()
    }
    for name, figure in report.items():
        print(
            f"{name:16} {figure['cpu_us_per_statement']:7.1f} us CPU/statement "
            f"{figure['statements_per_second']:8d} statements/s"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(report, indent=2) + "\n")
    await pool.close()
    await engine.dispose()


if __name__ == "__main__":
    asyncio.run(main())
