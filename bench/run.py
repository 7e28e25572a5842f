"""Benchmark session-state against ADK's DatabaseSessionService and the asyncpg
floor, side by side in one run on one PostgreSQL; then every target through
ADK's own API, google-adk-community's RedisSessionService among them
(bench/adk_api.py), with the goals (docs/performance.md) printed as met or
not met.

    python -m bench.run            # full sizes, 3 repetitions
    python -m bench.run --quick    # small sizes, 1 repetition (CI)

Writes bench/results/<name>.json, .md (table) and .png (chart).
"""

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from bench import RESULTS, report, seed
from bench.events import event_document, hot_delta, spread_delta
from bench.targets import AdkTarget, FloorTarget, HttpTarget, Target

ADMIN_DSN = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@dataclass(frozen=True)
class Sizes:
    repetitions: int
    sessions: int
    users: int
    events_per_session: int
    sequential_appends: int
    history_lengths: tuple[int, ...]
    read_samples: int
    listed_sessions: int
    list_users: int
    list_samples: int
    racing_creations: int


FULL = Sizes(3, 50, 10, 40, 2000, (100, 1_000, 10_000, 100_000), 200, 100_000, 100, 30, 50)
QUICK = Sizes(1, 8, 2, 5, 50, (100, 1_000), 20, 2_000, 2, 3, 10)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def latency_summary(latencies: list[float]) -> dict[str, float]:
    return {
        "p50_ms": percentile(latencies, 0.5) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
    }


def medians_of(
    runs: dict[str, dict[str, list[dict[str, float]]]],
) -> dict[str, dict[str, dict[str, float]]]:
    """Each figure's median over the repetitions, by workload and side."""
    return {
        workload: {
            side: {key: statistics.median(run[key] for run in found) for key in found[0]}
            for side, found in by_side.items()
        }
        for workload, by_side in runs.items()
    }


def write_results(name: str, results: dict[str, Any]) -> Path:
    """The results as bench/results/<name>.json."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    return path


async def timed(call: Callable[[], Awaitable[Any]], latencies: list[float]) -> Any:
    started = time.perf_counter()
    result = await call()
    latencies.append(time.perf_counter() - started)
    return result


# -- databases and the server --------------------------------------------------


async def create_database(prefix: str) -> str:
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    connection = await asyncpg.connect(ADMIN_DSN)
    try:
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()
    return name


async def vacuum(name: str) -> None:
    """Every append rewrites its session row, leaving a dead tuple behind.
    PostgreSQL's autovacuum clears them in production; it is off on this
    machine's cluster, so the run vacuums between workloads, for every target."""
    connection = await asyncpg.connect(dsn(name))
    try:
        await connection.execute("VACUUM ANALYZE")
    finally:
        await connection.close()


async def checkpoint() -> None:
    """A checkpoint of the whole cluster, now: after one, each page's first
    change writes its whole image to the WAL, so a side timed right after
    a checkpoint and one timed where one falls pay differently; a bench
    calls this before each side it times."""
    connection = await asyncpg.connect(ADMIN_DSN)
    try:
        await connection.execute("CHECKPOINT")
    finally:
        await connection.close()


async def drop_database(name: str) -> None:
    connection = await asyncpg.connect(ADMIN_DSN)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await connection.close()


