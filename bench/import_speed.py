"""Import throughput into PostgreSQL: 1,000 sessions of 100 events, from a
dump (`session-state import`) and from an ADK DatabaseSessionService on
SQLite (`session-state import-adk`), each into a fresh database, timed as
the operator runs it (the CLI in its own process).

    python -m bench.import_speed                    # 1,000 x 100
    python -m bench.import_speed --sessions 50 --events 20
    python -m bench.import_speed --quick            # the same

Prints the times and writes bench/results/import_speed.json. The sources are
written in bulk (ADK's tables with SQL, after ADK's own service created
them): what is measured is the import, not the writing of its source.
"""

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from google.adk.sessions import DatabaseSessionService

from bench import RESULTS
from bench.run import create_database, drop_database, migrate, sqlalchemy_url

BASE_TIME = 1_700_000_000.0


def event_document(session: int, step: int) -> dict[str, Any]:
    """An event as ADK stores it (snake_case, exclude_none)."""
    return {
        "id": f"e-{session}-{step}",
        "invocation_id": f"inv-{step // 4}",
        "author": "planner" if step % 2 else "user",
        "timestamp": BASE_TIME + session + step / 1000,
        "content": {"role": "model", "parts": [{"text": f"step {step} of session {session}"}]},
        "actions": {
            "state_delta": {"step": step, "user:last": step},
            "artifact_delta": {},
            "requested_auth_configs": {},
            "requested_tool_confirmations": {},
        },
    }


def write_dump(path: Path, sessions: int, events: int) -> None:
    with path.open("w") as out:
        header = {"format": "session-state-dump", "version": 1, "exportedAt": BASE_TIME}
        out.write(json.dumps(header) + "\n")
        for session in range(sessions):
            line = {
                "kind": "session",
                "app": "bench",
                "user": f"u{session % 50}",
                "id": f"s{session}",
                "state": {"step": events - 1},
                "initialState": {},
                "revision": events,
                "createTime": BASE_TIME + session,
                "updateTime": BASE_TIME + session + events,
                "expireTime": None,
                "ttlSeconds": None,
                "events": events,
            }
            out.write(json.dumps(line) + "\n")
            for step in range(events):
                event = event_document(session, step)
                out.write(json.dumps({"kind": "event", "seq": step + 1, "event": event}) + "\n")
        out.write(json.dumps({"kind": "end", "counts": {}}) + "\n")


async def create_adk_tables(url: str) -> None:
    service = DatabaseSessionService(db_url=url)
    await service.create_session(app_name="setup", user_id="setup", session_id="setup")
    await service.delete_session(app_name="setup", user_id="setup", session_id="setup")
    await service.close()


def write_adk(path: Path, sessions: int, events: int) -> None:
    asyncio.run(create_adk_tables(f"sqlite+aiosqlite:///{path}"))

    def stamp(seconds: float) -> str:
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")

    with sqlite3.connect(path) as connection:
        connection.executemany(
            "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)"
            " VALUES ('bench', ?, ?, ?, ?, ?)",
            [
                (
                    f"u{session % 50}",
                    f"s{session}",
                    json.dumps({"step": events - 1}),
                    stamp(BASE_TIME + session),
                    stamp(BASE_TIME + session + events),
                )
                for session in range(sessions)
            ],
        )
        for session in range(sessions):
            connection.executemany(
                "INSERT INTO events (id, app_name, user_id, session_id, invocation_id,"
                " timestamp, event_data) VALUES (?, 'bench', ?, ?, ?, ?, ?)",
                [
                    (
                        document["id"],
                        f"u{session % 50}",
                        f"s{session}",
                        document["invocation_id"],
                        stamp(document["timestamp"]),
                        json.dumps(document),
                    )
                    for document in (event_document(session, step) for step in range(events))
                ],
            )


def timed_cli(arguments: list[str], database: str) -> tuple[float, int]:
    env = {**os.environ, "SESSION_STATE_DATABASE_URL": sqlalchemy_url(database)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "session_state.cli", *arguments],
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    summary = json.loads(done.stdout)["imported"]
    print(f"  {arguments[0]}: {seconds:.1f} s, {summary['events']['added']:,} events added")
    return seconds, int(summary["events"]["added"])


async def measure(arguments: list[str]) -> tuple[float, int]:
    database = await create_database("bench_import")
    try:
        migrate(database)
        return await asyncio.to_thread(timed_cli, arguments, database)
    finally:
        await drop_database(database)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 sessions x 20 events")
    parser.add_argument("--sessions", type=int, help="default 1,000 (--quick: 50)")
    parser.add_argument("--events", type=int, help="default 100 (--quick: 20)")
    parser.add_argument("--name", default="import_speed")
    options = parser.parse_args()
    options.sessions = options.sessions or (50 if options.quick else 1000)
    options.events = options.events or (20 if options.quick else 100)
    with tempfile.TemporaryDirectory() as folder:
        dump, adk = Path(folder) / "dump.jsonl", Path(folder) / "adk.db"
        write_dump(dump, options.sessions, options.events)
        write_adk(adk, options.sessions, options.events)
        print(f"{options.sessions:,} sessions x {options.events} events into PostgreSQL")
        dump_seconds, dump_added = asyncio.run(measure(["import", str(dump)]))
        adk_seconds, adk_added = asyncio.run(measure(["import-adk", "--from", f"sqlite:///{adk}"]))
    total = options.sessions * options.events
    results = {
        "sessions": options.sessions,
        "events_per_session": options.events,
        "import_seconds": dump_seconds,
        "import_events_per_s": total / dump_seconds,
        "import_adk_seconds": adk_seconds,
        "import_adk_events_per_s": total / adk_seconds,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{options.name}.json").write_text(json.dumps(results, indent=2) + "\n")
    # Every event of the source imported, by both commands.
    if dump_added != total or adk_added != total:
        sys.exit(f"events imported: {dump_added} and {adk_added}, not {total} each")
    print(f"Check: every event imported ({total:,} by each command): met")


if __name__ == "__main__":
    main()
