"""One Alembic history for both dialects: reversible, and equal to the models."""

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from google.adk.events import Event
from sqlalchemy import inspect, select
from sqlalchemy.ext.asyncio import create_async_engine

from session_state.core import json_codec
from session_state.core.config import Settings
from session_state.db import migrations
from session_state.db.migrations import include_object
from session_state.schema import metadata
from session_state.sessions.tables import (
    SEARCH_INDEX_OBJECTS,
    app_states,
    events,
    sessions,
)
from session_state.stores import open_store
from session_state.transfer.adk_event_shape import camel_case_event
from tests.adk_events import rich_events

TABLES = {
    "app_states",
    "user_states",
    "sessions",
    "events",
    "memories",
    "forgotten_memories",
    # LangGraph's checkpoints (0009).
    "lg_threads",
    "lg_checkpoints",
    "lg_channel_values",
    "lg_writes",
    # LangGraph's long-term store (0010).
    "lg_store_items",
    # Removals of events, for live streams (0013).
    "event_removals",
    # What left a user's sessions, for user streams (0015).
    "session_tombstones",
    # SQLite's highest change number of a deleted session (0018).
    "session_change_floor",
}


def _differences(connection):
    context = MigrationContext.configure(
        connection, opts={"compare_type": True, "include_object": include_object}
    )
    return compare_metadata(context, metadata)


def _tables(connection):
    return set(inspect(connection).get_table_names()) - {"alembic_version"} - SEARCH_INDEX_OBJECTS


async def _check_upgrade_downgrade_upgrade(url: str) -> None:
    engine = create_async_engine(url)
    try:
        await migrations.upgrade(engine)
        async with engine.connect() as connection:
            # SQLite's label rows (0016) are kept by triggers, not the models.
            sqlite_only = {"session_labels"} if url.startswith("sqlite") else set()
            assert await connection.run_sync(_tables) == TABLES | sqlite_only
            assert await connection.run_sync(_differences) == []
        assert await migrations.current_revision(engine) == migrations.head_revision()

        await migrations.downgrade(engine, "base")
        async with engine.connect() as connection:
            assert await connection.run_sync(_tables) == set()
        assert await migrations.current_revision(engine) is None

        await migrations.upgrade(engine)
        async with engine.connect() as connection:
            assert await connection.run_sync(_differences) == []
    finally:
        await engine.dispose()


async def test_postgresql_upgrade_downgrade_upgrade_matches_the_models(fresh_postgres_url):
    await _check_upgrade_downgrade_upgrade(fresh_postgres_url)


async def test_sqlite_upgrade_downgrade_upgrade_matches_the_models(tmp_path):
    await _check_upgrade_downgrade_upgrade(f"sqlite+aiosqlite:///{tmp_path / 'm.db'}")


async def test_sqlite_state_values_survive_the_move_to_text_columns(tmp_path):
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'v.db'}")
    try:
        await migrations.upgrade(engine, "0002")
        async with engine.begin() as connection:
            await connection.exec_driver_sql(
                "INSERT INTO app_states (app_name, key, value) VALUES "
                "('a', 'app:n', '1.5'), ('a', 'app:s', '\"x\"'), ('a', 'app:d', '{\"k\": [1]}')"
            )
        await migrations.upgrade(engine)
        async with engine.begin() as connection:
            await connection.execute(
                app_states.insert().values(app_name="a", key="app:f", value=1.0)
            )
            rows = (await connection.execute(select(app_states.c.key, app_states.c.value))).all()
    finally:
        await engine.dispose()
    values = dict(rows)
    assert values == {"app:n": 1.5, "app:s": "x", "app:d": {"k": [1]}, "app:f": 1.0}
    # Exactly a float, as written: TEXT has no numeric affinity.
    assert isinstance(values["app:f"], float)


