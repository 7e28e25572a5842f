"""The embedded store: SQLite through SQLAlchemy Core (aiosqlite), its SQL
in `sqlite_statements.py`, `sqlite_append.py` (the append's rules) and
`memory_repository.py`. Appends, the request most made, run in plain SQL on
a thread of their own (app.db.sqlite_writer); the engine, its transactions
and the writer are app.db.sqlite_connections'."""

import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from ..core.errors import DatabaseUnavailable
from ..db.migrations import SchemaNotCurrent, require_current_schema
from ..db.sqlite_connections import SqliteConnections
from ..langgraph.checkpoints import sqlite as checkpoints
from ..langgraph.store import sqlite as store_items
from ..memory import sqlite_statements as memory_repository
from ..memory.candidates import gather_memory_candidates
from ..memory.embedding import StoredVector
from ..memory.store import MemoriesOf
from ..streams import sqlite_tombstones as tombstones
from . import forking, sqlite_append
from . import sqlite_statements as sql
from .domain import (
    ALL_SESSIONS,
    ChangeCursor,
    ChangedSession,
    EmbeddingBacklogCount,
    Erased,
    EventsRemoved,
    Expiry,
    ForkSource,
    ListedApp,
    ListedUser,
    MemoryCandidates,
    MemoryRecord,
    NewEvent,
    Popped,
    SessionChanges,
    SessionKey,
    SessionListing,
    SessionPosition,
    SessionQuery,
    SessionRow,
    SessionSnapshot,
    SharedScopes,
    SortOrder,
    StoredEvent,
    Swept,
    UserChanges,
    VectorQuery,
)
from .event_windows import events_batch
from .history import changes_session_state
from .labels import Labels
from .state import ScopedDelta, StateDict
from .state_sizes import session_state_bytes, state_past_limit
from .store import ForkOutcome

# Rows per statement when memories are written or a session's events read
# for memory: a long history is taken in bounded memory.
MEMORY_BATCH = 500

T = TypeVar("T")


def _batches(items: Sequence[T]) -> list[Sequence[T]]:
    return [items[start : start + MEMORY_BATCH] for start in range(0, len(items), MEMORY_BATCH)]


class SqliteStore(SqliteConnections):
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

    async def read_changes(
        self, key: SessionKey, after_revision: int, limit: int, max_bytes: int, now: float
    ) -> SessionChanges | None:
        async with self._read() as connection:
            return await sql.read_changes(connection, key, after_revision, limit, max_bytes, now)

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
                if not await _delete_if_expired(connection, key, now, forget_expired_memories):
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
            if with_memories:
                await memory_repository.delete_session_memories(connection, key)
            await tombstones.write(connection, [key], "deleted" if alive else "expired", now)
        return alive

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
                _ForkStatements(connection),
                source,
                session_id,
                now,
                expiry,
                forget_expired_memories=forget_expired_memories,
            )

    # -- memory --------------------------------------------------------------

    async def ingest_session(
        self, key: SessionKey, memories_of: MemoriesOf, now: float
    ) -> int | None:
        added = 0
        async with self._write() as connection:
            # The write lock is held until the memories are committed: a
            # delete of the session (with its memories) waits.
            if await sql.read_session(connection, key, now) is None:
                return None
            after_seq = 0
            while batch := await sql.read_events_after(connection, key, after_seq, MEMORY_BATCH):
                after_seq = batch[-1].seq
                added += await memory_repository.insert_memories(
                    connection, key.app_name, key.user_id, memories_of(batch)
                )
        return added

    async def add_memories(
        self, app_name: str, user_id: str, records: Sequence[MemoryRecord]
    ) -> int:
        added = 0
        async with self._write() as connection:
            for batch in _batches(records):
                added += await memory_repository.insert_memories(
                    connection, app_name, user_id, batch
                )
        return added

    async def replace_memories(
        self, app_name: str, user_id: str, records: Sequence[MemoryRecord]
    ) -> None:
        async with self._write() as connection:
            for batch in _batches(records):
                await memory_repository.replace_memories(connection, app_name, user_id, batch)

    async def forget_memory(self, app_name: str, user_id: str, memory_id: str) -> None:
        async with self._write() as connection:
            await memory_repository.forget_memory(connection, app_name, user_id, memory_id)

    async def search_memories(
        self, app_name: str, user_id: str, question: str, limit: int, budget: int
    ) -> list[MemoryRecord]:
        async with self._read() as connection:
            return await memory_repository.search(
                connection, app_name, user_id, question, limit, budget
            )

    async def forget_user_memories(self, app_name: str, user_id: str) -> None:
        async with self._write() as connection:
            await memory_repository.delete_user_memories(connection, app_name, user_id)

    async def memory_candidates(
        self,
        app_name: str,
        user_id: str,
        question: str,
        keyword_limit: int,
        query: VectorQuery | None,
    ) -> MemoryCandidates:
        return await gather_memory_candidates(
            self._read,
            memory_repository.keyword_ids,
            memory_repository.nearest,
            app_name,
            user_id,
            question,
            keyword_limit,
            query,
        )

    async def read_memories(
        self, app_name: str, user_id: str, ids: Sequence[int], budget: int
    ) -> list[MemoryRecord]:
        async with self._read() as connection:
            return await memory_repository.read_memories(connection, app_name, user_id, ids, budget)

    async def claim_memories_to_embed(
        self,
        model: str,
        limit: int,
        app_name: str | None,
        user_id: str | None,
        *,
        now: float,
        until: float,
        max_tries: int,
    ) -> list[tuple[int, str]]:
        async with self._write() as connection:
            return await memory_repository.claim_memories_to_embed(
                connection,
                model,
                limit,
                app_name,
                user_id,
                now=now,
                until=until,
                max_tries=max_tries,
            )

    async def release_memories_to_embed(self, ids: Sequence[int]) -> None:
        if ids:
            async with self._write() as connection:
                await memory_repository.release_memories_to_embed(connection, ids)

    async def refuse_memories_to_embed(self, ids: Sequence[int], retry_at: float) -> None:
        if ids:
            async with self._write() as connection:
                await memory_repository.refuse_memories_to_embed(connection, ids, retry_at)

    async def retry_refused_embeddings(
        self, model: str, app_name: str | None, user_id: str | None
    ) -> int:
        async with self._write() as connection:
            return await memory_repository.retry_refused_embeddings(
                connection, model, app_name, user_id
            )

    async def count_memories_to_embed(
        self, model: str, app_name: str | None, user_id: str | None, max_tries: int
    ) -> EmbeddingBacklogCount:
        async with self._read() as connection:
            return await memory_repository.count_memories_to_embed(
                connection, model, app_name, user_id, max_tries
            )

    async def store_embeddings(
        self, model: str, vectors: Sequence[tuple[int, StoredVector]]
    ) -> None:
        async with self._write() as connection:
            await memory_repository.store_embeddings(connection, model, vectors)

    # -- erasure -------------------------------------------------------------
    # One transaction over every feature's tables (app.lifecycle.tables): a
    # reader sees all of it or none of it, and a failure anywhere leaves it
    # all in place for a retry.

    async def erase_user(self, app_name: str, user_id: str, batch_events: int) -> Erased:
        async with self._write() as connection:
            return await _erase(connection, app_name, user_id, batch_events)

    async def erase_app(self, app_name: str, batch_events: int) -> Erased:
        async with self._write() as connection:
            return await _erase(connection, app_name, None, batch_events)

    # -- the sweeper ---------------------------------------------------------

    async def sweep_expired(
        self,
        now: float,
        batch_events: int,
        *,
        with_memories: bool,
        expired: list[SessionKey] | None = None,
    ) -> Swept | None:
        # Each batch holds the database's write lock: two processes sweeping
        # one file take turns batch by batch and never delete a row twice.
        swept = Swept()
        while True:
            async with self._write() as connection:
                candidates = await sql.expired_sessions(connection, now)
                batch = events_batch(candidates, batch_events)
                if not batch:
                    return swept
                sessions, events = await sql.delete_any_sessions_with_events(connection, batch)
                memories = 0
                if with_memories:
                    for key in batch:
                        memories += await memory_repository.delete_session_memories(connection, key)
                await tombstones.write(connection, batch, "expired", now)
            if expired is not None:
                expired += batch
            swept += Swept(sessions, events, memories)

    async def count_expired(self, now: float) -> int:
        async with self._read() as connection:
            return await sql.count_expired(connection, now)

    # -- operations ----------------------------------------------------------

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


