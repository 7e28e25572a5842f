"""The checkpoint contract suite's fixtures: each test runs against the
`CheckpointStore` of SQLite and of PostgreSQL in turn, as a deployment gets
it (its store's `checkpoint_store()`), on empty tables, with no HTTP in
between, and with encryption at rest off and on (`cipher`)."""

import pytest

from session_state.core.encryption import ValueCipher
from session_state.langgraph.checkpoints.store import CheckpointStore
from session_state.stores import Store

from ..contract_backends import backend, database_url, second_store, store
from ..encryption_keys import cipher_of, key_set

# The backends' fixtures, shared by every contract suite (tests/contract_backends.py).
__all__ = ["backend", "database_url", "second_store", "store"]


@pytest.fixture(params=["plaintext", "encrypted"])
def cipher(request: pytest.FixtureRequest) -> ValueCipher | None:
    """Values as sent, or sealed (app.langgraph.sealing)."""
    return cipher_of(key_set("k1")) if request.param == "encrypted" else None


@pytest.fixture
def checkpoints(store: Store, cipher: ValueCipher | None) -> CheckpointStore:
    return store.checkpoint_store(cipher)


@pytest.fixture
def other_checkpoints(second_store: Store, cipher: ValueCipher | None) -> CheckpointStore:
    """The checkpoint store of a second server process on the same database."""
    return second_store.checkpoint_store(cipher)
