"""The statements of `reencrypt`'s walk, on either backend: a batch of rows
in primary-key order (their columns as text: JSON as the database prints
it), a row read again, and the compare-and-swap write of one row.

PostgreSQL keeps state as jsonb, SQLite as text: columns are read as text
on both, compared as text (jsonb prints one value one way), and written
back cast to their type. A memory sealed from plaintext loses its keyword
index unless it is kept (SESSION_STATE_MEMORY_SEARCH_WHEN_ENCRYPTED=full);
SQLite's FTS5 table follows `memories` only on insert and delete, so its
entry is deleted and inserted again by hand."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from ..core.encryption import is_sealed_text
from .resealing import ContentTable

# Integer primary-key columns; every other key column is text.
_INTEGER_KEYS = frozenset({"seq", "id@memories"})
_SEARCH_COLUMNS = ("search_words", "search_grams")


@dataclass(frozen=True)
class Dialect:
    name: str
    clear_keyword_index: bool

    @property
    def postgresql(self) -> bool:
        return self.name == "postgresql"


def _key_type(table: ContentTable, key: str) -> str:
    integer = key == "seq" or f"{key}@{table.name}" in _INTEGER_KEYS
    return "bigint" if integer else "text"


def _read_columns(table: ContentTable) -> str:
    # CAST to text is a no-op on text columns and prints jsonb as text.
    columns = [*table.keys, *(f"CAST({name} AS text) AS {name}" for name, _ in table.columns)]
    return ", ".join(columns)


def _key_match(table: ContentTable) -> str:
    return " AND ".join(f"{key} = CAST(:k_{key} AS {_key_type(table, key)})" for key in table.keys)


async def begin_write(connection: AsyncConnection, dialect: Dialect) -> None:
    """SQLite: the pages this connection frees are zeroed, so that the
    plaintext a row held does not stay in the file's free pages."""
    if not dialect.postgresql:
        await connection.exec_driver_sql("PRAGMA secure_delete = ON")


async def finish(connection: AsyncConnection, dialect: Dialect, *, unindexed: bool) -> None:
    """SQLite: the keyword index's segments merged (the entries deleted from
    it are then gone from the file, not only marked), and the WAL written
    back into the file and emptied. PostgreSQL keeps dead row versions until
    VACUUM (docs/operations.md)."""
    if dialect.postgresql:
        return
    await connection.exec_driver_sql("PRAGMA secure_delete = ON")
    if unindexed and dialect.clear_keyword_index:
        await connection.exec_driver_sql(
            "INSERT INTO memories_fts(memories_fts) VALUES ('optimize')"
        )


async def checkpoint(connection: AsyncConnection) -> None:
    """SQLite: the WAL written back into the file and emptied, outside any
    transaction (on the driver's connection, which the engine's BEGIN does
    not wrap)."""
    raw = await connection.get_raw_connection()
    driver = raw.driver_connection
    assert driver is not None
    await driver.execute("PRAGMA wal_checkpoint(TRUNCATE)")


async def count_rows(connection: AsyncConnection, table: ContentTable) -> int:
    result = await connection.execute(text(f"SELECT count(*) FROM {table.name}"))
    return int(result.scalar_one())


async def read_batch(
    connection: AsyncConnection,
    table: ContentTable,
    after: tuple[Any, ...] | None,
    limit: int,
) -> list[dict[str, Any]]:
    """At most `limit` rows after the key `after` (None: from the first)."""
    keys = ", ".join(table.keys)
    where = ""
    values: dict[str, Any] = {"limit": limit}
    if after is not None:
        bounds = ", ".join(f"CAST(:a_{key} AS {_key_type(table, key)})" for key in table.keys)
        where = f"WHERE ({keys}) > ({bounds})"
        values.update({f"a_{key}": value for key, value in zip(table.keys, after, strict=True)})
    statement = text(
        f"SELECT {_read_columns(table)} FROM {table.name} {where} ORDER BY {keys} LIMIT :limit"
    )
    result = await connection.execute(statement, values)
    return [dict(row) for row in result.mappings()]


async def read_rows(
    connection: AsyncConnection, table: ContentTable, rows: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """These rows as they are now (rows deleted meanwhile left out)."""
    statement = text(f"SELECT {_read_columns(table)} FROM {table.name} WHERE {_key_match(table)}")
    found = []
    for row in rows:
        result = await connection.execute(statement, {f"k_{key}": row[key] for key in table.keys})
        found += [dict(now) for now in result.mappings()]
    return found


async def swap_row(
    connection: AsyncConnection,
    dialect: Dialect,
    table: ContentTable,
    row: dict[str, Any],
    new: dict[str, str],
) -> bool:
    """Writes `new` into the row if its columns are still as read; whether it did."""
    values: dict[str, Any] = {f"k_{key}": row[key] for key in table.keys}
    settings, still = [], [_key_match(table)]
    for column, written in new.items():
        values[f"n_{column}"], values[f"o_{column}"] = written, row[column]
        kind = dict(table.columns)[column]
        if dialect.postgresql and kind != "text":
            settings.append(f"{column} = CAST(:n_{column} AS jsonb)")
        else:
            settings.append(f"{column} = :n_{column}")
        still.append(f"CAST({column} AS text) IS NOT DISTINCT FROM CAST(:o_{column} AS text)")
    if not dialect.postgresql:
        still = [condition.replace(" IS NOT DISTINCT FROM ", " IS ") for condition in still]
    unindex = (
        table.name == "memories" and dialect.clear_keyword_index and not is_sealed_text(row["text"])
    )
    if unindex:
        settings += [f"{column} = ''" for column in _SEARCH_COLUMNS]
        if not dialect.postgresql:
            await _drop_from_fts(connection, " AND ".join(still), values)
    result = await connection.execute(
        text(f"UPDATE {table.name} SET {', '.join(settings)} WHERE {' AND '.join(still)}"),
        values,
    )
    swapped: bool = result.rowcount == 1
    if unindex and swapped and not dialect.postgresql:
        await connection.execute(
            text(
                "INSERT INTO memories_fts(rowid, search_words, search_grams) VALUES (:k_id, '', '')"
            ),
            {"k_id": row["id"]},
        )
    return swapped


async def _drop_from_fts(connection: AsyncConnection, still: str, values: dict[str, Any]) -> None:
    await connection.execute(
        text(
            "INSERT INTO memories_fts(memories_fts, rowid, search_words, search_grams) "
            f"SELECT 'delete', id, search_words, search_grams FROM memories WHERE {still}"
        ),
        values,
    )
