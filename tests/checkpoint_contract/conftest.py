"""The checkpoint contract suite's fixtures: each test runs against the
`CheckpointStore` of SQLite and of PostgreSQL in turn, as a deployment gets
it (its store's `checkpoint_store()`), on empty tables, with no HTTP in
between."""

import pytest

from session_state.langgraph.checkpoints.store import CheckpointStore
from session_state.stores import Store

from ..contract_backends import backend, database_url, second_store, store

# The backends' fixtures, shared by every contract suite (tests/contract_backends.py).
__all__ = ["backend", "database_url", "second_store", "store"]


@pytest.fixture
def checkpoints(store: Store) -> CheckpointStore:
    return store.checkpoint_store()


@pytest.fixture
def other_checkpoints(second_store: Store) -> CheckpointStore:
    """The checkpoint store of a second server process on the same database."""
    return second_store.checkpoint_store()
