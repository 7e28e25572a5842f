"""What deleting a session asks of the other features' PostgreSQL storage,
in the shape the SQLite storage uses (app.sessions.sqlite_session_hooks).

A session deleted by the sessions' storage (`delete_session`; a create or a
fork over an expired id) takes with it rows the sessions feature does not
own: the streams' tombstone and, when asked, its memories. The sessions'
storage may not import those features, so it calls `_session_deleted` in
the deleting transaction; `PostgresChangeLog` (the tombstone) and
`PostgresMemory` (the memories) override it and call `super()`, so the
store that inherits them all (app.backends.postgresql) runs every part,
each once."""

import asyncpg

from ..db.postgresql_connections import PostgresConnections
from .domain import SessionKey, TombstoneKind


class PostgresSessionHooks(PostgresConnections):
    async def _session_deleted(
        self,
        connection: asyncpg.Connection,
        key: SessionKey,
        kind: TombstoneKind,
        now: float,
        *,
        with_memories: bool,
    ) -> None:
        """Called in the transaction that deleted the session's own rows
        (`kind`: deleted, or expired); the end of the chain of overrides."""
