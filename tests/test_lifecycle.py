"""What is asked of every feature at once (app.lifecycle), on both backends
with real rows of every feature written over HTTP: every table a migrated
database holds is accounted for by the registry; `session-state sweep` frees
every feature's expired rows and keeps every live one; an erasure that fails
part-way leaves everything in place, and a retry finishes it; an export holds
every table the registry says it exports."""

import asyncio
import base64
import io
import json
import os
import subprocess
import sys
import time
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from session_state.admin.sql_store import opened_operator_store
from session_state.core.config import Settings
from session_state.lifecycle.tables import TABLES, unaccounted
from session_state.main import create_app
from session_state.transfer.exporter import Exporter

from .conftest import Clock

APP = "lifecycle"
# Tables whose rows name no user a test can count by (SQLite's full-text
# index of memories, kept by triggers; one global counter; the schema's).
_UNCOUNTED = {"memories_fts", "session_change_floor", "alembic_version"}
_THREAD_TABLES = {"lg_checkpoints", "lg_channel_values", "lg_writes"}


def _b64(value: Any) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


async def _seed(client: httpx.AsyncClient, user: str, ttl: float | None = None) -> None:
    """A row of every feature for the user: sessions with events, labels,
    state of every scope, a removal of events and a tombstone; memories and
    a forgotten id; a LangGraph thread with a checkpoint, values and writes;
    a store item. Each expires after `ttl` seconds when given."""
    base = f"/apps/{APP}/users/{user}"
    expiry = {} if ttl is None else {"ttlSeconds": ttl}
    for session in ("s1", "s2"):
        body = {
            "sessionId": session,
            "state": {"user:plan": "gold", "app:tz": "UTC", "step": 0},
            "labels": {"team": "a"},
            **expiry,
        }
        created = await client.post(f"{base}/sessions", json=body)
        assert created.status_code == 201, created.text
        for index in range(3):
            event = {
                "author": "planner",
                "content": {"role": "model", "parts": [{"text": f"flight {user} {index}"}]},
            }
            appended = await client.post(f"{base}/sessions/{session}/events", json=event)
            assert appended.status_code == 201, appended.text
    removed = await client.delete(f"{base}/sessions/s2/events", params={"last": 1})
    assert removed.status_code in (200, 204), removed.text
    ingested = await client.post(f"{base}/memory", json={"sessionId": "s1"})
    assert ingested.status_code == 200, ingested.text
    found = await client.get(f"{base}/memory", params={"query": "flight"})
    forgotten = found.json()["memories"][0]["id"]
    assert (await client.delete(f"{base}/memory/{forgotten}")).status_code == 204
    assert (await client.post(f"{base}/sessions", json={"sessionId": "gone"})).status_code == 201
    assert (await client.delete(f"{base}/sessions/gone")).status_code == 204
    thread = f"/apps/{APP}/threads/{user}-t"
    checkpoint = {
        "checkpoint": {"type": "json", "data": _b64({"v": 4})},
        "metadata": {"source": "loop", "step": 0},
        "channelVersions": {"a": "1"},
        "newValues": [{"channel": "a", "version": "1", "type": "json", "data": _b64(1)}],
        "userId": user,
        **expiry,
    }
    put = await client.put(f"{thread}/checkpoints/c1", json=checkpoint)
    assert put.status_code in (200, 201, 204), put.text
    writes = {
        "writes": [{"taskId": "t", "idx": 0, "channel": "a", "type": "json", "data": _b64(2)}]
    }
    put = await client.post(f"{thread}/checkpoints/c1/writes", json=writes)
    assert put.status_code in (200, 201, 204), put.text
    item = {"op": "put", "namespace": [user, "notes"], "key": "k", "value": {"v": 1}}
    if ttl is not None:
        item["ttlSeconds"] = ttl
    stored = await client.post(f"/apps/{APP}/store/batch", json={"ops": [item]})
    assert stored.status_code == 200, stored.text


async def _table_names(database_url: str) -> set[str]:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            if database_url.startswith("sqlite"):
                query = "SELECT name FROM sqlite_master WHERE type = 'table'"
            else:
                query = (
                    "SELECT table_name FROM information_schema.tables"
                    " WHERE table_schema = current_schema()"
                )
            return {row[0] for row in await connection.execute(text(query))}
    finally:
        await engine.dispose()


