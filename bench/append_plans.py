"""What a group-commit batch costs PostgreSQL with its plan kept (a generic
plan, `plan_cache_mode = force_generic_plan`, as the batch connections are
set), the same with sequential scans off (a lever tried and not kept,
docs/performance.md, seventh round), and planned for its values on every
call (`auto`, what PostgreSQL does for this statement by itself), by batch
size.

    python -m bench.append_plans            # sizes 1 to 64, 4 alternating rounds
    python -m bench.append_plans --quick    # sizes 1, 5 and 40, 1 round of 100 calls

Each round and mode gets a fresh database with 200 sessions; the batch
statement (`APPEND_BATCH`) is prepared once on one connection and sent
`CALLS` times, each call appending one event to each of `size` sessions
(autocommit, as the server sends it); the median time of a call after the
first 50 (PostgreSQL's own choice settles after five) is the figure. This
is the measurement behind `KEPT_PLAN_ITEMS` in app/sessions/postgresql_appends.py.
Writes bench/results/append_plans.json (append_plans_quick.json).
"""

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import asyncpg

from bench.run import create_database, drop_database, dsn, migrate, write_results
from session_state.sessions.postgresql_statements import APPEND_BATCH as APPEND_BATCH_FORMS

# The form that writes app and user keys too, as the figures of the rounds
# before the session-only form were measured.
APPEND_BATCH = APPEND_BATCH_FORMS.shared
SESSIONS = 200
CALLS = 300
SETTLING_CALLS = 50
# Each mode's settings, as the connection that sends the batch has them: the
# batch connections keep the generic plan with sequential scans off.
MODES = {
    "auto": ("SET plan_cache_mode = auto",),
    "force_generic_plan": ("SET plan_cache_mode = force_generic_plan",),
    "force_generic_plan, enable_seqscan off": (
        "SET plan_cache_mode = force_generic_plan",
        "SET enable_seqscan = off",
    ),
}


def _value(name: str, session: int, call: int) -> Any:
    """One append's value of a batch parameter: an event of its own, a
    session-scope key, nothing shared (JSON as text, as the server binds it)."""
    values: dict[str, Any] = {
        "app_name": "a",
        "user_id": "u",
        "session_id": f"s{session}",
        "expected": None,
        "now": 1.0e9,
        "update_time": 1.0e9,
        "session_delta": json.dumps({"k": call}),
        "session_growth": 0,
        "app_delta": "{}",
        "app_sizes": "{}",
        "user_delta": "{}",
        "user_sizes": "{}",
        "max_bytes": 10**7,
        "replace_expiry": False,
        "ttl": None,
        "expire_at": None,
        "event_id": f"e{call}-{session}",
        "invocation_id": "i",
        "author": "agent",
        "event_time": 1.0e9,
        "data": json.dumps({"author": "agent", "content": {"parts": [{"text": "x" * 200}]}}),
    }
    return values[name]


async def batch_ms(mode: str, size: int, calls: int = CALLS) -> float:
    """The median time of one batch statement of `size` appends, in ms."""
    database = await create_database("bench_append_plans")
    try:
        migrate(database)
        connection = await asyncpg.connect(dsn(database))
        try:
            for setting in MODES[mode]:
                await connection.execute(setting)
            await connection.execute(
                "INSERT INTO sessions (app_name, user_id, id, state, revision, create_time,"
                " update_time, state_bytes) SELECT 'a', 'u', 's' || g, '{}', 0, 1, 1, 2"
                f" FROM generate_series(0, {SESSIONS - 1}) AS g"
            )
            statement = await connection.prepare(APPEND_BATCH.text)
            times = []
            for call in range(calls):
                sessions = [(call * size + index) % SESSIONS for index in range(size)]
                columns = [
                    [_value(name, session, call) for session in sessions]
                    for name in APPEND_BATCH.names
                ]
                started = time.perf_counter()
                await statement.fetch(*columns)
                times.append(time.perf_counter() - started)
        finally:
            await connection.close()
    finally:
        await drop_database(database)
    return statistics.median(times[SETTLING_CALLS:]) * 1000


async def run(sizes: tuple[int, ...], rounds: int, calls: int = CALLS) -> dict[str, Any]:
    runs: dict[str, dict[str, list[float]]] = {}
    for round_index in range(rounds):
        order = list(MODES) if round_index % 2 == 0 else list(MODES)[::-1]
        for size in sizes:
            for mode in order:
                figure = await batch_ms(mode, size, calls)
                runs.setdefault(str(size), {}).setdefault(mode, []).append(figure)
                print(f"round {round_index + 1}: {size} appends, {mode}: {figure:.3f} ms")
    medians = {
        size: {mode: statistics.median(found) for mode, found in by_mode.items()}
        for size, by_mode in runs.items()
    }
    return {"rounds": rounds, "calls": calls, "runs": runs, "medians": medians}


def table(results: dict[str, Any]) -> str:
    lines = [
        "| appends in the batch | kept plan, ms | kept, no sequential scans, ms"
        " | planned each run, ms | kept / planned | kept, no sequential scans / planned |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size, by_mode in results["medians"].items():
        kept, planned = by_mode["force_generic_plan"], by_mode["auto"]
        indexed = by_mode["force_generic_plan, enable_seqscan off"]
        lines.append(
            f"| {size} | {kept:.2f} | {indexed:.2f} | {planned:.2f} | {kept / planned:.2f}x"
            f" | {indexed / planned:.2f}x |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default=None, help="append_plans, or append_plans_quick")
    arguments = parser.parse_args(argv)
    sizes = (1, 5, 40) if arguments.quick else (1, 2, 5, 8, 10, 16, 24, 40, 64)
    if arguments.quick:
        results = asyncio.run(run(sizes, 1, calls=SETTLING_CALLS + 50))
    else:
        results = asyncio.run(run(sizes, 4))
    print(f"\n{table(results)}")
    write_results(arguments.name or f"append_plans{'_quick' if arguments.quick else ''}", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
