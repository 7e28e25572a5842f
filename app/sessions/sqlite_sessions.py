"""Sessions, their events and scoped state on SQLite (`SessionStore`, fork
included), through SQLAlchemy Core (aiosqlite) with the SQL in
`sqlite_statements.py`. Appends, the request most made, run in plain SQL
(`sqlite_append.py`) on the writer's thread (app.db.sqlite_writer).

What a deleted session takes from other features (its tombstone, its
memories) is theirs to delete, through the hook of
`sqlite_session_hooks.py`."""

from collections.abc import Awaitable, Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from . import forking, sqlite_append
from . import sqlite_statements as sql
from .domain import (
    ALL_SESSIONS,
    EventsRemoved,
    Expiry,
    ForkSource,
    ListedApp,
    ListedUser,
    NewEvent,
    Popped,
    SessionKey,
    SessionListing,
    SessionPosition,
    SessionQuery,
    SessionRow,
    SessionSnapshot,
    SharedScopes,
    SortOrder,
    StoredEvent,
)
from .history import changes_session_state
from .labels import Labels
from .sqlite_session_hooks import SqliteSessionHooks
from .state import ScopedDelta, StateDict
from .state_sizes import session_state_bytes, state_past_limit
from .store import ForkOutcome

T = TypeVar("T")
# `SqliteSessions._delete_if_expired`, as a fork's statements call it.
DeleteIfExpired = Callable[[AsyncConnection, SessionKey, float, bool], Awaitable[bool]]