async def _on_cursor(connection: AsyncConnection, work: Callable[[sqlite_append.Cursor], T]) -> T:
    """`work` on the DB-API cursor of the connection, in its transaction."""

    def run(pooled: Connection) -> T:
        with closing(pooled.connection.cursor()) as cursor:
            return work(cursor)

    return await connection.run_sync(run)


async def _delete_if_expired(
    connection: AsyncConnection, key: SessionKey, now: float, with_memories: bool
) -> bool:
    if not await sql.delete_if_expired(connection, key, now):
        return False
    if with_memories:
        await memory_repository.delete_session_memories(connection, key)
    await tombstones.write(connection, [key], "expired", now)
    return True


@dataclass(frozen=True)
class _ForkStatements:
    """A fork's statements (`forking.ForkStatements`) on one connection."""

    connection: AsyncConnection

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
        return await _delete_if_expired(self.connection, key, now, with_memories)

    async def copy_events(
        self, source: SessionKey, session_id: str, after_seq: int, up_to_seq: int
    ) -> None:
        await sql.copy_events(self.connection, source, session_id, after_seq, up_to_seq)


async def _erase(
    connection: AsyncConnection, app_name: str, user_id: str | None, batch_events: int
) -> Erased:
    """Everything of the user (every user's, and the app's state, when None)
    in the app, in the caller's transaction. Sessions go with their events in
    statements of at most `batch_events` events, each leaving a tombstone,
    collapsed at the end."""
    erased = Erased()
    while batch := events_batch(
        await sql.erasable_sessions(connection, app_name, user_id), batch_events
    ):
        sessions, events = await sql.delete_sessions_with_events(connection, app_name, batch)
        erased_keys = [SessionKey(app_name, user, id_) for user, id_ in batch]
        await tombstones.write(connection, erased_keys, "deleted", time.time())
        erased += Erased(sessions=sessions, events=events)
    await tombstones.collapse(connection, app_name, user_id, time.time())
    state_keys = await sql.delete_scope_state(connection, app_name, user_id)
    if user_id is None:
        memories = await memory_repository.delete_app_memories(connection, app_name)
    else:
        memories = await memory_repository.delete_user_memories(connection, app_name, user_id)
    threads = await checkpoints.erase_threads(connection, app_name, user_id)
    items = await store_items.erase_items(connection, app_name, user_id)
    return erased + Erased(
        state_keys=state_keys, memories=memories, threads=threads, store_items=items
    )
