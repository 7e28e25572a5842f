"""The embedded store: every feature's SQLite storage on one engine. Each
feature's class holds its own methods (app.sessions.sqlite_sessions,
app.streams.sqlite_changes, app.memory.sqlite_memory,
app.lifecycle.sqlite_lifecycle) on the connections they share
(app.db.sqlite_connections); what a deleted session takes from the other
features runs through the hook each of them overrides
(app.sessions.sqlite_session_hooks)."""

from sqlalchemy import text

from ..core.encryption import ValueCipher
from ..core.errors import DatabaseUnavailable
from ..db.migrations import SchemaNotCurrent, require_current_schema
from ..langgraph.checkpoints.sqlite import SqliteCheckpoints
from ..langgraph.checkpoints.store import CheckpointStore
from ..langgraph.store.sqlite import SqliteStoreItems
from ..langgraph.store.storage import ItemStorage
from ..lifecycle.sqlite_lifecycle import SqliteLifecycle
from ..memory.sqlite_memory import SqliteMemory
from ..sessions.sqlite_sessions import SqliteSessions
from ..streams.sqlite_changes import SqliteChangeLog


class SqliteStore(SqliteSessions, SqliteChangeLog, SqliteMemory, SqliteLifecycle):
    """Opened on an engine of the database's URL (`open_store`)."""

    def checkpoint_store(self, cipher: ValueCipher | None = None) -> CheckpointStore:
        return SqliteCheckpoints(self.engine, cipher)

    def item_storage(self, cipher: ValueCipher | None = None) -> ItemStorage:
        return SqliteStoreItems(self.engine, cipher)

    async def check_ready(self) -> None:
        try:
            async with self.engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
            await require_current_schema(self.engine)
        except SchemaNotCurrent as error:
            raise DatabaseUnavailable(str(error)) from error
        except Exception as error:
            raise DatabaseUnavailable("the database is unreachable") from error

    async def close(self) -> None:
        await self._writer.close()
        await self.engine.dispose()
