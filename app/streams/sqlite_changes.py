"""The change log on SQLite (`ChangeLog`): a session's changes by revision,
a user's changes (tombstones, then live sessions by change number), and the
tombstone every deleted session leaves (`sqlite_tombstones.py`), written in
the deleting transaction through the sessions' hook
(app.sessions.sqlite_session_hooks)."""

from sqlalchemy.ext.asyncio import AsyncConnection

from ..sessions.domain import (
    ChangeCursor,
    ChangedSession,
    SessionChanges,
    SessionKey,
    TombstoneKind,
    UserChanges,
)
from ..sessions.sqlite_session_hooks import SqliteSessionHooks
from . import sqlite_statements as sql
from . import sqlite_tombstones as tombstones


class SqliteChangeLog(SqliteSessionHooks):
    async def read_user_changes(
        self,
        app_name: str,
        user_id: str,
        after_seq: int,
        after: ChangeCursor,
        limit: int,
        now: float,
    ) -> UserChanges:
        # One snapshot: a session listed is newer than every tombstone read.
        # One writer at a time: every change numbered is committed.
        async with self._read() as connection:
            gone, newest = await tombstones.read(connection, app_name, user_id, after_seq, limit)
            rows, horizon = await sql.read_user_changes(
                connection, app_name, user_id, after, limit + 1, now
            )
        page = [ChangedSession(*row) for row in rows]
        return UserChanges(gone, newest, page[:limit], len(page) > limit, horizon, horizon)

    async def prune_tombstones(self, before: float) -> int:
        async with self._write() as connection:
            return await tombstones.prune(connection, before)

    async def read_changes(
        self, key: SessionKey, after_revision: int, limit: int, max_bytes: int, now: float
    ) -> SessionChanges | None:
        async with self._read() as connection:
            return await sql.read_changes(connection, key, after_revision, limit, max_bytes, now)

    async def _session_deleted(
        self,
        connection: AsyncConnection,
        key: SessionKey,
        kind: TombstoneKind,
        now: float,
        *,
        with_memories: bool,
    ) -> None:
        await super()._session_deleted(connection, key, kind, now, with_memories=with_memories)
        await tombstones.write(connection, [key], kind, now)