class SqliteSessions(SqliteSessionHooks):
    async def append_event(
        self,
        key: SessionKey,
        event: NewEvent,
        expected_revision: int | None,
        max_state_bytes: int,
        now: float,
        new_expiry: Expiry | None = None,
        new_labels: Labels | None = None,
    ) -> int:
        return await self._writer.write(
            partial(
                sqlite_append.append_events,
                key=key,
                new_events=[event],
                delta=event.delta,
                expected_revision=expected_revision,
                max_state_bytes=max_state_bytes,
                now=now,
                new_expiry=new_expiry,
                new_labels=new_labels,
            )
        )

    async def append_events(
        self,
        key: SessionKey,
        events: Sequence[NewEvent],
        delta: ScopedDelta,
        expected_revision: int | None,
        max_state_bytes: int,
        now: float,
    ) -> int:
        return await self._writer.write(
            partial(
                sqlite_append.append_events,
                key=key,
                new_events=events,
                delta=delta,
                expected_revision=expected_revision,
                max_state_bytes=max_state_bytes,
                now=now,
            )
        )

    async def newest_kept_seq(
        self, key: SessionKey, remove_count: int, now: float
    ) -> tuple[int, int] | None:
        async with self._read() as connection:
            return await sql.newest_kept_seq(connection, key, remove_count, now)

    async def newest_events(
        self, key: SessionKey, count: int, now: float
    ) -> tuple[int, list[StoredEvent]] | None:
        async with self._read() as connection:
            return await sql.newest_events(connection, key, count, now)

    async def remove_events(
        self,
        key: SessionKey,
        after_seq: int,
        expected_revision: int,
        state: StateDict | None,
        now: float,
    ) -> EventsRemoved | None:
        async with self._write() as connection:
            return await sql.remove_events(
                connection, key, after_seq, expected_revision, state, now
            )

    async def pop_newest(
        self,
        key: SessionKey,
        count: int,
        expected_revision: int | None,
        max_bytes: int,
        now: float,
    ) -> Popped | None:
        # The reads and the removal in one write transaction: nothing can
        # come between them, so the removal's revision guard always holds.
        async with self._write() as connection:
            found = await sql.newest_events(connection, key, count, now)
            if found is None:
                return None
            revision, going = found
            changes_state = changes_session_state(going)
            removed = None
            if (
                going
                and not changes_state
                and expected_revision in (None, revision)
                and sum(len(event.data.encode()) for event in going) <= max_bytes
            ):
                done = await sql.remove_events(
                    connection, key, going[0].seq - 1, revision, None, now
                )
                removed = None if done is None else done.count
            after = await sql.read_snapshot(connection, key, 0, None, max_bytes, now)
            return Popped(revision, going, removed, after, changes_state)

    async def set_expiry(
        self, key: SessionKey, expiry: Expiry, expected_revision: int | None, now: float
    ) -> int | None:
        async with self._write() as connection:
            return await sql.set_expiry(connection, key, expiry, expected_revision, now)

    async def set_labels(
        self,
        key: SessionKey,
        labels: Labels,
        expiry: Expiry | None,
        expected_revision: int | None,
        now: float,
    ) -> int | None:
        async with self._write() as connection:
            return await sql.set_labels(connection, key, labels, expiry, expected_revision, now)

    async def read_snapshot(
        self,
        key: SessionKey,
        limit: int | None,
        after_timestamp: float | None,
        max_events_bytes: int,
        now: float,
    ) -> SessionSnapshot | None:
        async with self._read() as connection:
            return await sql.read_snapshot(
                connection, key, limit, after_timestamp, max_events_bytes, now
            )

    # -- sessions ------------------------------------------------------------

    async def create_session(
        self,
        key: SessionKey,
        delta: ScopedDelta,
        now: float,
        expiry: Expiry,
        max_state_bytes: int,
        *,
        forget_expired_memories: bool,
        labels: Labels | None = None,
    ) -> SharedScopes | None:
        refused = state_past_limit(max_state_bytes, session=session_state_bytes(delta.session))
        if refused is not None:
            raise refused
        async with self._write() as connection:
            if not await sql.insert_session(
                connection, key, delta.session, now, expiry, labels=labels
            ):
                if not await self._delete_if_expired(connection, key, now, forget_expired_memories):
                    return None
                await sql.insert_session(connection, key, delta.session, now, expiry, labels=labels)
            await _on_cursor(
                connection,
                partial(
                    sqlite_append.write_shared_state, key=key, delta=delta, limit=max_state_bytes
                ),
            )
            return SharedScopes(
                await sql.read_app_state(connection, key.app_name),
                await sql.read_user_state(connection, key.app_name, key.user_id),
            )

    async def page_sessions(
        self,
        app_name: str,
        user_id: str | None,
        after: SessionPosition | None,
        limit: int,
        max_bytes: int,
        now: float,
        query: SessionQuery = ALL_SESSIONS,
    ) -> SessionListing:
        async with self._read() as connection:
            page, more, horizon = await sql.page_sessions(
                connection, app_name, user_id, after, limit, max_bytes, now, query
            )
            if not query.include_state:
                return SessionListing(page, {}, {}, more, horizon)
            app_state = await sql.read_app_state(connection, app_name)
            user_states = await sql.read_user_states(
                connection, app_name, sorted({row.user_id for row in page})
            )
        return SessionListing(page, app_state, user_states, more, horizon)

    async def page_apps(
        self, allowed: frozenset[str] | None, after: str | None, limit: int, now: float
    ) -> tuple[list[ListedApp], bool]:
        async with self._read() as connection:
            return await sql.page_apps(connection, allowed, after, limit, now)

    async def page_users(
        self, app_name: str, after: str | None, limit: int, now: float
    ) -> tuple[list[ListedUser], bool]:
        async with self._read() as connection:
            return await sql.page_users(connection, app_name, after, limit, now)

    async def delete_session(self, key: SessionKey, *, with_memories: bool, now: float) -> bool:
        async with self._write() as connection:
            alive = await sql.delete_session(connection, key, now)
            if alive is None:
                return False
            await self._session_deleted(
                connection,
                key,
                "deleted" if alive else "expired",
                now,
                with_memories=with_memories,
            )
        return alive

    async def find_event(self, key: SessionKey, event_id: str) -> StoredEvent | None:
        async with self._read() as connection:
            return await sql.find_event(connection, key, event_id)

    async def find_events(
        self, key: SessionKey, event_ids: Sequence[str]
    ) -> dict[str, StoredEvent]:
        async with self._read() as connection:
            return await sql.find_events(connection, key, event_ids)

    async def read_session(self, key: SessionKey, now: float) -> SessionRow | None:
        async with self._read() as connection:
            return await sql.read_session(connection, key, now)

    async def page_events(
        self,
        key: SessionKey,
        order: SortOrder,
        after_seq: int | None,
        after_timestamp: float | None,
        limit: int,
        max_bytes: int,
        now: float,
    ) -> tuple[list[StoredEvent], bool, int] | None:
        async with self._read() as connection:
            found = await sql.read_session(connection, key, now)
            if found is None:
                return None
            events, more = await sql.page_events(
                connection, key, order, after_seq, after_timestamp, limit, max_bytes
            )
            return events, more, found.revision

    async def read_app_state(self, app_name: str) -> StateDict:
        async with self._read() as connection:
            return await sql.read_app_state(connection, app_name)

    async def read_user_state(self, app_name: str, user_id: str) -> StateDict:
        async with self._read() as connection:
            return await sql.read_user_state(connection, app_name, user_id)

    # -- fork ----------------------------------------------------------------

    async def read_initial_state(self, key: SessionKey, now: float) -> StateDict | None:
        async with self._read() as connection:
            return await sql.read_initial_state(connection, key, now)

    async def read_events(
        self, key: SessionKey, after_seq: int, up_to_seq: int, limit: int
    ) -> list[StoredEvent]:
        async with self._read() as connection:
            return await sql.read_events_after(connection, key, after_seq, limit, up_to_seq)

    async def fork_session(
        self,
        source: ForkSource,
        session_id: str,
        now: float,
        expiry: Expiry,
        *,
        forget_expired_memories: bool,
    ) -> ForkOutcome:
        # The write lock, held from BEGIN, keeps the source as it is read.
        async with self._write() as connection:
            return await forking.fork_session(
                _ForkStatements(connection, self._delete_if_expired),
                source,
                session_id,
                now,
                expiry,
                forget_expired_memories=forget_expired_memories,
            )

    async def _delete_if_expired(
        self, connection: AsyncConnection, key: SessionKey, now: float, with_memories: bool
    ) -> bool:
        """Deletes the session if it has expired (a create or a fork takes
        its id), in the caller's transaction; False if it has not."""
        if not await sql.delete_if_expired(connection, key, now):
            return False
        await self._session_deleted(connection, key, "expired", now, with_memories=with_memories)
        return True


