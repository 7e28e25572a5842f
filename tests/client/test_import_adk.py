"""`session-state import-adk`: sessions written by ADK's own
DatabaseSessionService (on SQLite and on PostgreSQL) read back through
HttpSessionService exactly as ADK's service reads them, every session, its
events and merged state; the events are stored exactly as the same events
appended through HttpSessionService (camelCase JSON names); a second run
changes nothing; an unreadable source is one clear line and a non-zero exit."""

import asyncio
import json
import os
import sqlite3
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest
from google.adk.events import Event, EventActions
from google.adk.sessions import DatabaseSessionService
from google.genai import types
from sqlalchemy.engine import make_url

from session_state_client.adk import HttpSessionService
from tests.adk_events import rich_events
from tests.cli_runner import run_cli
from tests.conftest import (
    ServerProcess,
    _async_url,
    create_postgres_database,
    drop_postgres_database,
    migrate,
)

APPS = ("travel", "shop")
USERS = ("ada", "bob")


def import_adk(source: str, target: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "import-adk", "--from", source, *arguments, env={"SESSION_STATE_DATABASE_URL": target}
    )


async def write_with_adk(url: str) -> None:
    """What an ADK app leaves behind: several apps and users, deltas in every
    scope (temp: included), tool calls, a session without events."""
    service = DatabaseSessionService(db_url=url)
    try:
        for app in APPS:
            for user in USERS:
                for number in range(3):
                    session = await service.create_session(
                        app_name=app,
                        user_id=user,
                        session_id=f"s{number}",
                        state={"k": number, "user:name": user, "app:mode": app, "temp:t": 1},
                    )
                    for step in range(number * 3):
                        call = types.Part(
                            function_call=types.FunctionCall(name="book", args={"step": step})
                        )
                        text = types.Part(text=f"step {step} of {app}/{user} ☀")
                        event = Event(
                            author="planner" if step % 2 else "user",
                            invocation_id=f"inv-{step // 2}",
                            content=types.Content(role="model", parts=[text, call]),
                            actions=EventActions(
                                state_delta={
                                    "step": step,
                                    "ratio": step / 3,
                                    "user:last": step,
                                    "app:total": step * 10,
                                    "temp:scratch": "gone",
                                }
                            ),
                        )
                        await service.append_event(session, event)
    finally:
        await service.close()


async def assert_same_through_both_apis(adk_url: str, base_url: str) -> None:
    adk = DatabaseSessionService(db_url=adk_url)
    ours = HttpSessionService(base_url=base_url)
    try:
        for app in APPS:
            for user in USERS:
                theirs = await adk.list_sessions(app_name=app, user_id=user)
                mine = await ours.list_sessions(app_name=app, user_id=user)
                assert sorted(s.id for s in mine.sessions) == sorted(s.id for s in theirs.sessions)
                for listed in theirs.sessions:
                    expected = await adk.get_session(
                        app_name=app, user_id=user, session_id=listed.id
                    )
                    got = await ours.get_session(app_name=app, user_id=user, session_id=listed.id)
                    assert expected is not None and got is not None
                    assert got.events == expected.events
                    assert got.state == expected.state
                    assert got.last_update_time == expected.last_update_time
    finally:
        await adk.close()
        await ours.close()


def assert_served_as_adk_serves(adk_url: str, target: str) -> None:
    """A server on the imported database answers as ADK's own service does."""
    server = ServerProcess(target).start()
    try:
        asyncio.run(assert_same_through_both_apis(adk_url, server.base_url))
    finally:
        server.stop()


@pytest.mark.parametrize("direction", ["sqlite-to-postgresql", "postgresql-to-sqlite"])
def test_imported_sessions_read_back_as_adk_reads_them(direction, tmp_path, postgres_available):
    if not postgres_available:
        pytest.skip("PostgreSQL not reachable")
    database = create_postgres_database("adk_import")
    postgresql = _async_url(database)
    sqlite = f"sqlite+aiosqlite:///{tmp_path / 'side.db'}"
    try:
        if direction == "sqlite-to-postgresql":
            adk_url, target = sqlite, postgresql
            migrate(target)
        else:
            adk_url, target = postgresql, sqlite
        asyncio.run(write_with_adk(adk_url))

        first = import_adk(adk_url, target)
        assert first.returncode == 0, first.stderr
        summary = json.loads(first.stdout)["imported"]
        assert summary["sessions"] == {"added": 12, "skipped": 0, "conflicts": 0}
        assert summary["events"]["added"] == 2 * 2 * (0 + 3 + 6)

        again = import_adk(adk_url, target)
        assert again.returncode == 0, again.stderr
        summary = json.loads(again.stdout)["imported"]
        assert summary["sessions"] == {"added": 0, "skipped": 12, "conflicts": 0}
        assert summary["stateKeys"]["added"] == 0

        assert_served_as_adk_serves(adk_url, target)
    finally:
        drop_postgres_database(database)


async def write_rich_session_with_adk(url: str, app: str, events: list[Event]) -> None:
    """One session holding events of every shape."""
    service = DatabaseSessionService(db_url=url)
    try:
        session = await service.create_session(
            app_name=app, user_id="ada", session_id="imported", state={"k": 1}
        )
        for event in events:
            await service.append_event(session, event.model_copy(deep=True))
        stored = await service.get_session(app_name=app, user_id="ada", session_id="imported")
        assert stored is not None and [e.id for e in stored.events] == [e.id for e in events]
    finally:
        await service.close()