async def _rows_by_user(database_url: str, users: list[str]) -> dict[tuple[str, str], int]:
    """(table, user): the user's rows in every table the registry lists
    that holds users' rows (a LangGraph thread's tables by its thread)."""
    present = await _table_names(database_url)
    engine = create_async_engine(database_url)
    counts = {}
    try:
        async with engine.connect() as connection:
            for table in TABLES:
                if table.name in _UNCOUNTED or table.name not in present:
                    continue
                for user in users:
                    if table.name in _THREAD_TABLES:
                        where, value = "thread_id = :owner", f"{user}-t"
                    elif table.name == "app_states":
                        where, value = ":owner = :owner", user
                    else:
                        where, value = "user_id = :owner", user
                    query = f"SELECT count(*) FROM {table.name} WHERE app_name = :app AND {where}"
                    found = await connection.execute(text(query), {"app": APP, "owner": value})
                    counts[(table.name, user)] = int(found.scalar_one())
    finally:
        await engine.dispose()
    return counts


async def test_every_table_of_the_schema_is_accounted_for(database_url: str):
    tables = await _table_names(database_url)

    assert unaccounted(tables) == set(), "a table no sweep, erasure or export accounts for"
    # And the registry names no table that is not there (SQLite's index aside).
    listed = {table.name for table in TABLES}
    only_sqlite = {table.name for table in TABLES if table.sqlite_only}
    assert listed - tables == (set() if database_url.startswith("sqlite") else only_sqlite)
    for table in TABLES:
        if table.sweep == "never" or table.export != "exported":
            assert table.why, f"{table.name}: say why it is never swept or not exported"


def test_the_sweep_command_frees_every_features_expired_rows_and_keeps_the_rest(
    database_url: str,
):
    settings = Settings(database_url=database_url, sweep_interval_seconds=0)

    async def seed() -> None:
        # Written an hour ago: a minute to live is over, two hours are not.
        app = create_app(settings, clock=Clock(time.time() - 3600))
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
        ):
            await _seed(client, "expired", ttl=60)
            await _seed(client, "later", ttl=7200)
            await _seed(client, "forever")

    asyncio.run(seed())
    users = ["expired", "later", "forever"]
    before = asyncio.run(_rows_by_user(database_url, users))
    # Every feature's table holds rows of each user, or the test proves nothing.
    assert [key for key, rows in before.items() if rows == 0] == []

    environment = {**os.environ, "SESSION_STATE_EXPIRED_SESSION_MEMORIES": "delete"}
    command = [
        sys.executable,
        "-m",
        "session_state.cli",
        "sweep",
        "--database-url",
        database_url,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)

    after = asyncio.run(_rows_by_user(database_url, users))
    swept = {
        table.name for table in TABLES if table.sweep in ("expired", "with session", "with thread")
    }
    for (table, user), rows in after.items():
        if user == "expired" and table in swept:
            assert rows == 0, f"{table}: the expired rows are still there"
        elif user == "expired" and table == "session_tombstones":
            assert rows == before[(table, user)] + 2, "a tombstone per swept session"
        else:
            assert rows == before[(table, user)], f"{table}: {user}'s rows were swept"
    expired = [before[(table, "expired")] for table in ("sessions", "events", "memories")]
    assert [report["sessions"], report["events"], report["memories"]] == expired
    assert (report["threads"], report["storeItems"], report["expiredLeft"]) == (1, 1, 0)


_FAULT_SQLITE = """
CREATE TRIGGER erasure_fault BEFORE DELETE ON lg_store_items
BEGIN SELECT no_such_function(); END
"""
_FAULT_POSTGRESQL = (
    """
CREATE FUNCTION erasure_fault() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '53000'; END $$
""",
    """
CREATE TRIGGER erasure_fault BEFORE DELETE ON lg_store_items
FOR EACH ROW EXECUTE FUNCTION erasure_fault()
""",
)


