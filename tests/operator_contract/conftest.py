"""The operator store contract suite's fixtures: each test runs against
`SqlOperatorStore` on SQLite and on PostgreSQL in turn, on an engine of
the deployment's settings, on empty tables, with no HTTP or command line
in between. `store` (the API's) writes what an operator then finds."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from session_state.admin.sql_store import SqlOperatorStore
from session_state.admin.store import OperatorStore
from session_state.core.config import Settings
from session_state.db.engine import create_engine
from session_state.encryption.sealed_transfer import sealed_operator_store
from session_state.encryption.sealing import Sealer
from session_state.stores import Store

from ..contract_backends import backend, database_url, store

# The backends' fixtures, shared by every contract suite (tests/contract_backends.py).
__all__ = ["backend", "database_url", "store"]


@asynccontextmanager
async def _opened(database_url: str) -> AsyncIterator[OperatorStore]:
    """As the commands open it: with encryption on (pytest --encrypted),
    opening what it reads and sealing what it writes."""
    settings = Settings(database_url=database_url)
    engine = create_engine(settings)
    sealer = Sealer(settings.value_cipher(), settings.memory_search_when_encrypted)
    try:
        yield sealed_operator_store(SqlOperatorStore(engine, settings.value_cipher()), sealer)
    finally:
        await engine.dispose()


@pytest.fixture
async def operator(database_url: str, store: Store) -> AsyncIterator[OperatorStore]:
    """On the tables `store` emptied."""
    async with _opened(database_url) as opened:
        yield opened


@pytest.fixture
async def other_operator(
    database_url: str, operator: OperatorStore
) -> AsyncIterator[OperatorStore]:
    """A second operator's command on the same database."""
    async with _opened(database_url) as opened:
        yield opened
