"""ADK's synchronous `Runner.run()` from many threads at once, as a threaded
web server calls it (each call on a new thread with an event loop of its
own), side by side: HttpSessionService + HttpMemoryService on a started
server (PostgreSQL), ADK's DatabaseSessionService on the same PostgreSQL and
on SQLite, and ADK's in-memory services.

    python -m bench.adk_threads            # 8 threads x 5 turns, 3 rounds
    python -m bench.adk_threads --quick    # 4 threads x 3 turns, 1 round, 30 s deadline

Each side runs in a process of its own with a deadline, so a side that
hangs is reported as hung instead of stopping the benchmark. Reported per
side and round: seconds, errors (with the first one's text), whether it
hung, and sessions whose stored state is wrong. Writes
bench/results/<name>.json.
"""

import argparse
import asyncio
import json
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import Any

from bench import RESULTS
from bench.client_cpu import _free_port
from bench.run import Server, create_database, drop_database, migrate, sqlalchemy_url

STARTING = 300.0  # seconds a worker may take to import, before its round
SIDES = ("session-state", "adk-database-postgresql", "adk-database-sqlite", "adk-in-memory")


def _services(side: str, argument: str) -> tuple[Any, Any]:
    from google.adk.memory import InMemoryMemoryService
    from google.adk.sessions import DatabaseSessionService, InMemorySessionService

    from session_state_client.adk import HttpMemoryService, HttpSessionService

    if side == "session-state":
        return HttpSessionService(base_url=argument), HttpMemoryService(base_url=argument)
    if side == "adk-in-memory":
        return InMemorySessionService(), InMemoryMemoryService()
    return DatabaseSessionService(db_url=argument), InMemoryMemoryService()


def _agent() -> Any:
    from tests.adk_counting_agent import CountingAgent

    return CountingAgent(name="counter")


def _worker(side: str, argument: str, threads: int, turns: int) -> dict[str, Any]:
    """One round of one side, in this process."""
    from google.adk.runners import Runner
    from google.genai import types

    sessions, memory = _services(side, argument)
    app = f"threads-{uuid.uuid4().hex[:8]}"
    runner = Runner(app_name=app, agent=_agent(), session_service=sessions, memory_service=memory)
    errors: list[str] = []
    print("ready", flush=True)  # imported: the round's deadline starts

    def conversation(user: str) -> None:
        try:
            session = asyncio.run(sessions.create_session(app_name=app, user_id=user))
            for turn in range(turns):
                message = types.Content(role="user", parts=[types.Part(text=f"m{turn}")])
                for _event in runner.run(user_id=user, session_id=session.id, new_message=message):
                    pass
            stored = asyncio.run(
                sessions.get_session(app_name=app, user_id=user, session_id=session.id)
            )
            asyncio.run(memory.add_session_to_memory(stored))
            if stored is None or stored.state.get("turns") != turns:
                errors.append(f"{user}: wrong state {stored and stored.state}")
        except BaseException as error:
            errors.append(f"{type(error).__name__}: {error}")

    users = [f"u{index}" for index in range(threads)]
    workers = [threading.Thread(target=conversation, args=(user,)) for user in users]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return {"seconds": time.perf_counter() - started, "errors": errors}


def _round(side: str, argument: str, arguments: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "bench.adk_threads",
        "--worker",
        side,
        "--argument",
        argument,
        "--threads",
        str(arguments.threads),
        "--turns",
        str(arguments.turns),
    ]
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)
        assert process.stdout is not None
        # The deadline counts from the worker's "ready" (its imports done): on
        # a loaded machine, importing ADK alone can take most of a minute.
        ready, _, _ = select.select([process.stdout], [], [], STARTING)
        if ready:
            process.stdout.readline()
        try:
            # What it prints after "ready" is one line: the pipe cannot fill.
            process.wait(timeout=arguments.deadline if ready else 0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return {"hung": True, "seconds": None, "errors": []}
        stdout = process.stdout.read()
        if process.returncode != 0:
            stderr.seek(0)
            return {"hung": False, "seconds": None, "errors": [stderr.read().strip()[-300:]]}
    result: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return {"hung": False, **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--threads", type=int)
    parser.add_argument("--turns", type=int)
    parser.add_argument(
        "--deadline", type=float, help="seconds per round, imports aside (default 60; --quick: 30)"
    )
    parser.add_argument("--name", default="adk_threads")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--argument", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    arguments.threads = arguments.threads or (4 if arguments.quick else 8)
    arguments.turns = arguments.turns or (3 if arguments.quick else 5)
    rounds = arguments.rounds or (1 if arguments.quick else 3)
    # ADK's database services hang here (the finding): each costs its deadline.
    arguments.deadline = arguments.deadline or (30.0 if arguments.quick else 60.0)
    if arguments.worker:
        result = _worker(arguments.worker, arguments.argument, arguments.threads, arguments.turns)
        print(json.dumps(result))
        return

    ours_db = asyncio.run(create_database("bench_threads"))
    migrate(ours_db)
    raw: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    port = _free_port()
    server = Server(ours_db, port, workers=1)
    try:
        with tempfile.TemporaryDirectory() as directory:
            for repetition in range(rounds):
                # A fresh ADK database per round: its tables are made on first use.
                adk_db = asyncio.run(create_database("bench_threads_adk"))
                arguments_of = {
                    "session-state": server.base_url,
                    "adk-database-postgresql": sqlalchemy_url(adk_db),
                    "adk-database-sqlite": f"sqlite+aiosqlite:///{directory}/adk{repetition}.db",
                    "adk-in-memory": "-",
                }
                shift = repetition % len(SIDES)
                for side in SIDES[shift:] + SIDES[:shift]:
                    result = _round(side, arguments_of[side], arguments)
                    raw[side].append(result)
                    print(f"{side:26} round {repetition}: {_describe(result)}", flush=True)
                asyncio.run(drop_database(adk_db))
    finally:
        server.stop()
        asyncio.run(drop_database(ours_db))
    summary = {
        "what": f"{arguments.threads} threads x {arguments.turns} turns of ADK's sync Runner.run",
        "rounds": rounds,
        "sides": {side: _summarise(results) for side, results in raw.items()},
        "raw": raw,
    }
    print(json.dumps(summary["sides"], indent=2))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(summary, indent=2) + "\n")
    ours = summary["sides"]["session-state"]
    met = not ours["rounds_hung"] and not ours["errors"]
    print(
        f"Check: session-state's side never hung, no error, every state right: "
        f"{'met' if met else 'NOT met'}"
    )
    if not met:
        sys.exit(1)


def _describe(result: dict[str, Any]) -> str:
    if result["hung"]:
        return "HUNG (deadline passed)"
    seconds = "-" if result["seconds"] is None else f"{result['seconds']:.2f} s"
    first = f", first: {result['errors'][0][:120]}" if result["errors"] else ""
    return f"{seconds}, {len(result['errors'])} errors{first}"


def _summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    finished = [result["seconds"] for result in results if result["seconds"] is not None]
    return {
        "median_seconds": round(statistics.median(finished), 3) if finished else None,
        "rounds_hung": sum(result["hung"] for result in results),
        "errors": sum(len(result["errors"]) for result in results),
    }


if __name__ == "__main__":
    main()
