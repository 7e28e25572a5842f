"""The item storage contract suite's fixtures: each test runs against the
`ItemStorage` of SQLite and of PostgreSQL in turn, as a deployment gets it
(its store's `item_storage()`), on empty tables, with no HTTP in between."""

import pytest

from session_state.langgraph.store.storage import ItemStorage
from session_state.stores import Store

from ..contract_backends import backend, database_url, second_store, store

# The backends' fixtures, shared by every contract suite (tests/contract_backends.py).
__all__ = ["backend", "database_url", "second_store", "store"]


@pytest.fixture
def items(store: Store) -> ItemStorage:
    return store.item_storage()


@pytest.fixture
def other_items(second_store: Store) -> ItemStorage:
    """The item storage of a second server process on the same database."""
    return second_store.item_storage()