async def _sizes_after_upgrade_from_0003(url: str) -> tuple[dict, dict]:
    engine = create_async_engine(url)
    try:
        await migrations.upgrade(engine, "0003")
        async with engine.begin() as connection:
            await connection.exec_driver_sql(
                "INSERT INTO app_states (app_name, key, value) VALUES ('a', 'n', '12'), "
                "('a', 'text', '\"hello\"')"
            )
            await connection.exec_driver_sql(
                "INSERT INTO sessions (app_name, user_id, id, state, revision, create_time, "
                "update_time) VALUES ('a', 'u', 's', '{\"k\":1}', 0, 0, 0)"
            )
        await migrations.upgrade(engine)
        async with engine.connect() as connection:
            keys = dict(
                (await connection.exec_driver_sql("SELECT key, size FROM app_states")).all()
            )
            sessions = dict(
                (await connection.exec_driver_sql("SELECT id, state_bytes FROM sessions")).all()
            )
    finally:
        await engine.dispose()
    return keys, sessions


async def test_state_sizes_are_measured_for_existing_rows(tmp_path, fresh_postgres_url):
    # Key bytes + value JSON bytes + 4; a session's state as the database prints it.
    keys, sessions = await _sizes_after_upgrade_from_0003(
        f"sqlite+aiosqlite:///{tmp_path / 's.db'}"
    )
    assert keys == {"n": 1 + 2 + 4, "text": 4 + 7 + 4}
    assert sessions == {"s": len('{"k":1}')}
    keys, sessions = await _sizes_after_upgrade_from_0003(fresh_postgres_url)
    assert keys == {"n": 1 + 2 + 4, "text": 4 + 7 + 4}
    assert sessions == {"s": len('{"k": 1}')}


async def _memories_across_0006(url: str) -> tuple[list[str], list[int]]:
    """Memories stored at 0005, searched after the upgrade to 0006 and on to
    the latest; then the ids 0005's own index finds after the downgrade (one
    row added since)."""
    engine = create_async_engine(url)
    try:
        await migrations.upgrade(engine, "0005")
        async with engine.begin() as connection:
            await connection.exec_driver_sql(
                "INSERT INTO memories (id, app_name, user_id, session_id, event_id, author, "
                "timestamp, text) VALUES "
                "(1, 'a', 'u', 's', 'e1', 'user', 1, '私の名前は太郎です'), "
                "(2, 'a', 'u', 's', 'e2', 'user', 2, 'Меня зовут ИВАН'), "
                "(3, 'a', 'u', 's', 'e3', 'user', 3, 'I use Python daily')"
            )
        await migrations.upgrade(engine)
        # Searched as the service searches, through the store of the backend.
        store = await open_store(Settings(database_url=url))
        try:
            found = [
                record.text
                for question in ("太郎", "иван", "Python", "thon", "猫")
                for record, _share in await store.search_memories(
                    "a", "u", question, limit=10, budget=10_000
                )
            ]
        finally:
            await store.close()
        await migrations.downgrade(engine, "0005")
        async with engine.begin() as connection:
            await connection.exec_driver_sql(
                "INSERT INTO memories (id, app_name, user_id, session_id, event_id, author, "
                "timestamp, text) VALUES (4, 'a', 'u', 's', 'e4', 'user', 4, 'Python again')"
            )
            old_search = (
                "SELECT id FROM memories WHERE search_vector @@ to_tsquery('english', 'python')"
                if connection.dialect.name == "postgresql"
                else "SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'python'"
            )
            ids = sorted(id_ for (id_,) in (await connection.exec_driver_sql(old_search)).all())
    finally:
        await engine.dispose()
    return found, ids


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_memories_stored_before_0006_are_found_after_it_and_after_its_downgrade(
    backend, tmp_path, request
):
    url = (
        f"sqlite+aiosqlite:///{tmp_path / 'f.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("fresh_postgres_url")
    )
    found, ids = await _memories_across_0006(url)
    assert found == ["私の名前は太郎です", "Меня зовут ИВАН", "I use Python daily"]
    assert ids == [3, 4]


async def test_sqlite_full_text_triggers_survive_every_downgrade(tmp_path):
    """A downgrade that rebuilt `memories` (a batch operation) would drop the
    triggers keeping its full-text index in step: search would miss new rows."""
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 't.db'}")
    try:
        await migrations.upgrade(engine)
        for target in reversed(migrations.revisions()[1:-1]):
            await migrations.downgrade(engine, target)
            async with engine.connect() as connection:
                triggers = await connection.exec_driver_sql(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' "
                    "AND tbl_name = 'memories'"
                )
                assert triggers.scalar() == 2, f"triggers lost at {target}"
    finally:
        await engine.dispose()


