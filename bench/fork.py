"""Forking long sessions, on both backends: a session of 100,000 events
(each with a state delta) forked whole and at its middle event, through the
HTTP API of a started server.

    python -m bench.fork            # 100,000 events, 3 forks of each kind
    python -m bench.fork --events 2000 --repetitions 1
    python -m bench.fork --quick    # the same

Prints medians and writes bench/results/fork.json. The events are seeded with
SQL (appending 100,000 events first is not what is measured); each fork is
checked: its revision is the number of events copied and its state is the
one the copied deltas leave.
"""

import argparse
import asyncio
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from bench import RESULTS
from bench.run import Server, create_database, drop_database, dsn, migrate

APP, USER, SOURCE = "bench", "u", "long"
BASE_TIME = 1_700_000_000
PORT = 18931

# Event JSON with a one-key delta: {"n": g} after event g.
_PG_SEED = """
INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, author, timestamp, data)
SELECT $1, $2, $3, g, 'e' || g, 'inv', 'agent', $4::float8 + g,
       jsonb_build_object('id', 'e' || g, 'invocationId', 'inv', 'author', 'agent',
                          'timestamp', $4::float8 + g,
                          'content', jsonb_build_object('parts', jsonb_build_array(
                              jsonb_build_object('text', 'step ' || g))),
                          'actions', jsonb_build_object('stateDelta',
                              jsonb_build_object('n', g)))::text
  FROM generate_series(1, $5::int) AS g
"""
_SQLITE_SEED = """
WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < ?5)
INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, author, timestamp, data)
SELECT ?1, ?2, ?3, x, 'e' || x, 'inv', 'agent', ?4 + x,
       json_object('id', 'e' || x, 'invocationId', 'inv', 'author', 'agent',
                   'timestamp', ?4 + x,
                   'content', json_object('parts', json_array(json_object('text', 'step ' || x))),
                   'actions', json_object('stateDelta', json_object('n', x)))
  FROM g
"""
_SESSION_AFTER_SEED = (
    "UPDATE sessions SET revision = {count}, update_time = {time}, state = {state}"
    " WHERE app_name = {app} AND user_id = {user} AND id = {id}"
)


async def seed_postgresql(database: str, count: int) -> None:
    connection = await asyncpg.connect(dsn(database))
    try:
        await connection.execute(_PG_SEED, APP, USER, SOURCE, BASE_TIME, count)
        await connection.execute(
            _SESSION_AFTER_SEED.format(
                count="$4::int",
                time="$5::float8",
                state="jsonb_build_object('n', $4::int)",
                app="$1",
                user="$2",
                id="$3",
            ),
            APP,
            USER,
            SOURCE,
            count,
            BASE_TIME + count,
        )
        await connection.execute("ANALYZE")
    finally:
        await connection.close()


def seed_sqlite(path: Path, count: int) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute(_SQLITE_SEED, (APP, USER, SOURCE, BASE_TIME, count))
        connection.execute(
            _SESSION_AFTER_SEED.format(
                count="?4", time="?5", state="json_object('n', ?4)", app="?1", user="?2", id="?3"
            ),
            (APP, USER, SOURCE, count, BASE_TIME + count),
        )


def fork(client: httpx.Client, new_id: str, up_to: str | None) -> float:
    body: dict[str, Any] = {"sessionId": new_id}
    if up_to is not None:
        body["upToEventId"] = up_to
    started = time.perf_counter()
    answer = client.post(f"/apps/{APP}/users/{USER}/sessions/{SOURCE}/fork", json=body)
    seconds = time.perf_counter() - started
    answer.raise_for_status()
    copied = int(up_to[1:]) if up_to else int(answer.headers["ETag"].strip('"'))
    forked = answer.json()
    # The fork's revision counts the copies; its state is what they leave.
    if answer.headers["ETag"] != f'"{copied}"' or forked["state"] != {"n": copied}:
        raise AssertionError(f"fork {new_id}: {answer.headers['ETag']} {forked['state']}")
    return seconds


def run_forks(base_url: str, count: int, repetitions: int) -> dict[str, float]:
    with httpx.Client(base_url=base_url, timeout=600) as client:
        whole = [fork(client, f"whole-{index}", None) for index in range(repetitions)]
        middle = [fork(client, f"middle-{index}", f"e{count // 2}") for index in range(repetitions)]
    return {
        "fork_all_median_s": statistics.median(whole),
        "fork_all_events_per_s": count / statistics.median(whole),
        "fork_middle_median_s": statistics.median(middle),
        "fork_middle_events_per_s": (count // 2) / statistics.median(middle),
    }


def create_source(base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=60) as client:
        answer = client.post(
            f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": SOURCE, "state": {"n": 0}}
        )
        answer.raise_for_status()


async def on_postgresql(count: int, repetitions: int) -> dict[str, float]:
    database = await create_database("bench_fork")
    try:
        migrate(database)
        server = Server(database, PORT, workers=1)
        try:
            create_source(server.base_url)
            await seed_postgresql(database, count)
            return run_forks(server.base_url, count, repetitions)
        finally:
            server.stop()
    finally:
        await drop_database(database)


def on_sqlite(count: int, repetitions: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fork.db"
        server = Server("", PORT, workers=1, database_url=f"sqlite+aiosqlite:///{path}")
        try:
            create_source(server.base_url)
            seed_sqlite(path, count)
            return run_forks(server.base_url, count, repetitions)
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 events, 1 fork of each kind")
    parser.add_argument("--events", type=int, help="default 100,000 (--quick: 2,000)")
    parser.add_argument("--repetitions", type=int, help="default 3 (--quick: 1)")
    parser.add_argument("--name", default="fork")
    arguments = parser.parse_args()
    arguments.events = arguments.events or (2_000 if arguments.quick else 100_000)
    arguments.repetitions = arguments.repetitions or (1 if arguments.quick else 3)
    results = {
        "events": arguments.events,
        "repetitions": arguments.repetitions,
        "postgresql": asyncio.run(on_postgresql(arguments.events, arguments.repetitions)),
        "sqlite": on_sqlite(arguments.events, arguments.repetitions),
    }
    for backend in ("postgresql", "sqlite"):
        figures = results[backend]
        print(
            f"{backend:>10}: all {arguments.events:,} events {figures['fork_all_median_s']:.2f} s"
            f" ({figures['fork_all_events_per_s']:,.0f} events/s),"
            f" up to the middle {figures['fork_middle_median_s']:.2f} s"
            f" ({figures['fork_middle_events_per_s']:,.0f} events/s)"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
