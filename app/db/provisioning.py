"""Creating the PostgreSQL database a URL names, for `migrate --create-database`."""

import asyncpg

from ..core.database_url import is_postgresql_url, parse_postgresql_url
from .postgresql_statement import Statement

_DATABASE_EXISTS = Statement.of("SELECT 1 FROM pg_database WHERE datname = :database")


async def create_database_if_missing(database_url: str) -> bool:
    """Creates the database when the server does not have it; True if it did.
    SQLite creates its file on first use: nothing to do there."""
    if not is_postgresql_url(database_url):
        return False
    address = parse_postgresql_url(database_url)
    database = address.url.database
    if not database:
        return False
    # The maintenance database every PostgreSQL server has, on the server
    # the URL's target_session_attrs choose (a primary, for read-write).
    # No statement cache: nothing outlives the statement, as through PgBouncer.
    connection = await asyncpg.connect(
        address.asyncpg_dsn(database="postgres"), statement_cache_size=0
    )
    try:
        exists = await connection.fetchval(
            _DATABASE_EXISTS.text, *_DATABASE_EXISTS.arguments({"database": database})
        )
        if exists:
            return False
        name = database.replace('"', '""')
        await connection.execute(f'CREATE DATABASE "{name}"')
        return True
    finally:
        await connection.close()
