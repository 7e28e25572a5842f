"""The same app under two HTTP servers: uvicorn (`session-state serve`, as
shipped) and granian (a Rust HTTP server, through its ASGI interface, one
worker, uvloop), on one PostgreSQL database, alternating round by round.
ADK's API drives both (HttpSessionService, bench.adk_api's workload).

    python -m bench.server_choice            # 10x40 and 50x40, 5 rounds
    python -m bench.server_choice --quick    # 4x10, one round (a smoke run)
    python -m bench.server_choice --granian-option=--runtime-mode=mt

Per side: events/s, p99, and the CPU per append of the load generator, the
server (its process and its workers) and PostgreSQL's backends; medians of
the rounds with their spread, and granian against uvicorn round by round,
"within noise" where some rounds put one ahead and others the other.
Writes bench/results/<name>.json and .md.
"""

import argparse
import asyncio
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from bench import RESULTS
from bench.adk_api import WARM_UP, AdkApi, Shape, workload
from bench.client_cpu import _free_port
from bench.process_cpu import Meter, backend_pids, with_children
from bench.run import (
    ADMIN_DSN,
    Server,
    create_database,
    drop_database,
    medians_of,
    migrate,
    nothing_lost,
    sqlalchemy_url,
    vacuum,
    wait_until_ready,
    write_results,
)
from bench.spread import percent, spread, verdict

FIGURES = ("events_per_s", "p99_ms", "load_cpu_ms", "server_cpu_ms", "postgresql_cpu_ms")


class Granian:
    """granian serving the app's factory, configured as `Server` configures
    `serve` (same environment, `settings` added: bench.langgraph's larger
    bodies)."""

    def __init__(
        self,
        database: str,
        port: int,
        options: list[str],
        settings: dict[str, str] | None = None,
    ) -> None:
        self.port = port
        env = {
            **os.environ,
            "SESSION_STATE_DATABASE_URL": sqlalchemy_url(database),
            "SESSION_STATE_LOG_LEVEL": "warning",
            "SESSION_STATE_DB_POOL_SIZE": "10",
            "SESSION_STATE_DB_MAX_OVERFLOW": "0",
            **(settings or {}),
        }
        command = [
            sys.executable,
            "-m",
            "granian",
            "--interface",
            "asgi",
            "--factory",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--loop",
            "uvloop",
            "--log-level",
            "warning",
            *options,
            "session_state.main:create_app",
        ]
        self.process = subprocess.Popen(command, env=env)
        wait_until_ready(self)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


async def run(shapes: list[Shape], rounds: int, window_s: float, options: list[str]) -> Any:
    from session_state_client.adk import HttpSessionService

    database = await create_database("bench_server_choice")
    migrate(database)
    servers: dict[str, Any] = {}
    targets: dict[str, AdkApi] = {}
    runs: dict[str, dict[str, list[dict[str, float]]]] = {}
    try:
        servers["uvicorn"] = Server(database, port=_free_port(), workers=1)
        servers["granian"] = Granian(database, _free_port(), options)

        def meter(server: Any) -> Meter:
            async def server_pids() -> list[int]:
                return with_children(server.process.pid)

            postgresql: Callable[[], Awaitable[list[int]]] = lambda: backend_pids(  # noqa: E731
                ADMIN_DSN, database
            )
            return Meter({"server": server_pids, "postgresql": postgresql})

        for name, server in servers.items():
            service = HttpSessionService(base_url=server.base_url)
            targets[name] = AdkApi(name, service, service.close)
            targets[name].meter = meter(server)
            await workload(targets[name], f"{name}-warm-up", WARM_UP)

        async def vacuum_once() -> None:
            await vacuum(database)

        for index in range(rounds):
            order = list(targets) if index % 2 == 0 else list(targets)[::-1]
            for shape in shapes:
                label = f"{shape.sessions}x{shape.events}"
                for name in order:
                    target = targets[name]
                    figures = await workload(
                        target,
                        f"{name}-r{index}-{label}",
                        shape,
                        window_s,
                        target.meter,
                        before_pass=vacuum_once,
                    )
                    runs.setdefault(label, {}).setdefault(name, []).append(figures)
                    shown = ", ".join(f"{key}={figures[key]:,.3f}" for key in FIGURES)
                    print(f"round {index + 1}/{rounds} {label} {name}: {shown}", flush=True)
    finally:
        for target in targets.values():
            await target.close()
        for server in servers.values():
            server.stop()
        await drop_database(database)
    return {
        "rounds": rounds,
        "window_s": window_s,
        "options": options,
        "runs": runs,
        "medians": medians_of(runs),
    }


def table(results: dict[str, Any]) -> str:
    lines = [
        "| shape | figure | uvicorn (spread) | granian (spread) | granian against uvicorn |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for label, by_server in results["runs"].items():
        for figure in FIGURES:
            uvicorn = [found[figure] for found in by_server["uvicorn"]]
            granian = [found[figure] for found in by_server["granian"]]
            medians = results["medians"][label]
            lines.append(
                f"| {label} | {figure} | {medians['uvicorn'][figure]:,.3f}"
                f" ({percent(spread(uvicorn))}) | {medians['granian'][figure]:,.3f}"
                f" ({percent(spread(granian))}) |"
                f" {verdict(granian, uvicorn, higher_is_better=figure == 'events_per_s')} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="4x10, one round, one pass")
    parser.add_argument("--shapes", help="sessions x events, by commas (default 10x40,50x40)")
    parser.add_argument("--rounds", type=int, help="default 5 (--quick: 1)")
    parser.add_argument("--window", type=float, help="timed seconds a side a round (default 3)")
    parser.add_argument(
        "--granian-option", action="append", default=[], help="passed to granian (repeat)"
    )
    parser.add_argument("--name", default="server_choice")
    arguments = parser.parse_args(argv)
    shapes = Shape.parse_all(arguments.shapes or ("4x10" if arguments.quick else "10x40,50x40"))
    rounds = arguments.rounds or (1 if arguments.quick else 5)
    window_s = arguments.window if arguments.window is not None else (0 if arguments.quick else 3)
    results = asyncio.run(run(shapes, rounds, window_s, arguments.granian_option))
    rendered = table(results)
    print(f"\n{rendered}")
    write_results(arguments.name, results)
    (RESULTS / f"{arguments.name}.md").write_text(rendered)
    return 0 if nothing_lost(results["runs"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
