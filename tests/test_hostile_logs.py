"""Logs never carry users' data: when the database refuses a write, the 500
is logged with exception types and frames, never with statement parameters
or driver messages (which hold state values, memory text and queries). Both
drivers: SQLAlchemy's path and asyncpg's append path."""

import logging

import asyncpg
import pytest

from tests.conftest import run_blocking
from tests.hostile import App, assert_problem

SECRET = "s3cret-value-7f0d"
app = App("logs")


def _sqlite_file(database_url: str) -> str:
    return database_url.split("///", 1)[1]


def _refuse_writes(database_url: str, table: str) -> None:
    """A trigger that makes the database refuse every insert into `table`."""
    if database_url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(_sqlite_file(database_url)) as connection:
            connection.execute(
                f"CREATE TRIGGER refuse_{table} BEFORE INSERT ON {table} "
                "BEGIN SELECT RAISE(ABORT, 'refused by test'); END"
            )
        return

    async def install() -> None:
        connection = await asyncpg.connect(database_url.replace("+asyncpg", ""))
        try:
            await connection.execute(
                f"""
                CREATE OR REPLACE FUNCTION refuse_{table}() RETURNS trigger AS $$
                BEGIN RAISE EXCEPTION 'refused by test: %', row_to_json(NEW); END $$
                LANGUAGE plpgsql;
                CREATE TRIGGER refuse_{table} BEFORE INSERT ON {table}
                FOR EACH ROW EXECUTE FUNCTION refuse_{table}();
                """
            )
        finally:
            await connection.close()

    run_blocking(install())


def _allow_writes(database_url: str, table: str) -> None:
    if database_url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(_sqlite_file(database_url)) as connection:
            connection.execute(f"DROP TRIGGER IF EXISTS refuse_{table}")
        return

    async def drop() -> None:
        connection = await asyncpg.connect(database_url.replace("+asyncpg", ""))
        try:
            await connection.execute(f"DROP TRIGGER IF EXISTS refuse_{table} ON {table}")
        finally:
            await connection.close()

    run_blocking(drop())


@pytest.fixture
def refused_user_state(database_url, client):
    # `client` first: the SQLite file and its schema exist once it has started.
    _refuse_writes(database_url, "user_states")
    yield
    _allow_writes(database_url, "user_states")


async def test_a_refused_write_is_logged_without_its_parameters(client, refused_user_state, caplog):
    # As `serve --log-level debug` logs: ours at debug, drivers at warning
    # (aiosqlite logs every statement with its parameters at debug).
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="session_state")
    created = await client.post(app.sessions, json={"sessionId": "s", "state": {"user:k": SECRET}})
    assert_problem(created, 500, "internal_error")
    assert (await client.post(app.sessions, json={"sessionId": "t"})).status_code == 201
    appended = await client.post(
        f"{app.sessions}/t/events",
        json={"author": SECRET, "actions": {"stateDelta": {"user:k": SECRET}}},
    )
    assert_problem(appended, 500, "internal_error")
    logged = "\n".join(record.getMessage() + repr(record.__dict__) for record in caplog.records)
    assert "unexpected error" in logged
    assert SECRET not in logged
    assert SECRET not in created.text + appended.text
