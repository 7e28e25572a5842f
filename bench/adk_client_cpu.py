"""The client side of an append through ADK's API: the load generator's CPU
per `append_event`, session-state's HttpSessionService against ADK's own
DatabaseSessionService on PostgreSQL, side by side in one run.

    python -m bench.adk_client_cpu            # 6 rounds of 10 sessions x 40 appends
    python -m bench.adk_client_cpu --quick    # 2 rounds of 4 x 10 (a smoke run)

The server (`session-state serve`, PostgreSQL) and PostgreSQL run in other
processes, so this process's CPU time (user + system, `time.process_time`)
over a workload is what each service costs the application that calls it.
The events are built before the clock starts (the same ADK `Event`s on every
side, as bench.adk_api builds them); what is timed is `append_event` alone:
ADK's own work on the session (temp: state, committing the event to it) and
then, for ADK's service, SQLAlchemy and asyncpg, for ours the dump and HTTP.
A third side is HttpSessionService dumping the event to a dict first, then
to bytes: what dumping once, straight to bytes, saves. Sides
take turns round by round (each first in turn); medians of the rounds.
The goal: ours at most half of ADK's. Writes
bench/results/<name>.json.
"""

import argparse
import asyncio
import json
import os
import statistics
import time
from typing import Any

from bench import RESULTS
from bench.adk_api import event_json
from bench.client_cpu import _free_port
from bench.run import Server, create_database, drop_database, migrate, sqlalchemy_url

ADK = "adk DatabaseSessionService"
OURS = "session-state HttpSessionService"
OURS_DICT = "HttpSessionService, dict dump"
GOAL = 0.5


async def workload(service: Any, app: str, sessions: int, events: int) -> float:
    """CPU seconds per append of `sessions` sessions appending at once."""
    from google.adk.events import Event

    created = [
        await service.create_session(app_name=app, user_id="u", session_id=f"s{n}")
        for n in range(sessions)
    ]
    prepared = [
        [Event.model_validate(event_json(f"{app}-s{n}", step)) for step in range(events)]
        for n in range(sessions)
    ]

    async def writer(session: Any, batch: list[Any]) -> None:
        for event in batch:
            await service.append_event(session, event)

    started = time.process_time()
    await asyncio.gather(*(writer(s, b) for s, b in zip(created, prepared, strict=True)))
    cpu = time.process_time() - started
    for session in created:  # all stored
        stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
        assert len(stored.events) == events, (app, len(stored.events))
    return cpu / (sessions * events)


async def execute(rounds: int, sessions: int, events: int) -> dict[str, list[float]]:
    from google.adk.sessions import DatabaseSessionService

    from session_state_client import adk as adapter
    from session_state_client.adk import HttpSessionService

    class DictDump(HttpSessionService):
        """The adapter as it was: the event dumped to a dict, then encoded."""

        async def append_event(self, session: Any, event: Any) -> Any:
            original = adapter._event_bytes
            adapter._event_bytes = adapter._event_json  # type: ignore[assignment]
            try:
                return await super().append_event(session, event)
            finally:
                adapter._event_bytes = original

    adk_database = await create_database("bench_adk_cpu_adk")
    ours_database = await create_database("bench_adk_cpu_ours")
    server: Server | None = None
    services: dict[str, Any] = {}
    try:
        migrate(ours_database)
        server = Server(ours_database, _free_port(), workers=1)
        services = {
            ADK: DatabaseSessionService(db_url=sqlalchemy_url(adk_database)),
            OURS: HttpSessionService(base_url=server.base_url),
            OURS_DICT: DictDump(base_url=server.base_url),
        }
        for name, service in services.items():  # warm: connections, code paths
            await workload(service, f"warm-{len(name)}", 2, 5)
        cpu: dict[str, list[float]] = {name: [] for name in services}
        names = list(services)
        for index in range(rounds):
            order = names[index % len(names) :] + names[: index % len(names)]
            for name in order:
                app = f"r{index}-{names.index(name)}"
                cpu[name].append(await workload(services[name], app, sessions, events))
            shown = ", ".join(f"{name} {cpu[name][-1] * 1000:.3f} ms" for name in names)
            print(f"round {index + 1}/{rounds}: {shown}", flush=True)
        return cpu
    finally:
        for service in services.values():
            await service.close()
        if server is not None:
            server.stop()
        for database in (adk_database, ours_database):
            await drop_database(database)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--name", default="adk_client_cpu", help="results file name")
    arguments = parser.parse_args()
    rounds, sessions, events = (2, 4, 10) if arguments.quick else (6, 10, 40)
    load_before = os.getloadavg()[0]
    cpu = asyncio.run(execute(rounds, sessions, events))
    load_after = os.getloadavg()[0]
    medians = {name: statistics.median(values) * 1000 for name, values in cpu.items()}
    ratio = medians[OURS] / medians[ADK]
    lines = [
        f"{sessions} sessions x {events} appends at once, {rounds} rounds, load average"
        f" {load_before:.1f} -> {load_after:.1f} on {os.cpu_count()} CPUs;"
        " load generator CPU per append_event, median of the rounds:",
        "",
        "| service | CPU per append, ms | vs ADK's DatabaseSessionService |",
        "| --- | ---: | ---: |",
        *(
            f"| {name} | {value:.3f} | {value / medians[ADK]:.2f}x |"
            for name, value in medians.items()
        ),
        "",
        f"Goal (issue 28): at most {GOAL:.2f}x ADK's: {ratio:.2f}x,"
        f" {'met' if ratio <= GOAL else 'NOT met'}.",
    ]
    print("\n".join(lines))
    RESULTS.mkdir(parents=True, exist_ok=True)
    results = {
        "meta": {
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "rounds": rounds,
            "sessions": sessions,
            "events": events,
            "cpus": os.cpu_count(),
            "load_average": [round(load_before, 1), round(load_after, 1)],
        },
        "cpu_per_append_ms": {name: [round(v * 1000, 4) for v in cpu[name]] for name in cpu},
        "median_ms": medians,
        "ours_over_adk": ratio,
        "goal_met": ratio <= GOAL,
    }
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
