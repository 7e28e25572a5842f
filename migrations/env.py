"""Alembic environment: runs on a connection handed in by the service, or on
the URL of alembic.ini / SESSION_STATE_DATABASE_URL when run by the alembic CLI."""

import asyncio
import importlib
import sys

from alembic import context
from sqlalchemy.engine import Connection

# The server these scripts belong to: the installed package, or a checkout's
# source tree run by its folder name (`python -m app.cli migrate`, as
# bench.before_after runs an older checkout), whose own modules must be used,
# not the installed ones.
SERVER = "app" if "app.db.migrations" in sys.modules else "session_state"
Settings = importlib.import_module(f"{SERVER}.core.config").Settings
engine_for_url = importlib.import_module(f"{SERVER}.db.engine").engine_for_url
include_object = importlib.import_module(f"{SERVER}.db.migrations").include_object
metadata = importlib.import_module(f"{SERVER}.schema").metadata

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
