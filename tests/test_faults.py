"""Fault injection on a throwaway PostgreSQL cluster of our own.

The cluster (initdb/pg_ctl from the installed PostgreSQL binaries, on a spare
loopback port, in a temporary directory) is killed with `pg_ctl stop -m
immediate` in the middle of a concurrent append load and started again. While
it is away, appends must answer 503 `database_unavailable` with `Retry-After`
quickly; afterwards every append that got a 2xx must be stored with its state,
none that failed may be, and the same server process must serve again (an
append that was in flight during the kill may have been committed with its
answer lost: that is reported as a warning, and its retry must be recognised).

A second test freezes the cluster (SIGSTOP: nothing refused, nothing answered)
and expects 503s within a bound despite that; a third sends SIGTERM to a server
with requests in flight: they finish, and the process exits 0.
"""

import asyncio
import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests.conftest import ServerProcess, free_port, migrate, unavailable

APP = "faults"
USER = "loader"
SESSIONS = 4
WORKERS = 8
MAX_APPENDS_PER_WORKER = 500
DB_TIMEOUT_SECONDS = 2
# A failing request must answer well within this, whatever the timing noise;
# the client's own timeout is above it so that a hang shows as a hang.
FAILURE_BOUND_SECONDS = 10.0
CLIENT_TIMEOUT_SECONDS = 15.0
FAILURE_BACKOFF_SECONDS = 0.05
WARM_UP_SUCCESSES = 60
OUTAGE_FAILURES = 24
OUTAGE_MIN_SECONDS = 1.5
RECOVERY_BOUND_SECONDS = 20.0
SUCCESSES_AFTER_RECOVERY = 40
IN_FLIGHT_AT_SHUTDOWN = 8
GRACEFUL_EXIT_BOUND_SECONDS = 30.0


# --- the throwaway cluster -------------------------------------------------------------------


def _postgres_bin_dir() -> Path | None:
    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in path.parent.parent.name.split(".") if part.isdigit())

    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=version)
    for pg_ctl in reversed(found):
        if (pg_ctl.parent / "initdb").exists():
            return pg_ctl.parent
    return None


def _missing_tools() -> str | None:
    if _postgres_bin_dir() is None:
        return "no PostgreSQL binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin"
    if os.geteuid() == 0:
        # initdb refuses to run as root: run it as the postgres user.
        if shutil.which("runuser") is None:
            return "running as root and runuser is missing (initdb refuses root)"
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres user to run initdb as"
    return None


