"""The SQL of export and import (`SqlOperatorStore`), as SQLAlchemy Core
over `tables.py`: the same statements on both backends (an operator's bulk
tool, not a request path). Reads walk every table in primary-key order with
keyset pages, so a dump of any size is read in bounded memory; writes run in
transactions the caller owns."""

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Row, Table, insert, null, select, text, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from ..admin.store import SessionRecord, StoredMemory
from ..core import json_codec
from ..core.encryption import is_sealed_text
from ..memory.search_text import search_text
from ..sessions.domain import NewEvent, SessionKey
from ..sessions.event_rows import event_row_values
from ..sessions.liveness_sql import live
from ..sessions.postgresql_statements import CHANGE_NUMBER
from ..sessions.sqlite_statements import next_change_number
from ..sessions.state_sizes import entry_bytes, session_state_bytes
from ..sessions.tables import (
    app_states,
    events,
    forgotten_memories,
    memories,
    sessions,
    user_states,
)

SESSION_COLUMNS = (
    "app_name",
    "user_id",
    "id",
    "state",
    "initial_state",
    "revision",
    "create_time",
    "update_time",
    "expire_time",
    "ttl_seconds",
    "labels",
)
MEMORY_COLUMNS = (
    "app_name",
    "user_id",
    "session_id",
    "event_id",
    "author",
    "role",
    "timestamp",
    "text",
    "content",
    "custom_metadata",
)


def _owned_by(table: Table, app_name: str | None, user_id: str | None) -> list[Any]:
    conditions = []
    if app_name is not None:
        conditions.append(table.c.app_name == app_name)
    if user_id is not None:
        conditions.append(table.c.user_id == user_id)
    return conditions


async def page_in_key_order(
    connection: AsyncConnection,
    table: Table,
    columns: Sequence[str],
    app_name: str | None,
    user_id: str | None,
    after: tuple[Any, ...] | None,
    limit: int,
    *,
    live_at: float | None = None,
) -> Sequence[Row[Any]]:
    """The next `limit` rows of `table` (of the app and user, when given)
    after the primary key `after`, in primary-key order; each is `columns`
    followed by its primary key. `live_at`: those not expired at that time
    (tables with an expire_time)."""
    key = list(table.primary_key.columns)
    statement = select(*(table.c[name] for name in columns), *key).where(
        *_owned_by(table, app_name, user_id)
    )
    if after is not None:
        statement = statement.where(tuple_(*key) > tuple_(*after))
    if live_at is not None:
        # Any table with an expire_time (sessions, threads, store items).
        statement = statement.where(live(table.c.expire_time, live_at))
    result = await connection.execute(statement.order_by(*key).limit(limit))
    return result.all()


# -- import ------------------------------------------------------------------


def _scope_table(user_id: str | None) -> Table:
    return app_states if user_id is None else user_states


async def stored_values(
    connection: AsyncConnection, app_name: str, user_id: str | None, keys: Sequence[str]
) -> dict[str, Any]:
    """The stored values of these keys of the app's (or the user's) state."""
    table = _scope_table(user_id)
    result = await connection.execute(
        select(table.c.key, table.c.value).where(
            *_owned_by(table, app_name, user_id), table.c.key.in_(keys)
        )
    )
    return {key: value for key, value in result}


async def insert_values(
    connection: AsyncConnection, app_name: str, user_id: str | None, entries: dict[str, Any]
) -> None:
    table = _scope_table(user_id)
    owner = {"app_name": app_name, **({} if user_id is None else {"user_id": user_id})}
    await connection.execute(
        insert(table),
        [
            {**owner, "key": key, "value": value, "size": entry_bytes(key, value)}
            for key, value in entries.items()
        ],
    )


async def find_session(connection: AsyncConnection, key: SessionKey) -> SessionRecord | None:
    """The session, expired or not."""
    result = await connection.execute(
        select(*(sessions.c[name] for name in SESSION_COLUMNS)).where(
            sessions.c.app_name == key.app_name,
            sessions.c.user_id == key.user_id,
            sessions.c.id == key.session_id,
        )
    )
    row = result.first()
    return None if row is None else SessionRecord(*row)


