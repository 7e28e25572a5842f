"""Client CPU per append of the async client, transport against transport.

Starts `session-state serve` on a fresh SQLite file, then for each variant
runs a worker process that appends with 50 concurrent tasks through
`AsyncSessionStateClient` and reports its own process CPU time (user +
system) divided by the appends. The server runs in another process, so only
the client's work is counted. Variants take turns (each one first in turn),
repetition after repetition, and the median of the repetitions is reported.

    python -m bench.client_cpu                                  # this checkout (aiohttp)
    python -m bench.client_cpu --baseline /tmp/baseline_client  # plus an older client
    python -m bench.client_cpu --quick   # 1 repetition of 10 x 10, HEAD's client as baseline

`--baseline` is a directory holding an older `session_state_client` package
(a hand-written `_http11` transport, or a transport with one session rather
than one per event loop); its variants are
`baseline` (its own default transport) and, with `--httpx`, `httpx` (one
shared httpx.AsyncClient as `http_client`). Writes bench/results/client_cpu.json
(`--name` names another file there).
"""

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench import RESULTS

ROOT = Path(__file__).parent.parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _start_server(database: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "SESSION_STATE_DATABASE_URL": f"sqlite+aiosqlite:///{database}",
        "SESSION_STATE_LOG_LEVEL": "warning",
    }
    command = [sys.executable, "-m", "session_state.cli", "serve", "--port", str(port)]
    process = subprocess.Popen(command, env=env, cwd=ROOT)
    # Generous, as bench.run's: on a machine shared with other work, start-up took over 30 s.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.terminate()
    raise RuntimeError("the server did not start")


# -- the worker: one variant, one repetition, in a process of its own ----------


async def _appends(variant: str, base_url: str, tasks: int, per_task: int, app: str) -> float:
    from bench.events import event_document, spread_delta
    from session_state_client import AsyncSessionStateClient

    options: dict[str, Any] = {"base_url": base_url}
    if variant == "httpx":
        options = {"http_client": httpx.AsyncClient(base_url=base_url)}
    async with AsyncSessionStateClient(**options) as client:
        session_ids = [f"s{index}" for index in range(tasks)]
        for session_id in session_ids:
            await client.create_session(app_name=app, user_id="u", session_id=session_id)

        async def writer(session_id: str, count: int) -> None:
            for step in range(count):
                event = event_document(author="agent", delta=spread_delta(session_id, step))
                await client.append_event(
                    app_name=app, user_id="u", session_id=session_id, event=event
                )

        # Warm up: connections opened, code paths imported and cached.
        await asyncio.gather(*(writer(session_id, 3) for session_id in session_ids))
        started = time.process_time()
        await asyncio.gather(*(writer(session_id, per_task) for session_id in session_ids))
        return (time.process_time() - started) / (tasks * per_task)


def _worker(arguments: argparse.Namespace) -> None:
    if arguments.baseline:
        sys.path.insert(0, arguments.baseline)
    seconds = asyncio.run(
        _appends(
            arguments.worker,
            arguments.base_url,
            arguments.tasks,
            arguments.per_task,
            arguments.app,
        )
    )
    import session_state_client

    print(json.dumps({"cpu_ms": seconds * 1000, "package": session_state_client.__file__}))


# -- the driver ----------------------------------------------------------------


def _run_worker(
    variant: str, base_url: str, arguments: argparse.Namespace, app: str
) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "bench.client_cpu",
        "--worker",
        variant,
        "--base-url",
        base_url,
        "--tasks",
        str(arguments.tasks),
        "--per-task",
        str(arguments.per_task),
        "--app",
        app,
    ]
    if variant in ("baseline", "httpx"):
        command += ["--baseline", arguments.baseline]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        env.pop(name, None)
    output = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, check=True).stdout
    result: dict[str, Any] = json.loads(output.decode().strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="directory holding an older session_state_client")
    parser.add_argument("--httpx", action="store_true", help="also the baseline's httpx path")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="1 repetition of 10 tasks x 10; without --baseline, HEAD's client as baseline",
    )
    parser.add_argument("--repetitions", type=int, help="default 6 (--quick: 1)")
    parser.add_argument("--tasks", type=int, help="default 50 (--quick: 10)")
    parser.add_argument("--per-task", type=int, help="default 40 (--quick: 10)")
    parser.add_argument("--name", default="client_cpu", help="results file name, no suffix")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--app", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    arguments.repetitions = arguments.repetitions or (1 if arguments.quick else 6)
    arguments.tasks = arguments.tasks or (10 if arguments.quick else 50)
    arguments.per_task = arguments.per_task or (10 if arguments.quick else 40)
    if arguments.worker:
        _worker(arguments)
        return
    from bench.run import head_checkout  # not in the workers: what they import stays small

    with contextlib.ExitStack() as stack:
        if arguments.quick and not arguments.baseline:
            arguments.baseline = str(stack.enter_context(head_checkout()) / "client")
        _drive(arguments)


def _drive(arguments: argparse.Namespace) -> None:
    variants = ["aiohttp"]
    if arguments.baseline:
        variants.insert(0, "baseline")
        if arguments.httpx:
            variants.append("httpx")
    port = _free_port()
    with tempfile.TemporaryDirectory() as directory:
        server = _start_server(Path(directory) / "bench.db", port)
        try:
            figures: dict[str, list[float]] = {variant: [] for variant in variants}
            for repetition in range(arguments.repetitions):
                # Each variant first in turn: a server slowing down as its
                # database grows then favours none of them.
                shift = repetition % len(variants)
                for variant in variants[shift:] + variants[:shift]:
                    app = f"cpu-{variant}-{repetition}"
                    result = _run_worker(variant, f"http://127.0.0.1:{port}", arguments, app)
                    figures[variant].append(result["cpu_ms"])
                    print(f"{variant:8} repetition {repetition}: {result['cpu_ms']:.3f} ms")
        finally:
            server.terminate()
            server.wait(timeout=30)

    import aiohttp

    summary = {
        "what": "client process CPU time per append, ms (50 concurrent tasks, SQLite server)",
        "tasks": arguments.tasks,
        "appends_per_repetition": arguments.tasks * arguments.per_task,
        "repetitions": arguments.repetitions,
        "python": sys.version.split()[0],
        "aiohttp": aiohttp.__version__,
        "httpx": httpx.__version__,
        "median_ms": {variant: round(statistics.median(v), 4) for variant, v in figures.items()},
        "runs_ms": {variant: [round(value, 4) for value in v] for variant, v in figures.items()},
    }
    print(json.dumps(summary["median_ms"], indent=2))
    results = RESULTS / f"{arguments.name}.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
