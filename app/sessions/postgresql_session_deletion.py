"""Deleting a session with its events, in the caller's transaction, and
what other features keep of it (app.sessions.postgresql_session_hooks)."""

import asyncpg

from . import postgresql_statements as sql
from .domain import SessionKey, TombstoneKind
from .postgresql_session_hooks import PostgresSessionHooks
from .postgresql_statements import session_values


class PostgresSessionDeletion(PostgresSessionHooks):
    async def _delete_if_expired(
        self, connection: asyncpg.Connection, key: SessionKey, now: float, with_memories: bool
    ) -> bool:
        """Deletes the session with its events if it is expired (inside the
        caller's transaction, which takes its id); False if it is not."""
        lock = sql.LOCK_EXPIRED_SESSION
        found = await connection.fetchval(lock.text, *lock.arguments(session_values(key, now=now)))
        if found is None:
            return False
        await self._delete_locked_session(connection, key, "expired", now, with_memories)
        return True

    async def _delete_locked_session(
        self,
        connection: asyncpg.Connection,
        key: SessionKey,
        kind: TombstoneKind,
        now: float,
        with_memories: bool,
    ) -> None:
        """The session the caller's transaction has locked, with its events
        and what other features keep of it."""
        session = session_values(key)
        for statement in (sql.DELETE_SESSION_EVENTS, sql.DELETE_SESSION):
            await connection.execute(statement.text, *statement.arguments(session))
        await self._session_deleted(connection, key, kind, now, with_memories=with_memories)
