"""Creating the PostgreSQL database a URL names, for `migrate --create-database`."""

import asyncpg
from sqlalchemy.engine import make_url


async def create_database_if_missing(database_url: str) -> bool:
    """Creates the database when the server does not have it; True if it did.
    SQLite creates its file on first use: nothing to do there."""
    url = make_url(database_url)
    if url.get_backend_name() != "postgresql" or not url.database:
        return False
    # The maintenance database every PostgreSQL server has.
    admin_url = url.set(drivername="postgresql", database="postgres")
    connection = await asyncpg.connect(admin_url.render_as_string(hide_password=False))
    try:
        exists = await connection.fetchval(
            "SELECT 1 FROM pg_database WHERE datname = $1", url.database
        )
        if exists:
            return False
        name = url.database.replace('"', '""')
        await connection.execute(f'CREATE DATABASE "{name}"')
        return True
    finally:
        await connection.close()
