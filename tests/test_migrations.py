"""One Alembic history for both dialects: reversible, and equal to the models."""

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.ext.asyncio import create_async_engine

from app.db import migrations
from app.db.migrations import include_object
from app.db.tables import SEARCH_INDEX_OBJECTS, metadata

TABLES = {"app_states", "user_states", "sessions", "events", "memories"}


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
            assert await connection.run_sync(_tables) == TABLES
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
