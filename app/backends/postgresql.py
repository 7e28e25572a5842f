"""The PostgreSQL store: every feature's PostgreSQL storage on one set of
pools (`app.db.postgresql_connections`), with what only the whole store
does: connecting, readiness, replay lag, closing, and what goes with a
deleted session in other features (its memories, its tombstone)."""

from typing import Any

import asyncpg

from ..core.config import Settings
from ..core.encryption import ValueCipher
from ..core.errors import DatabaseUnavailable
from ..db import migrations, poolers
from ..db.database_errors import database_errors_as_domain_errors
from ..db.migrations import SchemaNotCurrent
from ..db.postgresql_connections import (
    asyncpg_dsn,
    discard,
    skip_session_reset,
    use_json_codecs,
)
from ..db.postgresql_statement import Statement
from ..langgraph.checkpoints.postgresql import PostgresCheckpoints
from ..langgraph.checkpoints.store import CheckpointStore
from ..langgraph.store.postgresql import PostgresStoreItems
from ..langgraph.store.storage import ItemStorage
from ..lifecycle.postgresql_lifecycle import PostgresLifecycle
from ..memory.postgresql_memory import PostgresMemory
from ..sessions.postgresql_appends import (
    APPEND_BATCHES_IN_FLIGHT,
    BATCH_CONNECTION_STATEMENTS,
    plan_appends_once,
)
from ..sessions.postgresql_sessions import PostgresSessions
from ..streams.postgresql_changes import PostgresChangeLog

# The schema's revision; None (no table) for an empty database.
SCHEMA_REVISION = Statement.of("SELECT version_num FROM alembic_version")
# A standby, or a server set read-only: it takes no writes.
IS_READ_ONLY = Statement.of("SELECT current_setting('transaction_read_only') = 'on'")
# Seconds a replica's replay is behind its primary. One that has replayed all
# it received is not behind, however old its last replayed transaction (an
# idle primary sends none); one not in recovery is a primary (promoted).
REPLAY_LAG = Statement.of("""
SELECT CASE
    WHEN NOT pg_is_in_recovery() THEN 0.0
    WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0.0
    ELSE coalesce(
        extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8, 'Infinity'
    )
END
""")


class PostgresStore(PostgresSessions, PostgresChangeLog, PostgresMemory, PostgresLifecycle):
    """Every feature's PostgreSQL storage (`app.stores.Store`), on the pools
    `connect` opens."""

    @classmethod
    async def connect(
        cls, settings: Settings, *, database_url: str | None = None
    ) -> "PostgresStore":
        """`db_timeout_seconds` bounds connecting, waiting for a pooled
        connection and every statement, so no request waits longer on the
        database. `database_url` replaces the settings' (the replicas')."""
        timeout = settings.db_timeout_seconds
        dsn = asyncpg_dsn(database_url or settings.database_url)
        options: dict[str, Any] = {
            # No floor of idle connections: while the database is away the
            # pool would log a failed attempt to restore it, again and again.
            "min_size": 0,
            "timeout": timeout,
            "command_timeout": timeout,
            "reset": skip_session_reset,
            "server_settings": {"application_name": "session-state"},
            **poolers.asyncpg_options(settings.db_pooler),
        }
        connections = settings.db_pool_size + settings.db_max_overflow
        # A connection per batch in flight, so that a batch never waits for
        # one, taken out of the configured number (which stays the bound on
        # a process's connections); at least one is left for the rest.
        batch_connections = 0
        if settings.append_batch_size > 1 and database_url is None:  # replicas only read
            batch_connections = min(APPEND_BATCHES_IN_FLIGHT, connections - 1)
        batch_pool = None
        with database_errors_as_domain_errors():
            pool = await asyncpg.create_pool(
                dsn, max_size=connections - batch_connections, init=use_json_codecs, **options
            )
            if batch_connections:
                # Behind a transaction-mode pooler statements are not kept
                # (nothing to plan once), and a SET would outlive the
                # transaction on a server connection that others then use.
                keeps_plans = settings.db_pooler != "transaction"
                batch_pool = await asyncpg.create_pool(
                    dsn,
                    max_size=batch_connections,
                    # A kept plan is made again when a table's statistics
                    # change (ANALYZE); one made while the tables were nearly
                    # empty could otherwise outlive their growth where
                    # autovacuum is off. A new connection plans anew.
                    max_queries=BATCH_CONNECTION_STATEMENTS,
                    init=plan_appends_once if keeps_plans else use_json_codecs,
                    **options,
                )
        return cls(pool, timeout, dsn, settings.append_batch_size, batch_pool)

    def checkpoint_store(self, cipher: ValueCipher | None = None) -> CheckpointStore:
        return PostgresCheckpoints(self.pool, self.timeout, cipher)

    def item_storage(self, cipher: ValueCipher | None = None) -> ItemStorage:
        return PostgresStoreItems(self.pool, self.timeout, cipher)

    async def check_ready(self) -> None:
        """Also refuses a server that cannot take writes (a standby, reached
        without target_session_attrs=read-write): not ready while no writable
        primary is reachable, as during a failover."""
        try:
            async with self._connection() as connection:
                if await connection.fetchval(IS_READ_ONLY.text):
                    await discard(self.pool, connection)
                    raise DatabaseUnavailable(
                        "the database server is read-only (a standby): no primary is reachable"
                    )
                try:
                    revision = await connection.fetchval(SCHEMA_REVISION.text)
                except asyncpg.UndefinedTableError:
                    revision = None
            migrations.require_revision_current(revision)
        except SchemaNotCurrent as error:
            raise DatabaseUnavailable(str(error)) from error
        except DatabaseUnavailable:
            raise
        except Exception as error:
            raise DatabaseUnavailable("the database is unreachable") from error

    async def replay_lag_seconds(self) -> float:
        """How far behind its primary this server's replay is (0 for a
        primary; infinity for a replica that never replayed a transaction)."""
        async with self._connection() as connection:
            return float(await connection.fetchval(REPLAY_LAG.text))

    async def close(self) -> None:
        await self.pool.close()
        if self.batch_pool is not self.pool:
            await self.batch_pool.close()