@contextlib.contextmanager
def head_checkout() -> Iterator[Path]:
    """This repository's HEAD as a source tree of its own (`git archive`),
    the other checkout of a quick before/after run: every side of the
    comparison runs, the code compared with its own last commit."""
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="bench_head_") as folder:
        archive = subprocess.run(
            ["git", "archive", "HEAD"], cwd=root, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        yield Path(folder)


def nothing_lost(runs: dict[str, dict[str, list[dict[str, float]]]]) -> bool:
    """Prints and returns whether no side of bench.adk_api's workload lost an
    event or a key, or stored a session's events out of order, in any round."""
    counts = ("lost_events", "misordered_sessions", "lost_keys")
    found = {
        f"{label} {side} {count}": total
        for label, by_side in runs.items()
        for side, rounds in by_side.items()
        for count in counts
        if (total := sum(figures.get(count, 0) for figures in rounds))
    }
    print(f"Check: nothing lost or out of order: {f'NOT met {found}' if found else 'met'}")
    return not found


def dsn(name: str) -> str:
    return ADMIN_DSN.rsplit("/", 1)[0] + f"/{name}"


def sqlalchemy_url(name: str) -> str:
    return dsn(name).replace("postgresql://", "postgresql+asyncpg://")


def cli_module(source: Path | None) -> str:
    """This checkout's installed server, or another checkout's source tree
    run by its folder name (its modules import each other relatively; an
    older checkout's, absolutely, as `app`)."""
    return "session_state.cli" if source is None else "app.cli"


def migrate(name: str) -> None:
    env = {**os.environ, "SESSION_STATE_DATABASE_URL": sqlalchemy_url(name)}
    subprocess.run(
        [sys.executable, "-m", cli_module(None), "migrate"],
        env=env,
        check=True,
        capture_output=True,
    )


def wait_until_ready(server: Any) -> None:
    """Returns once the server answers /readyz; stops it and raises if it
    does not within two minutes (generous: on a machine shared with other
    work, start-up took over 30 s)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{server.base_url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"the server on {server.base_url} did not start")


class Server:
    """`session-state serve` in its own process, as it runs in production."""

    def __init__(
        self,
        database: str,
        port: int,
        workers: int,
        source: Path | None = None,
        database_url: str | None = None,
    ) -> None:
        """`database`: a PostgreSQL database's name, unless `database_url`
        names another database; `source`: run that checkout's server."""
        self.port = port
        env = {
            **os.environ,
            **({"PYTHONPATH": str(source)} if source is not None else {}),
            "SESSION_STATE_DATABASE_URL": database_url or sqlalchemy_url(database),
            "SESSION_STATE_LOG_LEVEL": "warning",
            # Within PostgreSQL's 100 connections, next to ADK's and the floor's pools.
            "SESSION_STATE_DB_POOL_SIZE": "10",
            # As the default: overflow connections are opened and closed per use.
            "SESSION_STATE_DB_MAX_OVERFLOW": "0",
            "SESSION_STATE_MAX_BODY_BYTES": str(64 * 1024 * 1024),
            # The memory figure reads a 100,000-event session in one response.
            "SESSION_STATE_MAX_RESPONSE_BYTES": str(128 * 1024 * 1024),
        }
        command = [
            sys.executable,
            "-m",
            cli_module(source),
            "serve",
            "--port",
            str(port),
            "--workers",
            str(workers),
        ]
        self.process = subprocess.Popen(command, env=env, cwd=source)
        wait_until_ready(self)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rss_megabytes(self) -> float:
        """Resident memory of the server and its worker processes."""
        pids = [self.process.pid]
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        if children.exists():
            pids += [int(pid) for pid in children.read_text().split()]
        total_kb = 0
        for pid in pids:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
        return total_kb / 1024

    def cpu_seconds(self) -> float:
        """CPU time of the server process so far (user + system)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


# -- workloads -----------------------------------------------------------------


async def concurrent_appends(
    target: Target, app: str, sizes: Sizes, delta: Callable[[str, int], dict[str, Any]]
) -> dict[str, float]:
    sessions = []
    for index in range(sizes.sessions):
        user, session_id = f"u{index % sizes.users}", f"s{index}"
        sessions.append((session_id, await target.create_session(app, user, session_id, {})))
    latencies: list[float] = []

    async def writer(session_id: str, handle: Any) -> None:
        for step in range(sizes.events_per_session):
            event = event_document(author="agent", delta=delta(session_id, step))
            await timed(lambda event=event: target.append(handle, event), latencies)

    started = time.perf_counter()
    await asyncio.gather(*(writer(session_id, handle) for session_id, handle in sessions))
    elapsed = time.perf_counter() - started
    return {"events_per_s": len(latencies) / elapsed, **latency_summary(latencies)}


async def sequential_appends(target: Target, app: str, sizes: Sizes) -> dict[str, float]:
    handle = await target.create_session(app, "u", "s", {})
    latencies: list[float] = []
    started = time.perf_counter()
    for step in range(sizes.sequential_appends):
        event = event_document(author="agent", delta=spread_delta("s", step))
        await timed(lambda event=event: target.append(handle, event), latencies)
    elapsed = time.perf_counter() - started
    return {"events_per_s": len(latencies) / elapsed, **latency_summary(latencies)}


async def reads(
    target: Target, app: str, session_id: str, count: int | None, samples: int
) -> dict[str, float]:
    for _ in range(min(20, samples)):  # warm caches and prepared statements
        await target.get_recent(app, "reader", session_id, count)
    latencies: list[float] = []
    for _ in range(samples):
        await timed(lambda: target.get_recent(app, "reader", session_id, count), latencies)
    return latency_summary(latencies)


async def creation_race(target: Target, app: str, sizes: Sizes) -> dict[str, float]:
    count = sizes.racing_creations

    async def create(index: int) -> None:
        state = {f"user:created_{index}": index, f"app:created_{index}": index}
        await target.create_session(app, "racer", f"race-{index}", state)

    await asyncio.gather(*(create(index) for index in range(count)))
    user_state = await target.user_state(app, "racer")
    app_state = await target.app_state(app, ("racer", "race-0"))
    lost_user = sum(f"created_{index}" not in user_state for index in range(count))
    lost_app = sum(f"created_{index}" not in app_state for index in range(count))
    return {"keys_written": 2 * count, "keys_lost": lost_user + lost_app}


# -- the run -------------------------------------------------------------------


class Run:
    def __init__(self, sizes: Sizes, workers: int) -> None:
        self.sizes = sizes
        self.workers = workers
        self.results: dict[str, dict[str, list[dict[str, float]]]] = {}
        self.databases: dict[str, str] = {}

    def record(self, workload: str, target: str, figures: dict[str, float]) -> None:
        self.results.setdefault(workload, {}).setdefault(target, []).append(figures)
        shown = ", ".join(f"{key}={value:,.2f}" for key, value in figures.items())
        print(f"  {workload:<28} {target:<14} {shown}", flush=True)

    async def execute(self) -> dict[str, Any]:
        databases = self.databases = {
            "adk": await create_database("bench_adk"),
            "ours": await create_database("bench_session_state"),
            "floor": await create_database("bench_floor"),
        }
        migrate(databases["ours"])
        migrate(databases["floor"])
        server = Server(databases["ours"], port=18765, workers=self.workers)
        targets: list[Target] = [
            AdkTarget(sqlalchemy_url(databases["adk"])),
            HttpTarget(server.base_url),
            await FloorTarget.connect(dsn(databases["floor"])),
        ]
        try:
            await self._writes(targets)
            await self._reads(targets, databases, server)
            await self._lists(targets, databases)
            for target in targets:
                self.record(
                    "create_race", target.name, await creation_race(target, "race", self.sizes)
                )
        finally:
            for target in targets:
                await target.close()
            server.stop()
            for name in databases.values():
                await drop_database(name)
        return self.results

    async def _vacuum(self) -> None:
        for name in self.databases.values():
            await vacuum(name)

    async def _writes(self, targets: list[Target]) -> None:
        # Every target's first connections and statements, untimed: with one
        # repetition (the quick run) the first target would run cold alone.
        for target in targets:
            await concurrent_appends(target, "warm-up", QUICK, spread_delta)
        for repetition in range(self.sizes.repetitions):
            print(f"repetition {repetition + 1}/{self.sizes.repetitions}", flush=True)
            # Rotate the order so no target always runs first (warm or cold).
            order = targets[repetition % 3 :] + targets[: repetition % 3]
            for target in order:
                app = f"spread-{repetition}"
                self.record(
                    "concurrent_appends",
                    target.name,
                    await concurrent_appends(target, app, self.sizes, spread_delta),
                )
            for target in order:
                app = f"hot-{repetition}"
                self.record(
                    "concurrent_appends_hot_key",
                    target.name,
                    await concurrent_appends(target, app, self.sizes, hot_delta),
                )
            for target in order:
                app = f"sequential-{repetition}"
                self.record(
                    "sequential_appends",
                    target.name,
                    await sequential_appends(target, app, self.sizes),
                )

    async def _reads(
        self, targets: list[Target], databases: dict[str, str], server: Server
    ) -> None:
        seeders = {
            "adk": (databases["adk"], seed.seed_events_adk),
            "session-state": (databases["ours"], seed.seed_events_session_state),
            "asyncpg floor": (databases["floor"], seed.seed_events_session_state),
        }
        for length in self.sizes.history_lengths:
            for target in targets:
                await target.create_session("reads", "reader", f"h{length}", {"user:name": "Ada"})
                database, seeder = seeders[target.name]
                connection = await asyncpg.connect(dsn(database))
                try:
                    await seeder(connection, "reads", "reader", f"h{length}", length)
                    await connection.execute("ANALYZE events")
                finally:
                    await connection.close()
        await self._vacuum()
        for repetition in range(self.sizes.repetitions):
            for target in targets[repetition % 3 :] + targets[: repetition % 3]:
                for length in self.sizes.history_lengths:
                    self.record(
                        f"get_last_20_of_{length}",
                        target.name,
                        await reads(target, "reads", f"h{length}", 20, self.sizes.read_samples),
                    )
                full = 1_000 if 1_000 in self.sizes.history_lengths else None
                if full is not None:
                    self.record(
                        "get_all_1000",
                        target.name,
                        await reads(
                            target, "reads", "h1000", None, max(5, self.sizes.read_samples // 4)
                        ),
                    )
        largest = max(self.sizes.history_lengths)
        before = server.rss_megabytes()
        http = next(target for target in targets if target.name == "session-state")
        events = await http.get_recent("reads", "reader", f"h{largest}", None)
        self.record(
            "memory",
            "session-state",
            {
                "events_read": events,
                "rss_before_mb": before,
                "rss_after_mb": server.rss_megabytes(),
            },
        )

    async def _lists(self, targets: list[Target], databases: dict[str, str]) -> None:
        sizes = self.sizes
        for database, seeder in [
            (databases["adk"], seed.seed_sessions_adk),
            (databases["ours"], seed.seed_sessions_session_state),
            (databases["floor"], seed.seed_sessions_session_state),
        ]:
            connection = await asyncpg.connect(dsn(database))
            try:
                await seeder(connection, "listing", sizes.list_users, sizes.listed_sessions)
            finally:
                await connection.close()
        await self._vacuum()
        per_user = sizes.listed_sessions // sizes.list_users
        for repetition in range(sizes.repetitions):
            for target in targets[repetition % 3 :] + targets[: repetition % 3]:
                latencies: list[float] = []
                for _ in range(sizes.list_samples):
                    listed = await timed(
                        lambda target=target: target.list_user_sessions("listing", "u1"), latencies
                    )
                    assert listed == per_user, (target.name, listed)
                self.record(
                    f"list_user_{per_user}_sessions", target.name, latency_summary(latencies)
                )
            http = next(target for target in targets if isinstance(target, HttpTarget))
            deep_token = await self._deep_token(databases["ours"], sizes.listed_sessions - 200)
            for label, token in (("first", None), ("deep", deep_token)):
                latencies = []
                for _ in range(sizes.list_samples * 3):
                    await timed(
                        lambda token=token, http=http: http.list_page("listing", 100, token),
                        latencies,
                    )
                self.record(
                    f"list_page_100_{label}_of_{sizes.listed_sessions}",
                    http.name,
                    latency_summary(latencies),
                )

    @staticmethod
    async def _deep_token(database: str, offset: int) -> str:
        from session_state.sessions.domain import SessionPosition
        from session_state.sessions.page_tokens import sessions_token
        from session_state.sessions.session_listing import parse_horizon

        connection = await asyncpg.connect(dsn(database))
        try:
            row = await connection.fetchrow(
                "SELECT update_time, user_id, id FROM sessions WHERE app_name = 'listing'"
                " ORDER BY update_time, user_id, id OFFSET $1 LIMIT 1",
                offset,
            )
            # A walk pinned now, as a first page would pin it.
            snapshot = await connection.fetchval("SELECT CAST(pg_current_snapshot() AS text)")
        finally:
            await connection.close()
        # The token of the app-wide list ("listing", all users, no filter).
        cursor = (row["update_time"], row["user_id"], row["id"])
        token = sessions_token(SessionPosition(cursor, parse_horizon(snapshot)), "listing", None)
        assert token is not None
        return token


def summarise(raw: dict[str, dict[str, list[dict[str, float]]]]) -> dict[str, Any]:
    """Medians over repetitions, per workload, target and figure."""
    return {
        workload: {
            target: {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            | {"repetitions": len(runs)}
            for target, runs in by_target.items()
        }
        for workload, by_target in raw.items()
    }


def cpu_model() -> str:
    """The processor's name, as the kernel reports it (for the report)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, one repetition")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="server worker processes (1 measured best here: 2 cores shared with the load)",
    )
    parser.add_argument("--name", help="results file name (default: quick or full)")
    arguments = parser.parse_args(argv)
    sizes = QUICK if arguments.quick else FULL
    started = time.time()
    load_before = os.getloadavg()[0]
    raw = asyncio.run(Run(sizes, arguments.workers).execute())
    # What ADK users run: every target through ADK's API (bench/adk_api.py).
    from bench import adk_api

    shapes = adk_api.QUICK if arguments.quick else adk_api.FULL
    stock = adk_api.QUICK_STOCK if arguments.quick else adk_api.STOCK
    through_adk = asyncio.run(adk_api.run(shapes, *adk_api.timing(arguments.quick), stock=stock))
    results = {
        "meta": {
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "quick": arguments.quick,
            "sizes": sizes.__dict__,
            "server_workers": arguments.workers,
            "cpus": os.cpu_count(),
            "cpu_model": cpu_model(),
            # 1-minute load average at the start and the end: above the CPUs,
            # other work on the machine was waiting for them.
            "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
            "python": platform.python_version(),
            "duration_s": round(time.time() - started, 1),
        },
        "summary": summarise(raw),
        "runs": raw,
        "adk_api": through_adk,
    }
    name = arguments.name or ("quick" if arguments.quick else "full")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2))
    meta = results["meta"]
    table = (
        f"{meta['cpus']} CPUs ({meta['cpu_model']}), load average"
        f" {meta['load_average'][0]} -> {meta['load_average'][1]}\n\n"
        + report.markdown_table(results)
        + "\nThrough ADK's API (ADK `Event` objects on every side):\n\n"
        + adk_api.table(through_adk)
        + "\n"
        + adk_api.checks_table(adk_api.target_checks(through_adk))
    )
    (RESULTS / f"{name}.md").write_text(table)
    report.chart(results, RESULTS / f"{name}.png")
    print(table)
    # CI runs the quick form: an event or key of ours lost or misordered
    # fails it (the peers' losses are figures, not failures).
    ours = {
        label: {side: found for side, found in by_side.items() if side.startswith("session-state")}
        for label, by_side in through_adk["runs"].items()
    }
    return 0 if nothing_lost(ours) else 1


if __name__ == "__main__":
    sys.exit(main())