async def _set_fault(database_url: str, installed: bool) -> None:
    """A fault of the database itself on the erasure's last table: deleting
    a store item fails (SQLite: an unknown function, as a broken database
    answers; PostgreSQL: insufficient resources), so all before it ran."""
    if database_url.startswith("sqlite"):
        engine = create_async_engine(database_url)
        try:
            async with engine.begin() as connection:
                if installed:
                    await connection.execute(text(_FAULT_SQLITE))
                else:
                    await connection.execute(text("DROP TRIGGER erasure_fault"))
        finally:
            await engine.dispose()
        return
    connection = await asyncpg.connect(database_url.replace("+asyncpg", ""))
    try:
        if installed:
            for statement in _FAULT_POSTGRESQL:
                await connection.execute(statement)
        else:
            await connection.execute("DROP TRIGGER erasure_fault ON lg_store_items")
            await connection.execute("DROP FUNCTION erasure_fault")
    finally:
        await connection.close()


@pytest.mark.parametrize("scope", ["user", "app"])
async def test_an_erasure_failing_at_its_last_table_leaves_everything_and_a_retry_finishes_it(
    database_url: str, client: httpx.AsyncClient, scope: str
):
    await _seed(client, "ada")
    await _seed(client, "bob")
    before = await _rows_by_user(database_url, ["ada", "bob"])
    assert [key for key, rows in before.items() if rows == 0] == []
    path = f"/apps/{APP}/users/ada" if scope == "user" else f"/apps/{APP}?confirm={APP}"
    erased = {"ada", "bob"} if scope == "app" else {"ada"}

    await _set_fault(database_url, installed=True)
    failed = await client.delete(path)

    assert failed.status_code == 503, failed.text
    assert failed.headers["content-type"] == "application/problem+json"
    # Nothing half-erased: every row of every feature is still there, and
    # readers see it.
    assert await _rows_by_user(database_url, ["ada", "bob"]) == before
    listed = await client.get(f"/apps/{APP}/users/ada/sessions")
    assert len(listed.json()["sessions"]) == 2

    await _set_fault(database_url, installed=False)
    assert (await client.delete(path)).status_code == 204

    after = await _rows_by_user(database_url, ["ada", "bob"])
    kept_by_user_erasure = {table.name for table in TABLES if table.erase == "app"}
    for (table, user), rows in after.items():
        if table == "session_tombstones" and user in erased:
            assert rows == 1, "the erasure's one marker for live streams"
        elif scope == "user" and table in kept_by_user_erasure:
            assert rows == before[(table, user)], f"{table}: a user's erasure took it"
        elif user in erased:
            assert rows == 0, f"{table}: {user}'s rows survived the erasure"
        else:
            assert rows == before[(table, user)], f"{table}: {user}'s rows were erased"
    assert (await client.get(f"/apps/{APP}/users/ada/sessions")).json()["sessions"] == []


# Where each table the registry says is exported is found in a dump: a line
# kind, or a list in a thread's line.
_DUMPED_AS = {
    "sessions": ("session", None),
    "events": ("event", None),
    "user_states": ("user", None),
    "app_states": ("app", None),
    "memories": ("memory", None),
    "forgotten_memories": ("forgotten", None),
    "lg_threads": ("thread", None),
    "lg_checkpoints": ("thread", "checkpoints"),
    "lg_channel_values": ("thread", "channelValues"),
    "lg_writes": ("thread", "writes"),
    "lg_store_items": ("storeItem", None),
}


async def test_an_export_holds_every_table_the_registry_says_it_exports(
    database_url: str, client: httpx.AsyncClient
):
    await _seed(client, "ada")
    exported = {table.name for table in TABLES if table.export == "exported"}
    assert exported == set(_DUMPED_AS), "say where a newly exported table is in a dump"

    out = io.StringIO()
    settings = Settings(database_url=database_url)
    async with opened_operator_store(settings, create=False) as store:
        await Exporter(store, out, APP, None, now=time.time()).run()

    lines = [json.loads(line) for line in out.getvalue().splitlines()[1:]]
    for table, (kind, inside) in _DUMPED_AS.items():
        found = [line for line in lines if line.get("kind") == kind]
        if inside is not None:
            found = [row for line in found for row in line[inside]]
        assert found, f"{table}: exported, says the registry, but not in the dump"
