"""The checkpoint store on the database the deployment's store is on (its
pool or engine is shared: one set of connections per process)."""

from ..checkpoints.store import CheckpointStore
from .postgresql_checkpoints import PostgresCheckpoints
from .postgresql_store import PostgresStore
from .sqlite_checkpoints import SqliteCheckpoints
from .sqlite_store import SqliteStore
from .store import Store


def checkpoint_store_for(store: Store) -> CheckpointStore:
    if isinstance(store, PostgresStore):
        return PostgresCheckpoints(store.pool, store.timeout)
    if isinstance(store, SqliteStore):
        return SqliteCheckpoints(store.engine)
    raise TypeError(f"no checkpoint store for {type(store).__name__}")
