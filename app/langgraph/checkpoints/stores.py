"""The checkpoint store on the database the deployment's store is on (its
pool or engine is shared: one set of connections per process)."""

from ...backends.postgresql import PostgresStore
from ...backends.sqlite import SqliteStore
from ...stores import Store
from .postgresql import PostgresCheckpoints
from .sqlite import SqliteCheckpoints
from .store import CheckpointStore


def checkpoint_store_for(store: Store) -> CheckpointStore:
    if isinstance(store, PostgresStore):
        return PostgresCheckpoints(store.pool, store.timeout)
    if isinstance(store, SqliteStore):
        return SqliteCheckpoints(store.engine)
    raise TypeError(f"no checkpoint store for {type(store).__name__}")