async def _on_cursor(connection: AsyncConnection, work: Callable[[sqlite_append.Cursor], T]) -> T:
    """`work` on the DB-API cursor of the connection, in its transaction."""

    def run(pooled: Connection) -> T:
        with closing(pooled.connection.cursor()) as cursor:
            return work(cursor)

    return await connection.run_sync(run)


@dataclass(frozen=True)
class _ForkStatements:
    """A fork's statements (`forking.ForkStatements`) on one connection."""

    connection: AsyncConnection
    delete_expired: DeleteIfExpired

    async def lock_source(self, key: SessionKey, now: float) -> forking.LockedSource | None:
        found = await sql.fork_source(self.connection, key, now)
        return None if found is None else forking.LockedSource(*found)

    async def event_exists(self, key: SessionKey, seq: int) -> bool:
        return await sql.event_at_seq(self.connection, key, seq)

    async def insert_fork(
        self,
        key: SessionKey,
        source: forking.LockedSource,
        state: StateDict,
        revision: int,
        now: float,
        expiry: Expiry,
        labels: Labels,
    ) -> bool:
        return await sql.insert_session(
            self.connection,
            key,
            state,
            now,
            expiry,
            revision=revision,
            initial_state=source.initial_state,
            labels=labels,
        )

    async def delete_if_expired(self, key: SessionKey, now: float, with_memories: bool) -> bool:
        return await self.delete_expired(self.connection, key, now, with_memories)

    async def copy_events(
        self, source: SessionKey, session_id: str, after_seq: int, up_to_seq: int
    ) -> None:
        await sql.copy_events(self.connection, source, session_id, after_seq, up_to_seq)
