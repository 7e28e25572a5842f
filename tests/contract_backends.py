"""The backends every contract suite runs on (tests/store_contract,
tests/checkpoint_contract, tests/item_storage_contract,
tests/operator_contract): each test runs against SQLite and PostgreSQL in
turn (the `database_url` parameter), on empty tables, through the store a
deployment on that URL opens, with no HTTP in between. A suite's conftest
imports these fixtures and builds its protocol's implementation on `store`."""

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from session_state.backends.postgresql import PostgresStore
from session_state.backends.sqlite import SqliteStore
from session_state.core.config import Settings
from session_state.db.engine import create_engine
from session_state.stores import Store, sealed

from .conftest import TABLES

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each test runs once on SQLite and once on PostgreSQL; `store` empties
    the tables (a copy of the migrated SQLite file is empty already)."""
    if request.param == "sqlite":
        path = tmp_path / "contract.db"
        shutil.copy(request.getfixturevalue("migrated_sqlite_file"), path)
        return f"sqlite+aiosqlite:///{path}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def backend(database_url: str) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "postgresql"


async def open_store(database_url: str) -> Store:
    """The store a deployment on this URL runs on, with the default settings
    (group commit on PostgreSQL); `open_store`'s schema checks are
    `test_open_store_picks_the_store_of_the_url`'s."""
    settings = Settings(database_url=database_url)
    opened: Store
    if settings.is_sqlite:
        opened = SqliteStore(create_engine(settings))
    else:
        opened = await PostgresStore.connect(settings)
    # With encryption on (pytest --encrypted), behind the sealing layer as served.
    return opened if settings.value_cipher() is None else sealed(opened, settings)


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Store]:
    opened = await open_store(database_url)
    if isinstance(getattr(opened, "_inner", opened), PostgresStore):
        # The run's database, emptied on a connection the test then uses
        # (DELETE: a tenth of TRUNCATE's time on tables this small).
        async with opened.pool.acquire() as connection:  # type: ignore[attr-defined]
            await connection.execute(";".join(f"DELETE FROM {table}" for table in TABLES))
    yield opened
    await opened.close()


@pytest.fixture
async def second_store(database_url: str, store: Store) -> AsyncIterator[Store]:
    """Another store on the same database: a second server process."""
    opened = await open_store(database_url)
    yield opened
    await opened.close()
