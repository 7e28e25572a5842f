"""The service works behind PgBouncer in transaction pooling mode
(SESSION_STATE_DB_POOLER=transaction).

Debian's PgBouncer (pool_mode=transaction, few server connections) in front
of the test PostgreSQL, a database created and migrated through it by
`session-state migrate --create-database`, and `session-state serve` pointed
at it: the API contract tests that need nothing but a client (sessions,
events, batches, removals, state, forks, memory) pass through it, as do
concurrent appends committed in batches (group commit), the sweeper's passes
and /readyz. Without the setting the server refuses to start, in one line
naming it.

Runs in CI; skipped (with the reason) only outside CI when pgbouncer is
missing.
"""

import asyncio
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx
import pytest

from tests import (
    test_api_contract,
    test_api_events,
    test_api_sessions,
    test_api_state,
    test_event_batches,
    test_event_removal,
    test_fork,
    test_memory,
)
from tests.conftest import (
    POSTGRES_ADMIN_URL,
    ServerProcess,
    _truncate,
    drop_postgres_database,
    free_port,
    run_blocking,
    unavailable,
)

# Server connections PgBouncer opens to the database: fewer than the
# server's pool and than the concurrent requests, so transactions of many
# clients share each one.
pytestmark = pytest.mark.pgbouncer

SERVER_CONNECTIONS = 3
WRITERS = 24
APPENDS_PER_WRITER = 8
POOLER_SETTINGS = {"SESSION_STATE_DB_POOLER": "transaction"}

ContractTest = Callable[[httpx.AsyncClient], Awaitable[None]]


def _contract_tests() -> list[ContractTest]:
    """The tests of those modules whose one fixture is `client` (they run
    on both stores in their own modules): each works with any client."""
    modules = (
        test_api_contract,
        test_api_sessions,
        test_api_events,
        test_api_state,
        test_event_batches,
        test_event_removal,
        test_fork,
        test_memory,
    )
    chosen = []
    for module in modules:
        for name, function in vars(module).items():
            if not name.startswith("test_") or not inspect.iscoroutinefunction(function):
                continue
            if getattr(function, "pytestmark", None):
                continue  # parametrized or marked: it needs more than a client
            if list(inspect.signature(function).parameters) == ["client"]:
                chosen.append(function)
    return chosen


CONTRACT_TESTS = _contract_tests()


def _pgbouncer_binary() -> str | None:
    return shutil.which("pgbouncer") or next(
        (path for path in ("/usr/sbin/pgbouncer",) if os.access(path, os.X_OK)), None
    )


class PgBouncer:
    """Debian's pgbouncer in a directory of its own, in transaction mode,
    in front of the test PostgreSQL."""

    def __init__(self, binary: str, directory: Path) -> None:
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> "PgBouncer":
        admin = _address(POSTGRES_ADMIN_URL)
        (self.directory / "users.txt").write_text(f'"{admin.user}" ""\n')
        (self.directory / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={admin.host} port={admin.port}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {self.directory / 'users.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {SERVER_CONNECTIONS}\n"
            "max_client_conn = 500\n"
            "log_connections = 0\n"
            "log_disconnections = 0\n"
        )
        command = [self.binary, str(self.directory / "pgbouncer.ini")]
        if os.geteuid() == 0:
            # PgBouncer refuses to run as root.
            os.chmod(self.directory, 0o777)
            command[1:1] = ["-u", "postgres"]
        log = self.directory / "pgbouncer.log"
        with log.open("ab") as output:
            self.process = subprocess.Popen(command, stdout=output, stderr=output)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"pgbouncer exited with {self.process.returncode}: {log.read_text()}"
                )
            try:
                run_blocking(_connect_and_close(self.url("postgres")))
                return self
            except (OSError, asyncpg.PostgresError):
                time.sleep(0.1)
        raise RuntimeError("pgbouncer did not start in time")

    def url(self, database: str) -> str:
        admin = _address(POSTGRES_ADMIN_URL)
        return f"postgresql://{admin.user}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None


@dataclass(frozen=True)
class _Address:
    user: str
    host: str
    port: int


def _address(url: str) -> _Address:
    parsed = httpx.URL(url.replace("postgresql://", "http://", 1))
    return _Address(parsed.username or "postgres", parsed.host, parsed.port or 5432)


async def _connect_and_close(url: str) -> None:
    connection = await asyncpg.connect(url, statement_cache_size=0, timeout=2)
    await connection.close()