async def append_through_the_api(base_url: str, app: str, events: list[Event]) -> list[Event]:
    """The same events appended by HttpSessionService to a session of their
    own; the imported session as HttpSessionService reads it."""
    service = HttpSessionService(base_url=base_url)
    try:
        session = await service.create_session(
            app_name=app, user_id="ada", session_id="appended", state={"k": 1}
        )
        for event in events:
            await service.append_event(session, event.model_copy(deep=True))
        imported = await service.get_session(app_name=app, user_id="ada", session_id="imported")
        assert imported is not None
        return imported.events
    finally:
        await service.close()


def stored_events(base_url: str, app: str, session_id: str) -> list[dict]:
    """The events as a REST reader sees them."""
    response = httpx.get(
        f"{base_url}/apps/{app}/users/ada/sessions/{session_id}/events",
        params={"page_size": 100},
    )
    response.raise_for_status()
    return response.json()["events"]


def test_imported_events_are_stored_as_events_appended_over_the_api(server, tmp_path, request):
    # From the other backend: ADK's JSONB on PostgreSQL keeps no key order.
    if server.database_url.startswith("sqlite"):
        source = create_postgres_database("adk_shape")
        adk_url = _async_url(source)
    else:
        source = None
        adk_url = f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}"
    app = f"shape-{uuid.uuid4().hex[:8]}"
    events = rich_events()
    try:
        asyncio.run(write_rich_session_with_adk(adk_url, app, events))
        done = import_adk(adk_url, server.database_url, "--app", app)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["imported"]["events"]["added"] == len(events)
    finally:
        if source is not None:
            drop_postgres_database(source)

    read_back = asyncio.run(append_through_the_api(server.base_url, app, events))
    imported = stored_events(server.base_url, app, "imported")
    appended = stored_events(server.base_url, app, "appended")
    assert [event["id"] for event in appended] == [event.id for event in events]
    assert imported == appended
    assert all("invocationId" in event and "invocation_id" not in event for event in imported)
    # As appended. (ADK's own service reads an auth scheme back with its stored
    # "type_" as an extra key too: FastAPI's OpenAPI models take no field names.)
    assert read_back == events


MYSQL_ADMIN_URL = os.environ.get("SESSION_STATE_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306")


def _mysql(statement: str) -> None:
    import pymysql

    url = make_url(MYSQL_ADMIN_URL)
    connection = pymysql.connect(
        host=url.host, port=url.port or 3306, user=url.username, password=url.password or ""
    )
    try:
        connection.cursor().execute(statement)
    finally:
        connection.close()


def test_an_adk_database_on_mysql_is_read_too(tmp_path):
    pytest.importorskip("aiomysql", reason="reading MySQL needs aiomysql (the test extra has it)")
    name = f"adk_import_{uuid.uuid4().hex[:8]}"
    try:
        _mysql(f"CREATE DATABASE {name}")
    except Exception as error:  # any way of not reaching it
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no MySQL or MariaDB at {MYSQL_ADMIN_URL}: {error}")
    try:
        adk_url = f"{MYSQL_ADMIN_URL.replace('mysql://', 'mysql+aiomysql://')}/{name}"
        asyncio.run(write_with_adk(adk_url))
        target = f"sqlite+aiosqlite:///{tmp_path / 'ours.db'}"
        done = import_adk(adk_url, target)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["imported"]["sessions"]["added"] == 12
        assert_served_as_adk_serves(adk_url, target)
    finally:
        _mysql(f"DROP DATABASE IF EXISTS {name}")


def test_one_app_only(tmp_path):
    adk_url = f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}"
    asyncio.run(write_with_adk(adk_url))
    done = import_adk(adk_url, f"sqlite+aiosqlite:///{tmp_path / 'ours.db'}", "--app", "shop")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["imported"]["sessions"]["added"] == 6


def test_pickled_schema_zero_is_refused_with_what_to_do(tmp_path):
    legacy = tmp_path / "legacy.db"
    with sqlite3.connect(legacy) as connection:
        connection.execute("CREATE TABLE sessions (app_name TEXT, user_id TEXT, id TEXT)")
        connection.execute("CREATE TABLE events (id TEXT, actions BLOB, content TEXT)")
    done = import_adk(f"sqlite:///{legacy}", f"sqlite+aiosqlite:///{tmp_path / 'ours.db'}")
    assert done.returncode == 2
    assert "pickles" in done.stderr and "adk migrate session" in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("not a url", "--from: not a database URL"),
        ("oracle://x/y", "oracle databases are not read"),
        ("sqlite:////no/such/adk.db", "no SQLite database at /no/such/adk.db"),
        ("postgresql://postgres@127.0.0.1:1/x", "--from: cannot connect to the ADK database"),
    ],
)
def test_an_unreadable_source_is_one_line(source, message, tmp_path):
    done = import_adk(source, f"sqlite+aiosqlite:///{tmp_path / 'ours.db'}")
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_a_database_without_adk_tables_is_one_line(tmp_path):
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    Path(empty).touch()
    done = import_adk(f"sqlite:///{empty}", f"sqlite+aiosqlite:///{tmp_path / 'ours.db'}")
    assert done.returncode == 2 and "no ADK DatabaseSessionService tables" in done.stderr
