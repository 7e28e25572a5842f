"""The checkpoint store on the database the deployment's store is on (its
pool or engine is shared: one set of connections per process)."""

from ...sessions.postgresql_store import PostgresStore
from ...sessions.sqlite_store import SqliteStore
from .postgresql import PostgresCheckpoints
from .sqlite import SqliteCheckpoints
from .store import CheckpointStore


def checkpoint_store_for(store: object) -> CheckpointStore:
    """`store`: the deployment's (app.stores.Store), of either backend."""
    if isinstance(store, PostgresStore):
        return PostgresCheckpoints(store.pool, store.timeout)
    if isinstance(store, SqliteStore):
        return SqliteCheckpoints(store.engine)
    raise TypeError(f"no checkpoint store for {type(store).__name__}")