@dataclass(frozen=True)
class Deployment:
    """The database by PgBouncer and directly, and a server on PgBouncer."""

    through_pgbouncer: str
    direct: str
    server: ServerProcess
    log: Path


@pytest.fixture(scope="module")
def pgbouncer() -> Iterator[PgBouncer]:
    binary = _pgbouncer_binary()
    if binary is None:
        unavailable("the PgBouncer test", "pgbouncer is not installed (apt-get install pgbouncer)")
    # Not under pytest's directory, which only root may enter: PgBouncer
    # reads its files as postgres when the tests run as root.
    directory = Path(tempfile.mkdtemp(prefix="session-state-pgbouncer-"))
    try:
        bouncer = PgBouncer(binary, directory).start()
        yield bouncer
        bouncer.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def deployment(pgbouncer: PgBouncer, postgres_available: bool) -> Iterator[Deployment]:
    name = f"session_state_pgbouncer_{uuid.uuid4().hex[:10]}"
    through_pgbouncer = pgbouncer.url(name)
    direct = f"{POSTGRES_ADMIN_URL.rsplit('/', 1)[0]}/{name}"
    try:
        # The database and its schema are made through PgBouncer too.
        migrated = _cli(
            "migrate", "--create-database", database_url=through_pgbouncer, **POOLER_SETTINGS
        )
        assert migrated.returncode == 0, migrated.stderr
        assert "created the database" in migrated.stdout
        log = pgbouncer.directory / f"{name}.log"
        server = ServerProcess(
            through_pgbouncer,
            log=log,
            SESSION_STATE_SWEEP_INTERVAL_SECONDS="0.5",
            SESSION_STATE_DB_POOL_SIZE="10",
            **POOLER_SETTINGS,
        ).start()
        try:
            yield Deployment(through_pgbouncer, direct, server, log)
        finally:
            server.stop()
    finally:
        drop_postgres_database(name)


