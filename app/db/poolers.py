"""Running behind a connection pooler (SESSION_STATE_DB_POOLER).

In PgBouncer's transaction mode a client's server connection changes from one
transaction to the next, so nothing may outlive a transaction on the server:
no named prepared statement (asyncpg caches them, SQLAlchemy too: both caches
are turned off, and asyncpg then prepares unnamed statements, parsed and run
before the transaction ends), no session-level advisory lock (the sweeper's
lock is transaction-level), no SET or LISTEN (the service uses neither; its
one startup parameter, application_name, is one PgBouncer keeps per client).

A pooler is recognised at start-up: PostgreSQL's BackendKeyData names the
backend's process, a pooler's names none of its servers'.
"""

from typing import Any

import asyncpg

from ..core.config import Pooler, Settings
from ..core.database_url import parse_postgresql_url
from ..core.errors import SetupProblem

DB_POOLER_SETTING = "SESSION_STATE_DB_POOLER"


class PoolerNotDeclared(SetupProblem):
    """A pooler answers for PostgreSQL, but the settings say there is none."""


def asyncpg_options(pooler: Pooler) -> dict[str, Any]:
    """asyncpg connection options for `pooler`."""
    return {"statement_cache_size": 0} if pooler == "transaction" else {}


def sqlalchemy_connect_args(pooler: Pooler) -> dict[str, Any]:
    """connect_args for SQLAlchemy's asyncpg dialect: with both caches off
    its statements are unnamed and held by no cache beyond their use."""
    if pooler != "transaction":
        return {}
    return {**asyncpg_options(pooler), "prepared_statement_cache_size": 0}


async def refuse_an_undeclared_pooler(settings: Settings) -> None:
    """PoolerNotDeclared (one line, naming the setting) when the database is
    reached through a pooler and SESSION_STATE_DB_POOLER is `none`: in
    transaction mode the service would fail at random under load instead."""
    if settings.is_sqlite or settings.db_pooler != "none":
        return
    dsn = parse_postgresql_url(settings.database_url).asyncpg_dsn()
    # No statement cache: this connection must work through any pooler.
    connection = await asyncpg.connect(
        dsn, timeout=settings.db_timeout_seconds, statement_cache_size=0
    )
    try:
        backend = await connection.fetchval("SELECT pg_backend_pid()")
        announced = connection.get_server_pid()
    finally:
        await connection.close()
    if backend != announced:
        raise PoolerNotDeclared(
            "the database is reached through a connection pooler (such as PgBouncer): set "
            f"{DB_POOLER_SETTING}=transaction (PgBouncer's pool_mode=transaction) or session "
            "(pool_mode=session)"
        )
