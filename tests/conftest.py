"""Fixtures: a real database per backend (SQLite file, PostgreSQL), the app
over real HTTP semantics (httpx + ASGI), and started server processes."""

import asyncio
import base64
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
import uuid
import warnings
from collections import Counter
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import asyncpg
import httpx
import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from session_state.core.config import Settings
from session_state.db import migrations
from session_state.main import create_app

T = TypeVar("T")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--encrypted",
        action="store_true",
        help="run with encryption at rest on: SESSION_STATE_ENCRYPTION_KEYS set to a fresh key "
        "(and memory search kept whole) for every Settings, store and server the tests start",
    )


# Apps started in this process wait this long for a database connection
# unless a test sets its own: a loaded two-core CI machine (an image build or
# a failover cluster beside) has taken longer than the 5 s default to hand
# out a first connection. Servers started as processes keep the default
# (ServerProcess), which the tests of failover and faults count on.
IN_PROCESS_DB_TIMEOUT_VARIABLE = "SESSION_STATE_DB_TIMEOUT_SECONDS"
IN_PROCESS_DB_TIMEOUT_SECONDS = "30"


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(IN_PROCESS_DB_TIMEOUT_VARIABLE, IN_PROCESS_DB_TIMEOUT_SECONDS)
    # The environment, not a fixture: servers started in processes of their
    # own, and Settings built anywhere, read it alike. Also settable by hand.
    if config.getoption("--encrypted", default=False):
        key = base64.b64encode(os.urandom(32)).decode()
        os.environ["SESSION_STATE_ENCRYPTION_KEYS"] = json.dumps({"test-key": key})
        os.environ.setdefault("SESSION_STATE_MEMORY_SEARCH_WHEN_ENCRYPTED", "full")


def run_blocking(coroutine: Coroutine[Any, Any, T]) -> T:
    """Runs a coroutine to completion from sync code, even when a fixture is
    set up while an event loop is already running (in a thread of its own)."""
    with ThreadPoolExecutor(max_workers=1) as executor:
        return executor.submit(asyncio.run, coroutine).result()


POSTGRES_ADMIN_URL = os.environ.get(
    "SESSION_STATE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
TABLES = (
    "events",
    "event_removals",
    "session_tombstones",
    "session_change_floor",
    "sessions",
    "user_states",
    "app_states",
    "memories",
    "forgotten_memories",
    # LangGraph's (app.langgraph.checkpoints.tables).
    "lg_writes",
    "lg_channel_values",
    "lg_checkpoints",
    "lg_threads",
    # LangGraph's store (app.langgraph.store.tables).
    "lg_store_items",
)


def _postgres_reachable() -> bool:
    async def probe() -> None:
        connection = await asyncpg.connect(POSTGRES_ADMIN_URL, timeout=3)
        await connection.close()

    try:
        run_blocking(probe())
    except (OSError, asyncpg.PostgresError, TimeoutError):
        return False
    return True


def _async_url(database: str) -> str:
    base = POSTGRES_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    return f"{base}/{database}"


def _admin(sql: str) -> None:
    async def run() -> None:
        connection = await asyncpg.connect(POSTGRES_ADMIN_URL)
        try:
            await connection.execute(sql)
        finally:
            await connection.close()

    run_blocking(run())


def create_postgres_database(prefix: str) -> str:
    """A new empty database; its name is returned."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    _admin(f'CREATE DATABASE "{name}"')
    return name


def drop_postgres_database(name: str) -> None:
    _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def migrate(url: str) -> None:
    async def run() -> None:
        engine = create_async_engine(url)
        try:
            await migrations.upgrade(engine)
        finally:
            await engine.dispose()

    run_blocking(run())


def unavailable(what: str, reason: str) -> NoReturn:
    """`what` cannot run here: a failure in CI, which must run everything, and
    a skip with a warning elsewhere, so that a missing tool is never silent."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} must run in CI: {reason}")
    warnings.warn(f"{what} is SKIPPED: {reason}", stacklevel=2)
    pytest.skip(f"{what}: {reason}")


@pytest.fixture(scope="session")
def postgres_available() -> bool:
    if _postgres_reachable():
        return True
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is not reachable at {POSTGRES_ADMIN_URL}, and CI must test it")
    warnings.warn(
        f"PostgreSQL is not reachable at {POSTGRES_ADMIN_URL}: PostgreSQL tests are SKIPPED",
        stacklevel=1,
    )
    return False


@pytest.fixture(scope="session")
def postgres_url(postgres_available: bool) -> Iterator[str]:
    """A migrated PostgreSQL database for the whole test run."""
    if not postgres_available:
        pytest.skip("PostgreSQL not reachable (see the warning above)")
    name = create_postgres_database("session_state_test")
    url = _async_url(name)
    migrate(url)
    yield url
    drop_postgres_database(name)


@pytest.fixture
def fresh_postgres_url(postgres_available: bool) -> Iterator[str]:
    """An empty (unmigrated) PostgreSQL database for one test."""
    if not postgres_available:
        pytest.skip("PostgreSQL not reachable (see the warning above)")
    name = create_postgres_database("session_state_fresh")
    yield _async_url(name)
    drop_postgres_database(name)


