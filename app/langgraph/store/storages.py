"""The store-item storage on the database the deployment's store is on (its
pool or engine shared: one set of connections per process)."""

from ...backends.postgresql import PostgresStore
from ...backends.sqlite import SqliteStore
from ...stores import Store
from .postgresql import PostgresStoreItems
from .sqlite import SqliteStoreItems
from .storage import ItemStorage


def item_storage_for(store: Store) -> ItemStorage:
    if isinstance(store, PostgresStore):
        return PostgresStoreItems(store.pool, store.timeout)
    if isinstance(store, SqliteStore):
        return SqliteStoreItems(store.engine)
    raise TypeError(f"no store-item storage for {type(store).__name__}")
