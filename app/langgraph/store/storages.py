"""The store-item storage on the database the deployment's store is on (its
pool or engine shared: one set of connections per process)."""

from ...sessions.postgresql_store import PostgresStore
from ...sessions.sqlite_store import SqliteStore
from .postgresql import PostgresStoreItems
from .sqlite import SqliteStoreItems
from .storage import ItemStorage


def item_storage_for(store: object) -> ItemStorage:
    """`store`: the deployment's (app.stores.Store), of either backend."""
    if isinstance(store, PostgresStore):
        return PostgresStoreItems(store.pool, store.timeout)
    if isinstance(store, SqliteStore):
        return SqliteStoreItems(store.engine)
    raise TypeError(f"no store-item storage for {type(store).__name__}")
