"""Deleting a session with its events, in the caller's transaction, and
what other features keep of it (`_delete_with_session`).

The session's memories (when asked) and its tombstone are other features'
rows (app.memory, app.streams), deleted or written in the same transaction.
The sessions package imports no other feature: the composite store
(app.backends.postgresql), which holds every feature's storage, supplies
that step; a session's storage alone cannot be made without it."""

from abc import ABC, abstractmethod

import asyncpg

from ..db.postgresql_connections import PostgresConnections
from . import postgresql_statements as sql
from .domain import SessionKey, TombstoneKind
from .postgresql_statements import session_values


class PostgresSessionDeletion(PostgresConnections, ABC):
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
        await self._delete_with_session(connection, key, kind, now, with_memories=with_memories)

    @abstractmethod
    async def _delete_with_session(
        self,
        connection: asyncpg.Connection,
        key: SessionKey,
        kind: TombstoneKind,
        now: float,
        *,
        with_memories: bool,
    ) -> None:
        """What other features keep of a session deleted in the caller's
        transaction: its memories (when `with_memories`) deleted, a tombstone
        of `kind` written."""
