"""Alembic environment: runs on a connection handed in by the service, or on
the URL of alembic.ini / SESSION_STATE_DATABASE_URL when run by the alembic CLI."""

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from session_state.config import Settings
from session_state.db.engine import engine_for_url
from session_state.db.migrations import include_object
from session_state.db.tables import metadata

config = context.config


def run_on(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        include_object=include_object,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def run_from_url() -> None:
    url = config.get_main_option("sqlalchemy.url") or Settings().database_url
    engine = engine_for_url(url)
    async with engine.begin() as connection:
        await connection.run_sync(run_on)
    await engine.dispose()


connection = config.attributes.get("connection")
if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported")
if connection is not None:
    run_on(connection)
else:
    asyncio.run(run_from_url())
