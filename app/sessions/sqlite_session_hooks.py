"""What deleting a session asks of the other features' SQLite storage.

A session deleted by the sessions' storage (`delete_session`; a create or a
fork over an expired id) takes with it rows the sessions feature does not
own: the streams' tombstone that tells live streams it went, and, when
asked, its memories (app.lifecycle.tables lists them: "pruned" and "with
session"). The sessions' storage may not import those features, which are
built on it (tests/test_import_graph.py), so it calls a hook instead, in the
deleting transaction: `_session_deleted`. Each feature that keeps such rows
overrides it in its storage class and calls `super()` (`SqliteChangeLog`
writes the tombstone, `SqliteMemory` deletes the memories), so the store
that inherits them all (app.backends.sqlite) runs every part, each once.
The sweeper and erasure delete sessions in bulk and ask each feature
themselves (app.lifecycle.sqlite_lifecycle)."""

from sqlalchemy.ext.asyncio import AsyncConnection

from ..db.sqlite_connections import SqliteConnections
from .domain import SessionKey, TombstoneKind


class SqliteSessionHooks(SqliteConnections):
    async def _session_deleted(
        self,
        connection: AsyncConnection,
        key: SessionKey,
        kind: TombstoneKind,
        now: float,
        *,
        with_memories: bool,
    ) -> None:
        """Called in the transaction that deleted the session's own rows
        (`kind`: deleted, or expired); the end of the chain of overrides."""