async def test_sqlite_label_rows_triggers_are_there_at_the_head(tmp_path):
    """A later migration that rebuilt `sessions` (a batch operation) would
    drop the triggers keeping session_labels in step (0016): filtered lists
    would then miss new labels."""
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'l.db'}")
    try:
        await migrations.upgrade(engine)
        async with engine.connect() as connection:
            triggers = await connection.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'sessions'"
            )
            assert {row[0] for row in triggers} == {
                "session_labels_insert",
                "session_labels_update",
                "session_labels_delete",
            }
    finally:
        await engine.dispose()


def _old_import_adk_document(event, seq: int) -> dict:
    """An event as import-adk stored it before 0008: ADK's event_data (its
    field names) with the id, invocation id and timestamp of its row."""
    data = event.model_dump(mode="json", exclude_none=True)
    return {
        **data,
        "id": f"{data['id']}-{seq}",
        "invocation_id": event.invocation_id,
        "timestamp": event.timestamp,
    }


async def _events_across_0008(url: str, documents: list[dict]) -> tuple[list[str], list[str]]:
    """The events' data after an upgrade from 0007 to the latest, then after
    a downgrade to 0007 and a second upgrade."""
    engine = create_async_engine(url)
    try:
        await migrations.upgrade(engine, "0007")
        async with engine.begin() as connection:
            await connection.execute(
                sessions.insert().values(
                    app_name="a",
                    user_id="u",
                    id="s",
                    state={},
                    revision=len(documents),
                    create_time=1,
                    update_time=1,
                )
            )
            await connection.execute(
                events.insert(),
                [
                    {
                        "app_name": "a",
                        "user_id": "u",
                        "session_id": "s",
                        "seq": seq,
                        "id": document.get("id") or f"e{seq}",
                        "invocation_id": "",
                        "author": "x",
                        "timestamp": 1.0,
                        "data": json_codec.dumps_text(document),
                    }
                    for seq, document in enumerate(documents, start=1)
                ],
            )
        read = select(events.c.data).order_by(events.c.seq)
        await migrations.upgrade(engine)
        async with engine.connect() as connection:
            upgraded = list((await connection.execute(read)).scalars())
        await migrations.downgrade(engine, "0007")
        await migrations.upgrade(engine)
        async with engine.connect() as connection:
            again = list((await connection.execute(read)).scalars())
    finally:
        await engine.dispose()
    return upgraded, again


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_events_import_adk_stored_in_adk_field_names_are_rewritten_in_json_names(
    backend, tmp_path, request
):
    url = (
        f"sqlite+aiosqlite:///{tmp_path / 'e.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("fresh_postgres_url")
    )
    adk_events = rich_events() * 700
    old = [_old_import_adk_document(event, seq) for seq, event in enumerate(adk_events)]
    # Not in ADK's storage shape: left byte for byte.
    others = [
        {**camel_case_event(old[1]), "id": "appended-by-an-adk-client"},
        {"author": "curl", "invocation_id": "i-1", "my_field": 1},
        {"author": "x", "text": 'says "invocation_id" and state_delta'},
    ]
    # The old events span several of the migration's batches, others between them.
    documents = [*old[:1000], *others, *old[1000:]]
    upgraded, again = await _events_across_0008(url, documents)

    assert len(upgraded) == len(documents)
    assert upgraded[1000:1003] == [json_codec.dumps_text(other) for other in others]
    rewritten = upgraded[:1000] + upgraded[1003:]
    for data, event, stored in zip(rewritten, adk_events, old, strict=True):
        document = json_codec.loads(data)
        # What ADK clients send of the same event, in the stored order of keys.
        assert document == {
            **event.model_dump(mode="json", by_alias=True, exclude_none=True),
            "id": stored["id"],
        }
        # Byte for byte what import-adk now stores: a later import skips it.
        assert data == json_codec.dumps_text(camel_case_event(stored))
        assert Event.model_validate(document) == event.model_copy(update={"id": stored["id"]})
    assert again == upgraded
