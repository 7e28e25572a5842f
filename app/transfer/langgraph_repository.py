"""The SQL of exporting and importing LangGraph's threads and store items
(`SqlOperatorStore`), as SQLAlchemy Core on both backends. A thread is read
and written whole, in the caller's transaction. Values are exported opened
and imported sealed as this server seals (app.langgraph.sealing): a dump
moves between deployments whatever their keys."""

from collections.abc import Sequence
from dataclasses import asdict, fields, replace
from typing import Any

from sqlalchemy import Table, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from ..admin.store import (
    ChannelValueRow,
    CheckpointRow,
    StoreItemRecord,
    ThreadRecord,
    ThreadRows,
    WriteRow,
)
from ..langgraph.checkpoints.tables import lg_channel_values, lg_checkpoints, lg_threads, lg_writes
from ..langgraph.sealing import CHANNEL_VALUE, CHECKPOINT, PLAIN, WRITE, Sealing
from ..langgraph.store.matching import searchable_text
from ..langgraph.store.tables import lg_store_items

THREAD_COLUMNS = tuple(field.name for field in fields(ThreadRecord))
STORE_ITEM_COLUMNS = tuple(field.name for field in fields(StoreItemRecord))


def _columns(row_type: type[Any]) -> list[str]:
    return [field.name for field in fields(row_type)]


async def _rows_of_thread(
    connection: AsyncConnection, table: Table, row_type: type[Any], app_name: str, thread_id: str
) -> list[Any]:
    result = await connection.execute(
        select(*(table.c[name] for name in _columns(row_type)))
        .where(table.c.app_name == app_name, table.c.thread_id == thread_id)
        .order_by(*table.primary_key.columns)
    )
    return [row_type(*row) for row in result]


def _sealed_rows(rows: ThreadRows, sealing: Sealing, *, seal: bool) -> ThreadRows:
    """The rows with their values sealed (`seal`) or opened."""
    change = sealing.seal_typed if seal else sealing.open_typed

    def checkpoint(row: CheckpointRow) -> CheckpointRow:
        type_tag, data = change(row.checkpoint_type, row.checkpoint, CHECKPOINT)
        assert data is not None
        return replace(row, checkpoint_type=type_tag, checkpoint=data)

    def value(row: ChannelValueRow) -> ChannelValueRow:
        type_tag, data = change(row.value_type, row.value, CHANNEL_VALUE)
        return replace(row, value_type=type_tag, value=data)

    def write(row: WriteRow) -> WriteRow:
        type_tag, data = change(row.value_type, row.value, WRITE)
        assert data is not None
        return replace(row, value_type=type_tag, value=data)

    return ThreadRows(
        checkpoints=[checkpoint(row) for row in rows.checkpoints],
        channel_values=[value(row) for row in rows.channel_values],
        writes=[write(row) for row in rows.writes],
    )


async def thread_rows(
    connection: AsyncConnection, app_name: str, thread_id: str, sealing: Sealing = PLAIN
) -> ThreadRows:
    """The thread's rows, their values opened."""
    rows = ThreadRows(
        checkpoints=await _rows_of_thread(
            connection, lg_checkpoints, CheckpointRow, app_name, thread_id
        ),
        channel_values=await _rows_of_thread(
            connection, lg_channel_values, ChannelValueRow, app_name, thread_id
        ),
        writes=await _rows_of_thread(connection, lg_writes, WriteRow, app_name, thread_id),
    )
    return _sealed_rows(rows, sealing, seal=False)


async def find_thread(
    connection: AsyncConnection, app_name: str, thread_id: str
) -> ThreadRecord | None:
    result = await connection.execute(
        select(*(lg_threads.c[name] for name in THREAD_COLUMNS)).where(
            lg_threads.c.app_name == app_name, lg_threads.c.thread_id == thread_id
        )
    )
    row = result.first()
    return None if row is None else ThreadRecord(*row)


async def _insert_rows(
    connection: AsyncConnection, table: Table, thread: ThreadRecord, rows: Sequence[Any]
) -> None:
    if rows:
        owner = {"app_name": thread.app_name, "thread_id": thread.thread_id}
        await connection.execute(insert(table), [{**owner, **asdict(row)} for row in rows])


async def insert_thread(
    connection: AsyncConnection, thread: ThreadRecord, rows: ThreadRows, sealing: Sealing = PLAIN
) -> None:
    rows = _sealed_rows(rows, sealing, seal=True)
    await connection.execute(insert(lg_threads).values(**asdict(thread)))
    await _insert_rows(connection, lg_checkpoints, thread, rows.checkpoints)
    await _insert_rows(connection, lg_channel_values, thread, rows.channel_values)
    await _insert_rows(connection, lg_writes, thread, rows.writes)


def opened_item(item: StoreItemRecord, sealing: Sealing) -> StoreItemRecord:
    return replace(item, value=sealing.open_item(item.value))


async def find_store_item(
    connection: AsyncConnection, app_name: str, namespace: str, key: str, sealing: Sealing = PLAIN
) -> StoreItemRecord | None:
    result = await connection.execute(
        select(*(lg_store_items.c[name] for name in STORE_ITEM_COLUMNS)).where(
            lg_store_items.c.app_name == app_name,
            lg_store_items.c.namespace == namespace,
            lg_store_items.c.key == key,
        )
    )
    row = result.first()
    return None if row is None else opened_item(StoreItemRecord(*row), sealing)


async def insert_store_item(
    connection: AsyncConnection, item: StoreItemRecord, sealing: Sealing = PLAIN
) -> None:
    search_text = sealing.seal_text(searchable_text(item.value))
    await connection.execute(
        insert(lg_store_items).values(
            {**asdict(item), "value": sealing.seal_item(item.value), "search_text": search_text}
        )
    )