async def _truncate(url: str) -> None:
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        # DELETE, not TRUNCATE: the tables hold a test's few rows, and TRUNCATE
        # of eleven tables (new files, catalog rows, a WAL flush) cost 0.1-0.25 s
        # per test, where DELETE costs milliseconds. Children first.
        await connection.execute("; ".join(f"DELETE FROM {table}" for table in TABLES))
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def migrated_sqlite_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite database at the latest migration, made once per test
    process: copying it is what a test's fresh database costs, instead of
    running every migration again (a fifth of a second each)."""
    path = tmp_path_factory.mktemp("sqlite-template") / "session_state.db"
    migrate(f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each test that uses this runs once on SQLite and once on PostgreSQL,
    starting from empty tables."""
    if request.param == "sqlite":
        path = tmp_path / "session_state.db"
        shutil.copyfile(request.getfixturevalue("migrated_sqlite_file"), path)
        return f"sqlite+aiosqlite:///{path}"
    url: str = request.getfixturevalue("postgres_url")
    run_blocking(_truncate(url))
    return url


@pytest.fixture
def settings(database_url: str) -> Settings:
    # Its database timeout is the test process's (pytest_configure).
    return Settings(database_url=database_url)


@asynccontextmanager
async def asgi_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of the app on these settings, in this process, with
    the app's start-up and shut-down run around it."""
    app = create_app(settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as http,
    ):
        yield http


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(settings) as http:
        yield http


class Clock:
    """A clock the test moves: what the app measures expiry and assigned
    timestamps by (`create_app(clock=...)`)."""

    def __init__(self, now: float | None = None) -> None:
        self.now = time.time() if now is None else now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def clocked_app(settings: Settings, clock: Clock) -> AsyncIterator[Any]:
    """The app on `clock`, its background sweeper off (tests sweep when
    they choose, with `app.state.sweeper`)."""
    app = create_app(settings.model_copy(update={"sweep_interval_seconds": 0}), clock=clock)
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def clocked_client(clocked_app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=clocked_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        yield http


# Ports for started servers: SESSION_STATE_TEST_PORTS="20000-20999" keeps them
# in a range (a firewall's, say); by default the OS picks free ones.
TEST_PORTS = os.environ.get("SESSION_STATE_TEST_PORTS", "")


def free_port() -> int:
    if TEST_PORTS:
        first, _, last = TEST_PORTS.partition("-")
        candidates = list(range(int(first), int(last or first) + 1))
        random.shuffle(candidates)
    else:
        candidates = [0]
    for candidate in candidates:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            port: int = sock.getsockname()[1]
            return port
    raise RuntimeError(f"no free port in SESSION_STATE_TEST_PORTS={TEST_PORTS}")


class ServerProcess:
    """`session-state serve` in a child process."""

    def __init__(
        self, database_url: str, port: int | None = None, *, log: Path | None = None, **env: str
    ) -> None:
        """`log`: a file that gets the server's output (else it is the tests')."""
        self.database_url = database_url
        self.port = port or free_port()
        self.env = env
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> "ServerProcess":
        # Generous: a loaded 2-core machine has taken 30 s to start one.
        inherited = {k: v for k, v in os.environ.items() if k != IN_PROCESS_DB_TIMEOUT_VARIABLE}
        env = {
            **inherited,
            "SESSION_STATE_DATABASE_URL": self.database_url,
            "SESSION_STATE_LOG_LEVEL": "warning",
            **self.env,
        }
        output = None if self.log is None else self.log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "session_state.cli", "serve", "--port", str(self.port)],
            env=env,
            stdout=output,
            stderr=output,
        )
        if output is not None:
            output.close()  # the child has its own descriptor
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}")
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("server did not start in time")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """`session-state serve` on a SQLite file of its own, for one test module."""
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('server') / 'server.db'}"
    process = ServerProcess(url).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def postgresql_server(postgres_url: str) -> Iterator[ServerProcess]:
    """`session-state serve` on the shared test database, for one test module."""
    process = ServerProcess(postgres_url).start()
    yield process
    process.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest) -> ServerProcess:
    """A started server on each backend in turn."""
    process: ServerProcess = request.getfixturevalue(f"{request.param}_server")
    return process


# The files that take longest, longest first (measured with `--durations=0`
# on the 2-core machine). `--dist loadfile` hands out whole files in
# collection order (`--no-loadscope-reorder` in pyproject.toml keeps this
# order), so these start at once, each beside the others, instead of one of
# them running alone at the end; the rest follow, the files with the most
# tests first (xdist's own order).
LONGEST_FILES_FIRST = (
    "tests/test_containers_on_engine.py",
    "tests/client/test_openai_sdk_suite.py",
    "tests/test_failover.py",
    "tests/client/test_openai_sessions.py",
    "tests/test_docs_examples.py",
    "tests/test_transfer.py",
    "tests/client/test_langgraph_encryption.py",
    "tests/test_encrypted_suites.py",
    "tests/test_concurrency.py",
    "tests/test_pgbouncer.py",
    "tests/client/test_langgraph_concurrency.py",
    "tests/client/test_import_adk.py",
    "tests/test_faults.py",
    "tests/test_multi_host_urls.py",
    "tests/client/test_openai_runner.py",
    "tests/test_sweeper.py",
    "tests/client/test_adk_api_server.py",
    "tests/test_hostile_headers_and_queries.py",
    "tests/test_contract_fuzz.py",
    "tests/test_append_fast_path.py",
    "tests/test_live_streams.py",
    "tests/test_inspector.py",
    "tests/test_cli.py",
)


def _longest_first(items: list[pytest.Item]) -> None:
    rank = {path: index for index, path in enumerate(LONGEST_FILES_FIRST)}
    tests_per_file = Counter(item.nodeid.split("::", 1)[0] for item in items)

    def order(item: pytest.Item) -> tuple[int, int]:
        path = item.nodeid.split("::", 1)[0]
        return rank.get(path, len(rank)), -tests_per_file[path]

    items.sort(key=order)  # stable: each file keeps its own order


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _longest_first(items)