class Cluster:
    """A PostgreSQL cluster in a temporary directory, on a loopback port."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="session-state-pg-"))
        self.data = self.directory / "data"
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.directory, user="postgres", group="postgres")

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *arguments: str, timeout: float = 60) -> None:
        command = [str(self.bin_dir / tool), *arguments]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            log = self.directory / "log"
            log_tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(
                f"{tool} {' '.join(arguments)} failed ({result.returncode}):\n"
                f"{result.stdout}\n{result.stderr}\n{log_tail}"
            )

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1"
        log = str(self.directory / "log")
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "-t", "30", "start"
        )

    def kill(self) -> None:
        """The database vanishes: no checkpoint, no goodbye to clients."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", "30", "stop")

    @property
    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def ensure_running(self) -> None:
        self.thaw()
        if not self.running:
            self.start()

    def _postmaster(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    @staticmethod
    def _children(parent: int) -> list[int]:
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                # pid (comm) state ppid ...; comm may hold spaces, so split after it
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    children.append(int(stat.parent.name))
        return children

    def _signal_all(self, sig: signal.Signals) -> None:
        postmaster = self._postmaster()
        if postmaster is None:
            return
        # The postmaster first, so that it forks no new backend meanwhile.
        for pid in [postmaster, *self._children(postmaster)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def freeze(self) -> None:
        """The database stops answering without closing anything, like a host
        that hangs or a network that drops packets."""
        self._signal_all(signal.SIGSTOP)

    def thaw(self) -> None:
        self._signal_all(signal.SIGCONT)

    def destroy(self) -> None:
        try:
            self.thaw()
            if self.running:
                self.kill()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    missing = _missing_tools()
    if missing is not None:
        unavailable("the fault-injection tests (a PostgreSQL of their own)", missing)
    bin_dir = _postgres_bin_dir()
    assert bin_dir is not None
    instance = Cluster(bin_dir)
    try:
        instance.init()
        instance.start()
        migrate(instance.url)
        yield instance
    finally:
        instance.destroy()


@pytest.fixture
def server(cluster: Cluster) -> Iterator[ServerProcess]:
    cluster.ensure_running()
    process = ServerProcess(cluster.url, SESSION_STATE_DB_TIMEOUT_SECONDS=str(DB_TIMEOUT_SECONDS))
    try:
        yield process.start()
    finally:
        process.stop()


# --- the load ----------------------------------------------------------------------------------


@dataclass
class Attempt:
    event_id: str
    session_id: str
    body: dict[str, Any]
    sent_at: float
    done_at: float = 0.0
    status: int | None = None
    code: str | None = None
    retry_after: str | None = None
    error: str | None = None

    @property
    def latency(self) -> float:
        return self.done_at - self.sent_at

    @property
    def succeeded(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass
class Load:
    attempts: list[Attempt] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def successes_after(self, moment: float) -> int:
        return sum(1 for a in self.attempts if a.succeeded and a.sent_at > moment)

    def failures_after(self, moment: float) -> int:
        return sum(1 for a in self.attempts if a.done_at and not a.succeeded and a.sent_at > moment)


def _event(worker: int, number: int) -> tuple[str, str, dict[str, Any]]:
    event_id = f"w{worker}-{number:04d}"
    session_id = f"s{(worker + number) % SESSIONS}"
    body = {
        "id": event_id,
        "author": "loader",
        "invocationId": f"inv-{worker}",
        "timestamp": time.time(),
        "content": {"role": "model", "parts": [{"text": f"event {event_id}"}]},
        "actions": {
            "stateDelta": {
                f"user:{event_id}": number,
                f"session_{event_id}": worker,
                f"app:{event_id}": True,
                "temp:scratch": "never stored",
            }
        },
    }
    return event_id, session_id, body


def _record(attempt: Attempt, response: httpx.Response) -> None:
    attempt.status = response.status_code
    attempt.retry_after = response.headers.get("Retry-After")
    if response.status_code >= 400:
        try:
            attempt.code = response.json().get("code")
        except ValueError:
            attempt.code = f"<not JSON: {response.text[:100]!r}>"


async def _worker(http: httpx.AsyncClient, base: str, worker: int, load: Load) -> None:
    for number in range(MAX_APPENDS_PER_WORKER):
        if load.stop.is_set():
            return
        event_id, session_id, body = _event(worker, number)
        attempt = Attempt(event_id, session_id, body, sent_at=time.monotonic())
        load.attempts.append(attempt)
        try:
            response = await http.post(
                f"{base}/apps/{APP}/users/{USER}/sessions/{session_id}/events", json=body
            )
            _record(attempt, response)
        except httpx.TransportError as error:
            attempt.error = f"{type(error).__name__}: {error}"
        attempt.done_at = time.monotonic()
        if not attempt.succeeded:
            await asyncio.sleep(FAILURE_BACKOFF_SECONDS)


async def _wait_for(condition: Any, bound: float, what: str) -> float:
    """Polls condition() until true; returns when it became true."""
    deadline = time.monotonic() + bound
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {bound} s")
        await asyncio.sleep(0.02)
    return time.monotonic()


async def _stored_events(http: httpx.AsyncClient, base: str, session_id: str) -> list[str]:
    ids: list[str] = []
    token = None
    while True:
        params = {"pageSize": "1000", **({"pageToken": token} if token else {})}
        response = await http.get(
            f"{base}/apps/{APP}/users/{USER}/sessions/{session_id}/events", params=params
        )
        assert response.status_code == 200, response.text
        page = response.json()
        ids.extend(event["id"] for event in page["events"])
        token = page["nextPageToken"]
        if not token:
            return ids


async def _stored_ids(http: httpx.AsyncClient, base: str) -> set[str]:
    """The ids of the stored events of every session, each stored once."""
    stored: set[str] = set()
    for index in range(SESSIONS):
        ids = await _stored_events(http, base, f"s{index}")
        assert len(ids) == len(set(ids)), f"s{index}: an event is stored twice"
        stored |= set(ids)
    return stored


async def _check_state(
    http: httpx.AsyncClient, base: str, attempts: list[Attempt], stored: set[str]
) -> None:
    """Nothing half-written: each session's revision counts its stored events,
    and every scope of state holds the keys of exactly the stored events."""
    by_id = {a.event_id: a for a in attempts}
    for index in range(SESSIONS):
        session_id = f"s{index}"
        here = {i for i in stored if by_id[i].session_id == session_id}
        response = await http.get(f"{base}/apps/{APP}/users/{USER}/sessions/{session_id}")
        assert response.status_code == 200, response.text
        assert {event["id"] for event in response.json()["events"]} == here
        assert response.headers["ETag"] == f'"{len(here)}"', (session_id, len(here))
        state = response.json()["state"]
        assert {k for k in state if k.startswith("session_")} == {f"session_{i}" for i in here}
        assert not [k for k in state if k.startswith("temp:")]
    user_state = (await http.get(f"{base}/apps/{APP}/users/{USER}/state")).json()["state"]
    assert set(user_state) == stored
    assert all(user_state[i] == by_id[i].body["actions"]["stateDelta"][f"user:{i}"] for i in stored)
    app_state = (await http.get(f"{base}/apps/{APP}/state")).json()["state"]
    assert set(app_state) == stored


# --- the tests ---------------------------------------------------------------------------------


async def test_database_killed_under_append_load_then_restarted(
    cluster: Cluster, server: ServerProcess
) -> None:
    base = server.base_url
    limits = httpx.Limits(max_connections=WORKERS + 4)
    async with (
        asyncio.timeout(50),
        httpx.AsyncClient(timeout=CLIENT_TIMEOUT_SECONDS, limits=limits) as http,
        httpx.AsyncClient(timeout=CLIENT_TIMEOUT_SECONDS) as probe,
    ):
        for index in range(SESSIONS):
            response = await http.post(
                f"{base}/apps/{APP}/users/{USER}/sessions", json={"sessionId": f"s{index}"}
            )
            assert response.status_code == 201, response.text

        load = Load()
        workers = [asyncio.create_task(_worker(http, base, w, load)) for w in range(WORKERS)]
        try:

            async def warmed_up() -> bool:
                return load.successes_after(0) >= WARM_UP_SUCCESSES

            await _wait_for(warmed_up, 10, "appends before the kill")

            kill_started = time.monotonic()
            await asyncio.to_thread(cluster.kill)
            killed = time.monotonic()

            async def outage_observed() -> bool:
                long_enough = time.monotonic() - killed >= OUTAGE_MIN_SECONDS
                return long_enough and load.failures_after(killed) >= OUTAGE_FAILURES

            await _wait_for(outage_observed, 15, "failing appends during the outage")
            readyz_down = await probe.get(f"{base}/readyz")

            restart_started = time.monotonic()
            await asyncio.to_thread(cluster.start)
            restarted = time.monotonic()

            async def ready() -> bool:
                try:
                    return (await probe.get(f"{base}/readyz", timeout=5)).status_code == 200
                except httpx.TransportError:
                    return False

            ready_at = await _wait_for(ready, RECOVERY_BOUND_SECONDS, "/readyz 200 after restart")

            async def serving_again() -> bool:
                return load.successes_after(ready_at) >= SUCCESSES_AFTER_RECOVERY

            await _wait_for(serving_again, 10, "appends stored again after the restart")
        finally:
            load.stop.set()
            await asyncio.gather(*workers, return_exceptions=True)

        attempts = load.attempts
        assert all(a.done_at for a in attempts)
        assert readyz_down.status_code == 503
        assert readyz_down.json()["code"] == "database_unavailable"

        # Every answer is a success or a quick 503 database_unavailable with Retry-After.
        succeeded = [a for a in attempts if a.succeeded]
        failed = [a for a in attempts if not a.succeeded]
        unexpected = [
            (a.event_id, a.status, a.code, a.retry_after, a.error)
            for a in failed
            if a.status != 503 or a.code != "database_unavailable" or not a.retry_after
        ]
        assert not unexpected, f"failures other than 503 database_unavailable: {unexpected[:10]}"
        assert {a.status for a in succeeded} == {201}
        slow = [
            (a.event_id, round(a.latency, 2)) for a in failed if a.latency > FAILURE_BOUND_SECONDS
        ]
        assert not slow, f"503s slower than {FAILURE_BOUND_SECONDS} s: {slow[:10]}"
        assert any(a.sent_at < kill_started for a in succeeded)
        assert any(a.sent_at > ready_at for a in succeeded)
        assert failed

        # Every 2xx is stored, nothing that failed is, and nothing half-written.
        stored = await _stored_ids(http, base)
        by_id = {a.event_id: a for a in attempts}
        assert stored <= set(by_id), f"stored but never sent: {sorted(stored - set(by_id))}"
        missing = {a.event_id for a in succeeded} - stored
        assert not missing, f"answered 201 but not stored: {sorted(missing)}"
        # The one way a failed append can be stored: its commit reached the
        # database just before the kill and only the answer was lost (a 503 on
        # an append means "unknown outcome"). Only appends in flight during the
        # kill may be in that state; each is reported, and deduplicated below.
        in_flight_at_kill = {
            a.event_id for a in failed if a.sent_at < killed and a.done_at > kill_started
        }
        stored_but_failed = {a.event_id for a in failed} & stored
        assert stored_but_failed <= in_flight_at_kill, [
            (i, round(by_id[i].sent_at - kill_started, 3), round(by_id[i].latency, 3))
            for i in sorted(stored_but_failed - in_flight_at_kill)
        ]
        if stored_but_failed:
            details = [
                f"{i} (sent {(by_id[i].sent_at - kill_started) * 1000:+.0f} ms from the kill, "
                f"answered in {by_id[i].latency * 1000:.0f} ms)"
                for i in sorted(stored_but_failed)
            ]
            warnings.warn(
                f"{len(stored_but_failed)} append(s) answered 503 while the database was being "
                f"killed were committed anyway (the answer was lost): {', '.join(details)}",
                stacklevel=1,
            )
        await _check_state(http, base, attempts, stored)

        # A correct client retries a failed append with the same event id: an
        # append that was not stored is stored now (201), one that was is
        # recognised as a retry (200); each is then stored exactly once.
        for attempt in failed:
            response = await http.post(
                f"{base}/apps/{APP}/users/{USER}/sessions/{attempt.session_id}/events",
                json=attempt.body,
            )
            expected = 200 if attempt.event_id in stored_but_failed else 201
            assert response.status_code == expected, (attempt.event_id, response.text)
        everything = set(by_id)
        assert await _stored_ids(http, base) == everything
        await _check_state(http, base, attempts, everything)

        first_success_after_restart = min(
            (a.done_at for a in succeeded if a.sent_at > restart_started), default=float("nan")
        )
        latencies = sorted(a.latency for a in failed)
        print(
            f"\nfault summary: attempts={len(attempts)} succeeded={len(succeeded)} "
            f"failed={len(failed)} in_flight_at_kill={len(in_flight_at_kill)} "
            f"stored_but_failed={len(stored_but_failed)}\n"
            f"  kill took {killed - kill_started:.3f} s; 503 latency "
            f"median={latencies[len(latencies) // 2] * 1000:.1f} ms "
            f"p99={latencies[int(len(latencies) * 0.99)] * 1000:.1f} ms "
            f"max={latencies[-1] * 1000:.1f} ms\n"
            f"  after pg_ctl start began: it returned {restarted - restart_started:.3f} s, "
            f"first 201 {first_success_after_restart - restart_started:.3f} s, "
            f"/readyz 200 {ready_at - restart_started:.3f} s"
        )


async def test_frozen_database_answers_503_within_the_timeout(
    cluster: Cluster, server: ServerProcess
) -> None:
    """A database that stops answering (SIGSTOP) instead of refusing: requests
    must still give up after the configured timeout, not hang."""
    base = server.base_url
    path = f"{base}/apps/{APP}/users/{USER}/sessions"
    async with asyncio.timeout(50), httpx.AsyncClient(timeout=CLIENT_TIMEOUT_SECONDS) as http:
        created = await http.post(path, json={"sessionId": "frozen"})
        assert created.status_code == 201, created.text
        warm = await http.post(f"{path}/frozen/events", json={"author": "loader"})
        assert warm.status_code == 201, warm.text

        async def timed(method: str, url: str, **kwargs: Any) -> tuple[str, Any, float]:
            started = time.monotonic()
            try:
                response = await http.request(method, url, timeout=FAILURE_BOUND_SECONDS, **kwargs)
                outcome: Any = (response.status_code, response.headers.get("Retry-After"))
                if response.status_code >= 400:
                    outcome = (*outcome, response.json().get("code"))
            except httpx.TransportError as error:
                outcome = type(error).__name__
            return f"{method} {url.removeprefix(base)}", outcome, time.monotonic() - started

        cluster.freeze()
        try:
            results = await asyncio.gather(
                timed("POST", f"{path}/frozen/events", json={"author": "loader"}),
                timed("GET", f"{path}/frozen"),
                timed("GET", f"{path}/frozen/events"),
                timed("GET", path),
                timed("GET", f"{base}/readyz"),
            )
        finally:
            cluster.thaw()

        print(
            "\nfrozen database:",
            [(what, outcome, round(took, 2)) for what, outcome, took in results],
        )

        # It recovers by itself once the database answers again ...
        async def ready() -> bool:
            try:
                return (await http.get(f"{base}/readyz")).status_code == 200
            except httpx.TransportError:
                return False

        await _wait_for(ready, RECOVERY_BOUND_SECONDS, "/readyz 200 after the thaw")
        again = await http.post(f"{path}/frozen/events", json={"author": "loader"})
        assert again.status_code == 201, again.text

        # ... and while it did not, every request gave up in time.
        wrong = [
            (what, outcome, round(took, 2))
            for what, outcome, took in results
            if outcome != (503, "1", "database_unavailable")
        ]
        assert not wrong, (
            f"expected 503 database_unavailable with Retry-After within "
            f"{FAILURE_BOUND_SECONDS} s (SESSION_STATE_DB_TIMEOUT_SECONDS={DB_TIMEOUT_SECONDS})"
        )


async def test_sigterm_lets_in_flight_requests_finish(
    cluster: Cluster, server: ServerProcess
) -> None:
    assert server.process is not None
    base = server.base_url
    path = f"{base}/apps/{APP}/users/{USER}/sessions"
    blocker = await asyncpg.connect(cluster.dsn)
    observer = await asyncpg.connect(cluster.dsn)
    try:
        async with asyncio.timeout(50), httpx.AsyncClient(timeout=60) as http:
            # One session per append: a process sends one session's appends
            # one at a time (the others wait in the process, app/sessions/append_batches.py).
            drained = [f"draining-{n}" for n in range(IN_FLIGHT_AT_SHUTDOWN)]
            for session_id in drained:
                created = await http.post(path, json={"sessionId": session_id})
                assert created.status_code == 201, created.text

            # Hold the session rows, so that appends to them stay in flight
            # (inside the server, waiting in PostgreSQL) for as long as we like.
            transaction = blocker.transaction()
            await transaction.start()
            await blocker.execute(
                "SELECT 1 FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = ANY($3) "
                "FOR UPDATE",
                APP,
                USER,
                drained,
            )

            async def append(number: int) -> httpx.Response | BaseException:
                body = {"id": f"drain-{number}", "author": "loader", "timestamp": time.time()}
                try:
                    return await http.post(f"{path}/{drained[number]}/events", json=body)
                except httpx.HTTPError as error:
                    return error

            requests = [asyncio.create_task(append(n)) for n in range(IN_FLIGHT_AT_SHUTDOWN)]

            async def all_waiting_in_the_database() -> bool:
                # From another connection: pg_stat_activity is a snapshot per transaction.
                waiting: int = await observer.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                    "'session-state' AND wait_event_type = 'Lock'"
                )
                return waiting == IN_FLIGHT_AT_SHUTDOWN

            await _wait_for(all_waiting_in_the_database, 10, "appends in flight")

            signalled = time.monotonic()
            server.process.send_signal(signal.SIGTERM)

            # It stops accepting new connections but keeps the in-flight ones.
            async def refusing() -> bool:
                try:
                    async with httpx.AsyncClient(timeout=1) as fresh:
                        await fresh.get(f"{base}/healthz")
                except (httpx.ConnectError, httpx.RemoteProtocolError):
                    # Refused, or (a connection accepted in the instant the
                    # listener closed) closed unanswered: either way not served.
                    return True
                return False

            await _wait_for(refusing, 5, "new connections refused after SIGTERM")
            await asyncio.sleep(0.3)
            assert server.process.poll() is None, "exited with requests in flight"
            assert not any(task.done() for task in requests)

            await transaction.rollback()
            released = time.monotonic()
            responses = await asyncio.gather(*requests)
            statuses = [
                r.status_code if isinstance(r, httpx.Response) else repr(r) for r in responses
            ]
            assert statuses == [201] * IN_FLIGHT_AT_SHUTDOWN

            process = server.process
            returncode = await asyncio.to_thread(process.wait, GRACEFUL_EXIT_BOUND_SECONDS)
            exited = time.monotonic()
            stored = await observer.fetchval(
                "SELECT count(*) FROM events WHERE app_name = $1 AND session_id = ANY($2)",
                APP,
                drained,
            )
            print(
                f"\nshutdown summary: in flight {IN_FLIGHT_AT_SHUTDOWN}, held "
                f"{released - signalled:.2f} s after SIGTERM, exit {returncode} "
                f"{exited - released:.2f} s after release"
            )
            assert stored == IN_FLIGHT_AT_SHUTDOWN
            assert returncode == 0, f"exit status {returncode} after a graceful shutdown"
    finally:
        await blocker.close()
        await observer.close()