def _cli(*arguments: str, database_url: str, **settings: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SESSION_STATE_DATABASE_URL": database_url, **settings}
    return subprocess.run(
        [sys.executable, "-m", "session_state.cli", *arguments],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("contract_test", CONTRACT_TESTS, ids=lambda test: test.__name__)
async def test_the_contract_holds_through_pgbouncer(
    deployment: Deployment, contract_test: ContractTest
):
    await _truncate(deployment.direct)
    async with httpx.AsyncClient(base_url=deployment.server.base_url, timeout=30) as client:
        await contract_test(client)


def test_enough_contract_tests_were_found():
    # The selection above must not quietly shrink to nothing.
    assert len(CONTRACT_TESTS) >= 60
    assert {test.__module__ for test in CONTRACT_TESTS} >= {
        "tests.test_api_contract",
        "tests.test_event_batches",
        "tests.test_event_removal",
        "tests.test_memory",
    }


async def _server_connections(direct: str) -> int:
    """Connections to the database other than this one: PgBouncer's."""
    connection = await asyncpg.connect(direct)
    try:
        return int(
            await connection.fetchval(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    finally:
        await connection.close()


def _batched_appends(metrics: str) -> float:
    """Appends sent in batches of two or more, by the server's histogram."""
    buckets = {}
    for line in metrics.splitlines():
        if line.startswith("session_state_append_batch_size_bucket{"):
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            buckets[bound] = float(line.rsplit(" ", 1)[1])
    return buckets["+Inf"] - buckets["1.0"]


async def test_concurrent_appends_are_group_committed_through_pgbouncer(deployment: Deployment):
    base = f"{deployment.server.base_url}/apps/bouncer/users/u/sessions"
    async with httpx.AsyncClient(timeout=30) as client:
        before = _batched_appends((await client.get(f"{deployment.server.base_url}/metrics")).text)
        for writer in range(WRITERS):
            created = await client.post(base, json={"sessionId": f"w{writer}"})
            assert created.status_code == 201, created.text

        async def write(writer: int) -> None:
            for number in range(APPENDS_PER_WRITER):
                event = {
                    "id": f"e{number}",
                    "author": "user",
                    "timestamp": float(number + 1),
                    "actions": {"stateDelta": {"n": number, "user:last": writer}},
                }
                stored = await client.post(f"{base}/w{writer}/events", json=event)
                assert stored.status_code == 201, stored.text
                assert stored.headers["etag"] == f'"{number + 1}"'

        await asyncio.gather(*(write(writer) for writer in range(WRITERS)))
        for writer in range(WRITERS):
            session = (await client.get(f"{base}/w{writer}")).json()
            assert [event["id"] for event in session["events"]] == [
                f"e{number}" for number in range(APPENDS_PER_WRITER)
            ]
            assert session["state"]["n"] == APPENDS_PER_WRITER - 1
        after = _batched_appends((await client.get(f"{deployment.server.base_url}/metrics")).text)
    # The scenario happened: appends went in batches, and PgBouncer held
    # more client transactions than it had server connections.
    assert after > before
    assert 0 < await _server_connections(deployment.direct) <= SERVER_CONNECTIONS


async def test_the_sweeper_deletes_expired_sessions_through_pgbouncer(deployment: Deployment):
    base = f"{deployment.server.base_url}/apps/sweep/users/u/sessions"
    async with httpx.AsyncClient(timeout=30) as client:
        for number in range(3):
            created = await client.post(base, json={"sessionId": f"old{number}", "ttlSeconds": 2})
            assert created.status_code == 201, created.text
            stored = await client.post(
                f"{base}/old{number}/events",
                json={"id": "e", "author": "user", "timestamp": 1.0},
            )
            assert stored.status_code == 201, stored.text
    # The server sweeps every half second; a pass of the CLI runs beside it
    # (the lock is taken per transaction, through PgBouncer, by both).
    swept = await asyncio.to_thread(
        _cli, "sweep", database_url=deployment.through_pgbouncer, **POOLER_SETTINGS
    )
    assert swept.returncode == 0, swept.stderr
    connection = await asyncpg.connect(deployment.direct)
    try:
        deadline = time.monotonic() + 10
        while await connection.fetchval("SELECT count(*) FROM sessions WHERE app_name = 'sweep'"):
            assert time.monotonic() < deadline, "the expired sessions were not swept"
            await asyncio.sleep(0.1)
        assert not await connection.fetchval("SELECT count(*) FROM events WHERE app_name = 'sweep'")
    finally:
        await connection.close()


async def test_readyz_is_ready_through_pgbouncer(deployment: Deployment):
    async with httpx.AsyncClient(timeout=30) as client:
        ready = await client.get(f"{deployment.server.base_url}/readyz")
    assert ready.status_code == 200, ready.text


def test_without_the_setting_the_server_refuses_to_start_in_one_line(deployment: Deployment):
    refused = _cli("serve", "--port", str(free_port()), database_url=deployment.through_pgbouncer)
    assert refused.returncode != 0
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert "connection pooler" in lines[0] and "SESSION_STATE_DB_POOLER=transaction" in lines[0]


async def test_streams_hear_other_processes_at_once_with_a_direct_listening_url(
    deployment: Deployment,
):
    """LISTEN does not work through PgBouncer's transaction mode: a server
    without SESSION_STATE_LISTEN_DATABASE_URL says so once at start-up (and
    still NOTIFYs); one with it hears the other's appends at once, long
    before its 15 s heartbeat."""
    warnings = [line for line in deployment.log.read_text().splitlines() if "LISTEN" in line]
    assert len(warnings) == 1 and "SESSION_STATE_LISTEN_DATABASE_URL" in warnings[0]
    listening = ServerProcess(
        deployment.through_pgbouncer,
        SESSION_STATE_LISTEN_DATABASE_URL=deployment.direct,
        SESSION_STATE_STREAM_HEARTBEAT_SECONDS="15",
        SESSION_STATE_SWEEP_INTERVAL_SECONDS="0",
        **POOLER_SETTINGS,
    ).start()
    try:
        path = "/apps/bouncer-live/users/u/sessions/s"
        async with (
            httpx.AsyncClient(base_url=deployment.server.base_url, timeout=30) as writer,
            httpx.AsyncClient(base_url=listening.base_url, timeout=30) as reader,
        ):
            assert (
                await writer.post(path.rsplit("/", 1)[0], json={"sessionId": "s"})
            ).status_code == 201
            async with reader.stream("GET", f"{path}/events/stream") as response:
                assert response.status_code == 200
                lines = response.aiter_lines()
                appended = await writer.post(f"{path}/events", json={"author": "user"})
                assert appended.status_code == 201
                started = time.monotonic()
                while await asyncio.wait_for(anext(lines), 15) != "id: 1":
                    pass
                assert time.monotonic() - started < 5
    finally:
        listening.stop()
