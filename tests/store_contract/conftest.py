"""The store contract suite's fixtures: each test runs against `SqliteStore`
and `PostgresStore` in turn (the `database_url` parameter), on empty tables,
with no HTTP in between. A test listed in docs/design.md's "Backend
differences" for one backend must fail there, showing the row's telltale;
listed and passing, it fails: the row goes when the difference does."""

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from session_state.backends.sqlite import SqliteStore
from session_state.core.config import Settings
from session_state.db.engine import create_engine
from session_state.sessions.postgresql_store import PostgresStore
from session_state.stores import Store

from ..conftest import TABLES, migrate
from .differences import differences_by_test

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def migrated_sqlite_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite database, copied for each test (migrating takes a
    second; a copy, a millisecond)."""
    path = tmp_path_factory.mktemp("contract") / "migrated.db"
    migrate(f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each test runs once on SQLite and once on PostgreSQL, on empty tables."""
    if request.param == "sqlite":
        path = tmp_path / "contract.db"
        shutil.copy(request.getfixturevalue("migrated_sqlite_file"), path)
        return f"sqlite+aiosqlite:///{path}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def backend(database_url: str) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "postgresql"


async def _open(database_url: str) -> Store:
    """The store a deployment on this URL runs on, with the default settings
    (group commit on PostgreSQL); `open_store`'s schema checks are
    `test_open_store_picks_the_store_of_the_url`'s."""
    settings = Settings(database_url=database_url)
    if settings.is_sqlite:
        return SqliteStore(create_engine(settings))
    return await PostgresStore.connect(settings)


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Store]:
    opened = await _open(database_url)
    if isinstance(opened, PostgresStore):
        # The run's database, emptied on a connection the test then uses
        # (DELETE: a tenth of TRUNCATE's time on tables this small).
        async with opened.pool.acquire() as connection:
            await connection.execute(";".join(f"DELETE FROM {table}" for table in TABLES))
    yield opened
    await opened.close()


@pytest.fixture
async def second_store(database_url: str, store: Store) -> AsyncIterator[Store]:
    """Another store on the same database: a second server process."""
    opened = await _open(database_url)
    yield opened
    await opened.close()


def _backend_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return None if callspec is None else callspec.params.get("database_url")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.when != "call":
        return
    listed = differences_by_test().get(
        (getattr(item, "originalname", item.name), _backend_of(item))
    )
    if listed is None:
        return
    if report.passed:
        report.outcome = "failed"
        report.longrepr = (
            f"{listed.test} is listed in docs/design.md (Backend differences) as departing "
            f"from the contract on {listed.backend}, but it holds there now: remove the row"
        )
    elif listed.telltale and listed.telltale in str(report.longrepr):
        report.outcome = "skipped"
        report.wasxfail = f"a listed backend difference: {listed.behaviour}"
    else:
        report.sections.append(
            (
                "backend difference",
                f"listed for {listed.backend}, but the failure does not show "
                f"{listed.telltale!r}: it fails for another reason",
            )
        )