async def insert_session(connection: AsyncConnection, session: SessionRecord) -> None:
    values = {name: getattr(session, name) for name in SESSION_COLUMNS}
    # SQL NULL for none: the JSON type would write a JSON null.
    values["labels"] = session.labels or null()
    # Numbered as any write of a session row is (user streams see it created).
    if connection.dialect.name == "postgresql":
        values["change_number"] = text(CHANGE_NUMBER)
    else:
        values["change_number"] = next_change_number()
    await connection.execute(
        insert(sessions).values(**values, state_bytes=session_state_bytes(session.state))
    )


async def stored_event_data(
    connection: AsyncConnection, key: SessionKey, seqs: Sequence[int]
) -> dict[int, str]:
    result = await connection.execute(
        select(events.c.seq, events.c.data).where(
            events.c.app_name == key.app_name,
            events.c.user_id == key.user_id,
            events.c.session_id == key.session_id,
            events.c.seq.in_(seqs),
        )
    )
    return {seq: data for seq, data in result}


def memory_of(row: Sequence[Any]) -> StoredMemory:
    """A memory read as `MEMORY_COLUMNS`."""
    values = dict(zip(MEMORY_COLUMNS, row, strict=True))
    for name in ("content", "custom_metadata"):
        values[name] = _json_or_none(values[name])
    return StoredMemory(**values)


async def find_memory(
    connection: AsyncConnection, app_name: str, user_id: str, session_id: str, event_id: str
) -> StoredMemory | None:
    result = await connection.execute(
        select(*(memories.c[name] for name in MEMORY_COLUMNS)).where(
            memories.c.app_name == app_name,
            memories.c.user_id == user_id,
            memories.c.session_id == session_id,
            memories.c.event_id == event_id,
        )
    )
    row = result.first()
    return None if row is None else memory_of(row)


async def insert_memory(connection: AsyncConnection, memory: StoredMemory) -> None:
    """With the searchable text derived from the memory's text."""
    values = {name: getattr(memory, name) for name in MEMORY_COLUMNS}
    for name in ("content", "custom_metadata"):
        values[name] = _json_text_or_none(values[name])
    searchable = search_text(memory.text if memory.indexed_text is None else memory.indexed_text)
    await connection.execute(
        insert(memories).values(
            **values, search_words=searchable.words, search_grams=searchable.grams
        )
    )


async def is_forgotten(
    connection: AsyncConnection, app_name: str, user_id: str, memory_id: str
) -> bool:
    result = await connection.execute(
        select(forgotten_memories.c.memory_id).where(
            forgotten_memories.c.app_name == app_name,
            forgotten_memories.c.user_id == user_id,
            forgotten_memories.c.memory_id == memory_id,
        )
    )
    return result.first() is not None


async def insert_forgotten(
    connection: AsyncConnection, app_name: str, user_id: str, memory_id: str
) -> None:
    await connection.execute(
        insert(forgotten_memories).values(app_name=app_name, user_id=user_id, memory_id=memory_id)
    )


def _json_or_none(text: str | None) -> Any:
    # A sealed text (encryption at rest) is left as it is: the caller opens,
    # then parses, it (app.encryption.sealed_transfer).
    if text is None or is_sealed_text(text):
        return text
    return json_codec.loads(text)


def _json_text_or_none(value: Any) -> str | None:
    if value is None or is_sealed_text(value):
        return value  # type: ignore[no-any-return]
    return json_codec.dumps_text(value)


async def insert_events(
    connection: AsyncConnection, key: SessionKey, numbered: Iterable[tuple[int, NewEvent]]
) -> None:
    """Inserts the session's events at the given seqs, in one statement."""
    await connection.execute(
        events.insert(),
        [event_row_values(key, seq, event) for seq, event in numbered],
    )
