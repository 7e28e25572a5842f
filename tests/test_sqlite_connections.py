"""A SQLite connection opened while another process's writer holds the
database's write lock waits for it, as every write does, instead of failing
with "database is locked": a pooled connection is made when it is first
needed, which may be mid-write of another command (an import beside the
server, say)."""

import asyncio
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from session_state.core.config import Settings
from session_state.db.engine import SQLITE_BUSY_TIMEOUT_MS, WRITE_OPTION, create_engine
from session_state.db.sqlite_writer import SqliteWriter

JOURNAL_MODES = ["WAL", "DELETE"]


def _database_locked(path: Path, journal_mode: str) -> sqlite3.Connection:
    """The database, in WAL mode as the service leaves it or in the default
    rollback journal (a file restored or copied from elsewhere), with its
    write lock held by another connection until that one commits."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute(f"PRAGMA journal_mode={journal_mode}")
    holder.execute("CREATE TABLE t (v INTEGER)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1)")
    return holder


@pytest.mark.parametrize("journal_mode", JOURNAL_MODES)
async def test_a_pooled_connection_opened_during_another_write_waits_for_it(
    tmp_path: Path, journal_mode: str
):
    holder = _database_locked(tmp_path / "db.sqlite", journal_mode)
    engine = create_engine(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}"))
    try:

        async def write() -> None:
            async with engine.connect() as connection:
                await connection.execution_options(**{WRITE_OPTION: True})
                async with connection.begin():
                    await connection.execute(text("INSERT INTO t VALUES (2)"))

        writing = asyncio.create_task(write())
        await asyncio.sleep(0.3)
        assert not writing.done(), "the new connection did not wait for the lock"
        holder.execute("COMMIT")
        await asyncio.wait_for(writing, SQLITE_BUSY_TIMEOUT_MS / 1000)
        async with engine.connect() as connection:
            values = (await connection.execute(text("SELECT v FROM t ORDER BY v"))).scalars()
            assert list(values) == [1, 2]
    finally:
        holder.close()
        await engine.dispose()


@pytest.mark.parametrize("journal_mode", JOURNAL_MODES)
async def test_the_append_writer_opened_during_another_write_waits_for_it(
    tmp_path: Path, journal_mode: str
):
    holder = _database_locked(tmp_path / "db.sqlite", journal_mode)
    engine = create_engine(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}"))
    writer = SqliteWriter(engine)
    try:
        writing = asyncio.create_task(
            writer.write(lambda cursor: cursor.execute("INSERT INTO t VALUES (2)"))
        )
        await asyncio.sleep(0.3)
        assert not writing.done(), "the writer's connection did not wait for the lock"
        holder.execute("COMMIT")
        await asyncio.wait_for(writing, SQLITE_BUSY_TIMEOUT_MS / 1000)
        assert [row[0] for row in holder.execute("SELECT v FROM t ORDER BY v")] == [1, 2]
    finally:
        holder.close()
        await writer.close()
        await engine.dispose()


async def test_a_connection_switches_a_database_to_wal_when_no_one_writes(tmp_path: Path):
    path = tmp_path / "db.sqlite"
    sqlite3.connect(path, isolation_level=None).execute("CREATE TABLE t (v INTEGER)").close()
    engine = create_engine(Settings(database_url=f"sqlite+aiosqlite:///{path}"))
    try:
        async with engine.connect() as connection:
            mode = (await connection.execute(text("PRAGMA journal_mode"))).scalar_one()
        assert mode == "wal"
    finally:
        await engine.dispose()
