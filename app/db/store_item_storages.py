"""The store-item storage on the database the deployment's store is on (its
pool or engine shared: one set of connections per process)."""

from ..langgraph_store.storage import ItemStorage
from .postgresql_store import PostgresStore
from .postgresql_store_items import PostgresStoreItems
from .sqlite_store import SqliteStore
from .sqlite_store_items import SqliteStoreItems
from .store import Store


def item_storage_for(store: Store) -> ItemStorage:
    if isinstance(store, PostgresStore):
        return PostgresStoreItems(store.pool, store.timeout)
    if isinstance(store, SqliteStore):
        return SqliteStoreItems(store.engine)
    raise TypeError(f"no store-item storage for {type(store).__name__}")
