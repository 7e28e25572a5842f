"""The store a deployment runs on, chosen once at start-up by its URL: one
object per backend that implements every feature's store protocol on one
connection pool."""

from typing import Protocol, cast

from .backends.postgresql import PostgresStore
from .backends.sqlite import SqliteStore
from .core.config import Settings
from .core.encryption import ValueCipher
from .db import migrations
from .db.engine import create_engine
from .db.poolers import refuse_an_undeclared_pooler
from .encryption.sealed_store import SealedStore
from .encryption.sealing import Sealer
from .langgraph.checkpoints.store import CheckpointStore
from .langgraph.store.storage import ItemStorage
from .lifecycle.store import LifecycleStore
from .memory.store import MemoryStore
from .sessions.replica import Replica
from .sessions.store import SessionStore
from .streams.store import ChangeLog


class Store(SessionStore, ChangeLog, MemoryStore, LifecycleStore, Protocol):
    """Every feature's storage, on one database."""

    # -- LangGraph's, on the same pool or engine -----------------------------

    # `cipher`: values sealed at rest (app.langgraph.sealing); None: as sent.

    def checkpoint_store(self, cipher: ValueCipher | None = None) -> CheckpointStore: ...

    def item_storage(self, cipher: ValueCipher | None = None) -> ItemStorage: ...

    # -- operations ----------------------------------------------------------

    async def check_ready(self) -> None:
        """DatabaseUnavailable unless the database answers and its schema is
        current."""
        ...

    async def close(self) -> None: ...


async def open_store(settings: Settings) -> Store:
    """The embedded SQLite default migrates itself; PostgreSQL must be migrated
    beforehand (`session-state migrate`), and is refused if it was not."""
    await refuse_an_undeclared_pooler(settings)
    engine = create_engine(settings)
    try:
        if settings.is_sqlite:
            await migrations.upgrade_to_head(engine)
        await migrations.require_current_schema(engine)
    except BaseException:
        await engine.dispose()
        raise
    if settings.is_sqlite:
        return sealed(SqliteStore(engine), settings)
    # SQLAlchemy was needed only to read the schema's revision.
    await engine.dispose()
    return sealed(await PostgresStore.connect(settings), settings)


def sealed(store: Store, settings: Settings) -> Store:
    """The store behind a layer that seals content on the way in and opens it
    on the way out (app.encryption). Also without keys: a sealed value found
    then is an error naming its key, never returned as it is stored."""
    sealer = Sealer(settings.value_cipher(), settings.memory_search_when_encrypted)
    return cast(Store, SealedStore(store, sealer))


async def open_replica(settings: Settings) -> Replica[PostgresStore]:
    """The replicas' store (SESSION_STATE_READ_DATABASE_URL). Its pool makes
    connections as reads need them, so a replica that is down at start-up
    stops nothing."""
    assert settings.read_database_url is not None
    store = await PostgresStore.connect(settings, database_url=settings.read_database_url)
    return Replica(
        cast(PostgresStore, sealed(store, settings)), store, settings.max_replica_lag_seconds
    )
