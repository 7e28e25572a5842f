"""`OperatorStore` on both backends, through SQLAlchemy Core: the same
statements serve SQLite and PostgreSQL (`transfer_repository.py`,
`operator_repository.py`, the event reads of `sqlite_statements.py`, Core
of no dialect). An operator's bulk tool gains nothing from asyncpg's lower
CPU per statement, and one implementation keeps one copy of its SQL
(docs/design.md)."""

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Table
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ..core.config import Settings
from ..core.encryption import ValueCipher
from ..core.errors import SetupProblem
from ..db import migrations
from ..db.engine import WRITE_OPTION, create_engine
from ..langgraph.checkpoints.tables import lg_threads
from ..langgraph.sealing import Sealing
from ..langgraph.store.tables import lg_store_items
from ..sessions import sqlite_statements
from ..sessions.domain import ALL_SESSIONS, NewEvent, SessionKey, SessionQuery, StoredEvent
from ..sessions.tables import app_states, forgotten_memories, memories, sessions, user_states
from ..transfer import langgraph_repository as lg_sql
from ..transfer import repository as sql
from . import repository as operator_repository
from .store import (
    AlreadyStored,
    AppSummary,
    ForgottenMemory,
    ListedSession,
    SessionPosition,
    SessionRecord,
    StateEntry,
    StoredMemory,
    StoreItemRecord,
    ThreadRecord,
    ThreadRows,
)

# Rows read per transaction by an export.
PAGE_ROWS = 1000


def require_existing_database(settings: Settings) -> None:
    """Reading must not create an empty SQLite database where a typo points."""
    if settings.is_sqlite:
        path = Path(make_url(settings.database_url).database or "")
        if not path.exists():
            raise SetupProblem(f"no SQLite database at {path}: check SESSION_STATE_DATABASE_URL")


@asynccontextmanager
async def opened_operator_store(
    settings: Settings, *, create: bool
) -> AsyncIterator["SqlOperatorStore"]:
    """The database at its current schema. `create`: an embedded SQLite
    database is created and migrated as `serve` does; else it must exist."""
    if settings.is_sqlite and not create:
        require_existing_database(settings)
    engine = create_engine(settings)
    try:
        if settings.is_sqlite:
            await migrations.upgrade_to_head(engine)
        await migrations.require_current_schema(engine)
        yield SqlOperatorStore(engine, settings.value_cipher())
    finally:
        await engine.dispose()


@contextmanager
def _taken_keys_as_already_stored() -> Iterator[None]:
    try:
        yield
    except IntegrityError:
        raise AlreadyStored from None


@dataclass(frozen=True)
class SqlOperatorStore:
    engine: AsyncEngine
    # LangGraph's values are exported opened and imported sealed with it.
    cipher: ValueCipher | None = None

    @property
    def _sealing(self) -> Sealing:
        return Sealing(self.cipher)

    # -- across apps ---------------------------------------------------------

    async def app_summaries(self, now: float) -> list[AppSummary]:
        async with self.engine.connect() as connection:
            return await operator_repository.app_summaries(connection, now)

    async def keys_of_session_id(
        self, session_id: str, *, app_name: str | None, user_id: str | None, now: float, limit: int
    ) -> list[tuple[str, str]]:
        async with self.engine.connect() as connection:
            return await operator_repository.keys_of_session_id(
                connection, session_id, app_name=app_name, user_id=user_id, now=now, limit=limit
            )

    async def page_sessions(
        self,
        *,
        app_name: str | None,
        user_id: str | None,
        newest_first: bool,
        after: SessionPosition | None,
        limit: int,
        now: float,
        where: SessionQuery = ALL_SESSIONS,
    ) -> tuple[list[ListedSession], bool]:
        async with self.engine.connect() as connection:
            return await operator_repository.page_sessions(
                connection,
                app_name=app_name,
                user_id=user_id,
                newest_first=newest_first,
                after=after,
                limit=limit,
                now=now,
                where=where,
            )

    # -- export --------------------------------------------------------------

    async def _rows(
        self,
        table: Table,
        columns: Sequence[str],
        app_name: str | None,
        user_id: str | None,
        *,
        live_at: float | None = None,
    ) -> AsyncIterator[Sequence[Any]]:
        """The rows of the table as `columns`, in primary-key order, a page
        per transaction."""
        after: tuple[Any, ...] | None = None
        while True:
            async with self.engine.connect() as connection:
                rows = await sql.page_in_key_order(
                    connection, table, columns, app_name, user_id, after, PAGE_ROWS, live_at=live_at
                )
            for row in rows:
                yield tuple(row)[: len(columns)]
            if len(rows) < PAGE_ROWS:
                return
            after = tuple(rows[-1])[len(columns) :]

    async def app_state_entries(self, app_name: str | None) -> AsyncIterator[StateEntry]:
        async for app, key, value in self._rows(
            app_states, ("app_name", "key", "value"), app_name, None
        ):
            yield StateEntry(app, None, key, value)

    async def user_state_entries(
        self, app_name: str | None, user_id: str | None
    ) -> AsyncIterator[StateEntry]:
        columns = ("app_name", "user_id", "key", "value")
        async for app, user, key, value in self._rows(user_states, columns, app_name, user_id):
            yield StateEntry(app, user, key, value)

    async def live_sessions(
        self, app_name: str | None, user_id: str | None, now: float
    ) -> AsyncIterator[SessionRecord]:
        rows = self._rows(sessions, sql.SESSION_COLUMNS, app_name, user_id, live_at=now)
        async for row in rows:
            yield SessionRecord(*row)

    async def count_events(self, key: SessionKey, up_to_seq: int) -> int:
        async with self.engine.connect() as connection:
            return await sqlite_statements.count_events(connection, key, up_to_seq)

    async def read_events(
        self, key: SessionKey, after_seq: int, up_to_seq: int, limit: int
    ) -> list[StoredEvent]:
        async with self.engine.connect() as connection:
            return await sqlite_statements.read_events_after(
                connection, key, after_seq, limit, up_to_seq
            )

    async def memories(
        self, app_name: str | None, user_id: str | None
    ) -> AsyncIterator[StoredMemory]:
        async for row in self._rows(memories, sql.MEMORY_COLUMNS, app_name, user_id):
            yield sql.memory_of(row)

    async def forgotten_memories(
        self, app_name: str | None, user_id: str | None
    ) -> AsyncIterator[ForgottenMemory]:
        columns = ("app_name", "user_id", "memory_id")
        async for row in self._rows(forgotten_memories, columns, app_name, user_id):
            yield ForgottenMemory(*row)

    async def live_threads(
        self, app_name: str | None, user_id: str | None, now: float
    ) -> AsyncIterator[ThreadRecord]:
        rows = self._rows(lg_threads, lg_sql.THREAD_COLUMNS, app_name, user_id, live_at=now)
        async for row in rows:
            yield ThreadRecord(*row)

    async def thread_rows(self, app_name: str, thread_id: str) -> ThreadRows:
        async with self.engine.connect() as connection, connection.begin():
            return await lg_sql.thread_rows(connection, app_name, thread_id, self._sealing)

    async def live_store_items(
        self, app_name: str | None, user_id: str | None, now: float
    ) -> AsyncIterator[StoreItemRecord]:
        columns = lg_sql.STORE_ITEM_COLUMNS
        sealing = self._sealing
        async for row in self._rows(lg_store_items, columns, app_name, user_id, live_at=now):
            yield lg_sql.opened_item(StoreItemRecord(*row), sealing)

    # -- import --------------------------------------------------------------

    @asynccontextmanager
    async def importing(self) -> AsyncIterator["_ImportTransaction"]:
        with _taken_keys_as_already_stored():
            async with self.engine.connect() as connection:
                await connection.execution_options(**{WRITE_OPTION: True})
                async with connection.begin():
                    yield _ImportTransaction(connection, self._sealing)


