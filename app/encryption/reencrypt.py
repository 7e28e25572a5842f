"""`session-state reencrypt`: every stored value moved to the current
encryption key (the first of SESSION_STATE_ENCRYPTION_KEYS), plaintext
values sealed, so that an older key can then be removed.

Each content table is walked in primary-key order, a batch at a time, each
batch one short transaction. A row is written only if its columns are still
what was read (compare and swap, in the UPDATE's WHERE): an append or a
state write that came in meanwhile is never overwritten; the row is read
again and retried, and one still changing after a few tries is left for
the next run (counted as `busy`). The walk is idempotent: a run stopped
anywhere resumes by running again, finding the rows already moved and
passing them by (a read, no write). Servers keep running throughout.

Each backend's SQL is `reencrypt_sql`; this module is the walk. LangGraph's
tables are walked by their own feature's (`app.langgraph.resealing`), with
the same guarantees."""

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ..core.audit import audit_event
from ..core.encryption import ValueCipher
from ..db.engine import WRITE_OPTION
from ..langgraph.resealing import RESEALED_TABLES, reseal_batch
from . import reencrypt_sql as sql
from .resealing import CONTENT_TABLES, ContentTable, Resealer, row_change

BATCH_ROWS = 500
# How often a row that changed under its write is read again and retried.
CHANGED_ROW_TRIES = 5

Progress = Callable[[str, int | None], Callable[[int], None]]


@dataclass
class TableCount:
    read: int = 0
    resealed: int = 0
    busy: int = 0


@dataclass
class Reencrypted:
    key_id: str
    tables: dict[str, TableCount] = field(default_factory=dict)

    @property
    def busy(self) -> int:
        return sum(count.busy for count in self.tables.values())


async def reencrypt(
    engine: AsyncEngine,
    cipher: ValueCipher,
    *,
    clear_keyword_index: bool,
    progress: Progress,
    batch_rows: int = BATCH_ROWS,
) -> Reencrypted:
    """Moves every table's rows to the current key; `clear_keyword_index`:
    a memory sealed here also loses its keyword index (it is kept only with
    SESSION_STATE_MEMORY_SEARCH_WHEN_ENCRYPTED=full)."""
    resealer = Resealer(cipher)
    done = Reencrypted(cipher.current_key_id)
    dialect = sql.Dialect(engine.dialect.name, clear_keyword_index)
    try:
        for table in CONTENT_TABLES:
            async with engine.connect() as connection:
                total = await sql.count_rows(connection, table)
            advance = progress(table.name, total)
            done.tables[table.name] = await _walk(
                engine, dialect, table, row_change(resealer, table), batch_rows, advance
            )
        for name in RESEALED_TABLES:
            done.tables[name] = await _walk_langgraph(
                engine, cipher, name, batch_rows, progress(name, None)
            )
        async with _writing(engine) as connection:
            await sql.finish(connection, dialect, unindexed=done.tables["memories"].resealed > 0)
        if not dialect.postgresql:
            async with engine.connect() as connection:
                await sql.checkpoint(connection)
    except BaseException as error:
        audit_event("reencrypt", type(error).__name__, key_id=done.key_id, **_counts(done))
        raise
    audit_event(
        "reencrypt", "ok" if not done.busy else "rows_busy", key_id=done.key_id, **_counts(done)
    )
    return done


@asynccontextmanager
async def _writing(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A write transaction (SQLite: BEGIN IMMEDIATE, as the stores' writers)."""
    async with engine.connect() as connection:
        await connection.execution_options(**{WRITE_OPTION: True})
        async with connection.begin():
            yield connection


def _counts(done: Reencrypted) -> dict[str, int]:
    counts = {}
    for name, count in done.tables.items():
        counts[f"{name}_read"] = count.read
        counts[f"{name}_resealed"] = count.resealed
        counts[f"{name}_busy"] = count.busy
    return counts


async def _walk_langgraph(
    engine: AsyncEngine,
    cipher: ValueCipher,
    table: str,
    batch_rows: int,
    advance: Callable[[int], None],
) -> TableCount:
    """One of LangGraph's tables, by its own walk (app.langgraph.resealing):
    a row a server wrote meanwhile is left as written and counted busy, for
    a next run to find under the current key or move."""
    count = TableCount()
    after: tuple[Any, ...] | None = None
    while True:
        batch = await reseal_batch(engine, cipher, table, after, batch_rows)
        count.read += batch.read
        count.resealed += batch.resealed
        count.busy += batch.changed
        advance(batch.read)
        if batch.after is None:
            return count
        after = batch.after


async def _walk(
    engine: AsyncEngine,
    dialect: "sql.Dialect",
    table: ContentTable,
    change: Callable[[dict[str, Any]], dict[str, str] | None],
    batch_rows: int,
    advance: Callable[[int], None],
) -> TableCount:
    count = TableCount()
    after: tuple[Any, ...] | None = None
    while True:
        async with engine.connect() as connection:
            rows = await sql.read_batch(connection, table, after, batch_rows)
        if not rows:
            return count
        after = tuple(rows[-1][key] for key in table.keys)
        count.read += len(rows)
        pending = rows
        for _ in range(CHANGED_ROW_TRIES):
            changes = [(row, new) for row in pending if (new := change(row)) is not None]
            if not changes:
                pending = []
                break
            async with _writing(engine) as connection:
                await sql.begin_write(connection, dialect)
                pending = await _write(connection, dialect, table, changes, count)
            if not pending:
                break
            async with engine.connect() as connection:
                pending = await sql.read_rows(connection, table, pending)
        count.busy += len(pending)
        advance(len(rows))


async def _write(
    connection: AsyncConnection,
    dialect: "sql.Dialect",
    table: ContentTable,
    changes: list[tuple[dict[str, Any], dict[str, str]]],
    count: TableCount,
) -> list[dict[str, Any]]:
    """Writes each row still as read; the rows that changed meanwhile."""
    changed = []
    for row, new in changes:
        if await sql.swap_row(connection, dialect, table, row, new):
            count.resealed += 1
        else:
            changed.append(row)
    return changed
