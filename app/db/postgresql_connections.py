"""What every feature's PostgreSQL storage shares: the pools, the database
timeout, and a pooled connection or transaction per request.

Every request's SQL is sent with asyncpg, on one pool per process
(SQLAlchemy is kept for Alembic and the models): asyncpg directly costs far
less client CPU per statement than SQLAlchemy's async layer
(docs/performance.md, "The PostgreSQL store's driver and pool"). Each
feature's storage (`PostgresSessions`, `PostgresChangeLog`, `PostgresMemory`,
`PostgresLifecycle`) inherits `PostgresConnections`; the composite store
(app.backends.postgresql) assembles them on one set of pools.
"""

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType

import asyncpg

from ..core import json_codec
from ..core.database_url import parse_postgresql_url
from ..core.metrics import DB_POOL_IN_USE
from .database_errors import loses_server, raise_as_domain_error


def asyncpg_dsn(database_url: str) -> str:
    """The URL in libpq's form, every server in its host list."""
    return parse_postgresql_url(database_url).asyncpg_dsn()


async def use_json_codecs(connection: asyncpg.Connection) -> None:
    """Every pooled connection's setup: JSON and JSONB as Python values."""
    for type_name in ("json", "jsonb"):
        await connection.set_type_codec(
            type_name,
            encoder=json_codec.dumps_for_jsonb,
            decoder=json_codec.loads,
            schema="pg_catalog",
        )


async def skip_session_reset(_connection: asyncpg.Connection) -> None:
    """Replaces asyncpg's reset on release (RESET ALL, UNLISTEN *, ...: one
    more round trip per request). The store sets no session state, listens
    to nothing and takes only transaction-scoped advisory locks; an open
    transaction, if any, is still rolled back by asyncpg before this."""


def row_count(status: str) -> int:
    """The row count of a command's status ("DELETE 3")."""
    return int(status.rsplit(" ", 1)[1])


class PooledConnection:
    """A connection of the pool for one `async with`, counted by the pool
    gauge while lent, its database errors raised as domain errors. A class,
    not a generator-based context manager: it is on every request
    (docs/performance.md, "The PostgreSQL store's driver and pool").

    A connection whose server is lost (dropped, shutting down, no longer the
    primary after a failover) is closed, never lent again, and the pool's
    other connections, on the same server, are replaced on their next use:
    new ones go where the URL's target_session_attrs finds the primary."""

    __slots__ = ("connection", "pool", "timeout")

    def __init__(self, pool: asyncpg.Pool, timeout: float) -> None:
        self.pool = pool
        self.timeout = timeout
        self.connection: asyncpg.Connection | None = None

    async def __aenter__(self) -> asyncpg.Connection:
        try:
            self.connection = await self.pool.acquire(timeout=self.timeout)
        except Exception as error:
            if loses_server(error):
                await self.pool.expire_connections()
            raise_as_domain_error(error)
        DB_POOL_IN_USE.inc()
        return self.connection

    async def __aexit__(
        self,
        error_type: type[BaseException] | None,
        error: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        DB_POOL_IN_USE.dec()
        connection, self.connection = self.connection, None
        if error is not None and loses_server(error):
            await discard(self.pool, connection)
        try:
            await self.pool.release(connection, timeout=self.timeout)
        except Exception as release_error:
            if error is None:
                raise_as_domain_error(release_error)
        if isinstance(error, Exception):
            raise_as_domain_error(error)


async def discard(pool: asyncpg.Pool, connection: asyncpg.Connection) -> None:
    """Closes a connection of `pool` whose server is lost (its release then
    only returns its slot) and has the pool's others replaced on their next
    use."""
    # A connection asyncpg saw close is already back in the pool, detached:
    # its proxy refuses every call.
    with contextlib.suppress(asyncpg.InterfaceError):
        connection.terminate()
    await pool.expire_connections()


class PostgresConnections:
    """The connections a feature's PostgreSQL storage sends its SQL on."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        timeout: float,
        dsn: str,
        batch_pool: asyncpg.Pool | None = None,
    ) -> None:
        """`timeout` bounds waiting for a pooled connection and every
        statement; `batch_pool`: the connections batches of appends are
        sent on (by default `pool`'s)."""
        self.pool = pool
        self.batch_pool = batch_pool or pool
        self.timeout = timeout
        self.dsn = dsn

    def _connection(self) -> PooledConnection:
        """A pooled connection; every statement on it runs by itself
        (autocommit) unless a transaction is opened."""
        return PooledConnection(self.pool, self.timeout)

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[asyncpg.Connection]:
        async with self._connection() as connection, connection.transaction():
            yield connection