@dataclass(frozen=True)
class _ImportTransaction:
    connection: AsyncConnection
    sealing: Sealing

    async def find_session(self, key: SessionKey) -> SessionRecord | None:
        return await sql.find_session(self.connection, key)

    async def insert_session(self, session: SessionRecord) -> None:
        with _taken_keys_as_already_stored():
            await sql.insert_session(self.connection, session)

    async def insert_events(self, key: SessionKey, events: Sequence[tuple[int, NewEvent]]) -> None:
        with _taken_keys_as_already_stored():
            await sql.insert_events(self.connection, key, events)

    async def stored_event_data(self, key: SessionKey, seqs: Sequence[int]) -> dict[int, str]:
        return await sql.stored_event_data(self.connection, key, seqs)

    async def stored_values(
        self, app_name: str, user_id: str | None, keys: Sequence[str]
    ) -> dict[str, Any]:
        return await sql.stored_values(self.connection, app_name, user_id, keys)

    async def insert_values(
        self, app_name: str, user_id: str | None, entries: dict[str, Any]
    ) -> None:
        with _taken_keys_as_already_stored():
            await sql.insert_values(self.connection, app_name, user_id, entries)

    async def find_memory(
        self, app_name: str, user_id: str, session_id: str, event_id: str
    ) -> StoredMemory | None:
        return await sql.find_memory(self.connection, app_name, user_id, session_id, event_id)

    async def insert_memory(self, memory: StoredMemory) -> None:
        with _taken_keys_as_already_stored():
            await sql.insert_memory(self.connection, memory)

    async def is_forgotten(self, forgotten: ForgottenMemory) -> bool:
        return await sql.is_forgotten(
            self.connection, forgotten.app_name, forgotten.user_id, forgotten.memory_id
        )

    async def insert_forgotten(self, forgotten: ForgottenMemory) -> None:
        with _taken_keys_as_already_stored():
            await sql.insert_forgotten(
                self.connection, forgotten.app_name, forgotten.user_id, forgotten.memory_id
            )

    async def find_thread(self, app_name: str, thread_id: str) -> ThreadRecord | None:
        return await lg_sql.find_thread(self.connection, app_name, thread_id)

    async def thread_rows(self, app_name: str, thread_id: str) -> ThreadRows:
        return await lg_sql.thread_rows(self.connection, app_name, thread_id, self.sealing)

    async def insert_thread(self, thread: ThreadRecord, rows: ThreadRows) -> None:
        with _taken_keys_as_already_stored():
            await lg_sql.insert_thread(self.connection, thread, rows, self.sealing)

    async def find_store_item(
        self, app_name: str, namespace: str, key: str
    ) -> StoreItemRecord | None:
        return await lg_sql.find_store_item(self.connection, app_name, namespace, key, self.sealing)

    async def insert_store_item(self, item: StoreItemRecord) -> None:
        with _taken_keys_as_already_stored():
            await lg_sql.insert_store_item(self.connection, item, self.sealing)
