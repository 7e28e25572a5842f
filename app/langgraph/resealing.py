"""`reencrypt` for LangGraph's tables: each row whose values are not sealed
under the current key (plaintext ones written before encryption was on, or
sealed under an older key) is opened and sealed again, a batch at a time, in
primary-key order. SQLAlchemy Core on both backends, as the operator's other
bulk tools (app.admin.sql_store).

Safe while servers run: a row is rewritten only if it is still as it was read
(compare-and-swap on its stored values); one written meanwhile is left to the
server that wrote it, and counted, so a caller can walk again. Resumable: a
batch returns the key of its last row, where the next starts."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Table, Text, cast, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncEngine

from ..core.encryption import ValueCipher
from .checkpoints.tables import lg_channel_values, lg_checkpoints, lg_writes
from .sealing import CHANNEL_VALUE, CHECKPOINT, WRITE, Sealing
from .store.tables import lg_store_items

# The tables `reseal_batch` walks, in the order a full walk takes them.
RESEALED_TABLES = ("lg_checkpoints", "lg_channel_values", "lg_writes", "lg_store_items")

# A serialized value's columns: (type tag, bytes, purpose), per table.
_SERIALIZED: dict[str, tuple[Table, str, str, bytes]] = {
    "lg_checkpoints": (lg_checkpoints, "checkpoint_type", "checkpoint", CHECKPOINT),
    "lg_channel_values": (lg_channel_values, "value_type", "value", CHANNEL_VALUE),
    "lg_writes": (lg_writes, "value_type", "value", WRITE),
}


@dataclass(frozen=True)
class ResealedBatch:
    """`read` rows looked at, `resealed` of them rewritten, `changed` left
    because a server wrote them meanwhile; `after`: the key to pass to the
    next batch, None when the table is done."""

    read: int
    resealed: int
    changed: int
    after: tuple[Any, ...] | None


def _key_columns(table: Table) -> list[Column[Any]]:
    return list(table.primary_key.columns)


async def reseal_batch(
    engine: AsyncEngine,
    cipher: ValueCipher,
    table: str,
    after: Sequence[Any] | None,
    limit: int,
) -> ResealedBatch:
    """Up to `limit` rows of `table` (one of RESEALED_TABLES) after the key
    `after` (None: from the start), each sealed under the cipher's current
    key unless it is already. A value whose key is missing stops the walk
    (EncryptionKeyMissing naming the key id): nothing is skipped silently."""
    if table not in RESEALED_TABLES:
        raise ValueError(f"{table!r} is not one of LangGraph's sealed tables {RESEALED_TABLES}")
    if table == "lg_store_items":
        return await _reseal_items(engine, cipher, after, limit)
    return await _reseal_serialized(engine, cipher, table, after, limit)


def _page(table: Table, columns: Sequence[Any], after: Sequence[Any] | None, limit: int) -> Any:
    keys = _key_columns(table)
    query = select(*keys, *columns).order_by(*keys).limit(limit)
    if after is not None:
        query = query.where(tuple_(*keys) > tuple_(*after))
    return query


def _same_key(table: Table, row: Any) -> list[Any]:
    return [column == row[column.name] for column in _key_columns(table)]


def _cursor(table: Table, rows: Sequence[Any], limit: int) -> tuple[Any, ...] | None:
    if len(rows) < limit:
        return None
    return tuple(rows[-1][column.name] for column in _key_columns(table))


async def _reseal_serialized(
    engine: AsyncEngine, cipher: ValueCipher, name: str, after: Sequence[Any] | None, limit: int
) -> ResealedBatch:
    table, type_column, data_column, purpose = _SERIALIZED[name]
    sealing = Sealing(cipher)
    type_of, data_of = table.c[type_column], table.c[data_column]
    resealed = changed = 0
    async with engine.connect() as connection:
        page = _page(table, [type_of, data_of], after, limit)
        rows = list((await connection.execute(page)).mappings())
        await connection.commit()
    for row in rows:
        type_tag, data = row[type_column], row[data_column]
        if sealing.is_current_typed(type_tag, data):
            continue
        plain_type, plain = sealing.open_typed(type_tag, data, purpose)
        new_type, new_data = sealing.seal_typed(plain_type, plain, purpose)
        statement = (
            update(table)
            .where(*_same_key(table, row), type_of == type_tag, data_of == data)
            .values({type_column: new_type, data_column: new_data})
        )
        async with engine.begin() as connection:
            updated = (await connection.execute(statement)).rowcount
        resealed += updated
        changed += 1 - updated
    return ResealedBatch(len(rows), resealed, changed, _cursor(table, rows, limit))


async def _reseal_items(
    engine: AsyncEngine, cipher: ValueCipher, after: Sequence[Any] | None, limit: int
) -> ResealedBatch:
    table = lg_store_items
    sealing = Sealing(cipher)
    # Compared as the database's text of the JSON: the stored one, not a
    # serialization of its own that might space or order keys otherwise.
    value_text = cast(table.c.value, Text)
    columns = [table.c.value, value_text.label("value_text"), table.c.search_text]
    resealed = changed = 0
    async with engine.connect() as connection:
        rows = list((await connection.execute(_page(table, columns, after, limit))).mappings())
        await connection.commit()
    for row in rows:
        if sealing.is_current_item(row["value"]) and sealing.is_current_text(row["search_text"]):
            continue
        value = sealing.open_item(row["value"])
        text = sealing.open_text(row["search_text"])
        statement = (
            update(table)
            .where(
                *_same_key(table, row),
                value_text == row["value_text"],
                table.c.search_text == row["search_text"],
            )
            .values(value=sealing.seal_item(value), search_text=sealing.seal_text(text))
        )
        async with engine.begin() as connection:
            updated = (await connection.execute(statement)).rowcount
        resealed += updated
        changed += 1 - updated
    return ResealedBatch(len(rows), resealed, changed, _cursor(table, rows, limit))
