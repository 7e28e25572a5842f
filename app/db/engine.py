"""Engine construction for the two supported dialects."""

from collections.abc import Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from ..core import json_codec
from ..core.config import Settings
from ..core.database_url import is_postgresql_url, parse_postgresql_url
from ..core.metrics import DB_POOL_IN_USE
from .poolers import sqlalchemy_connect_args

WRITE_OPTION = "session_state_write"
SQLITE_BUSY_TIMEOUT_MS = 30_000
# Every SQLite connection's settings: the pool's and the append writer's
# (`sqlite_writer.py`) alike, applied by `configure_sqlite_connection`.
SQLITE_PRAGMAS = (
    f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}",
    "PRAGMA foreign_keys=ON",
    "PRAGMA synchronous=NORMAL",
)
USE_WAL = "PRAGMA journal_mode=WAL"


def configure_sqlite_connection(execute: Callable[[str], object]) -> None:
    """A new connection's settings, then WAL mode. The journal mode is the
    database's and persists, so one connection's switch serves all; a
    switch that finds another connection writing fails at once (SQLite does
    not wait for it), and is left to a later connection rather than failing
    this one, which works in either mode."""
    for pragma in SQLITE_PRAGMAS:
        execute(pragma)
    try:
        execute(USE_WAL)
    except Exception as error:
        if "locked" not in str(error):
            raise


def create_engine(settings: Settings) -> AsyncEngine:
    engine = (
        _create_sqlite_engine(settings)
        if settings.is_sqlite
        else _create_postgresql_engine(settings)
    )
    _count_connections_in_use(engine)
    return engine


def _count_connections_in_use(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "checkout")
    def _on_checkout(*_arguments: Any) -> None:
        DB_POOL_IN_USE.inc()

    @event.listens_for(engine.sync_engine, "checkin")
    def _on_checkin(*_arguments: Any) -> None:
        DB_POOL_IN_USE.dec()


def engine_for_url(database_url: str, **options: Any) -> AsyncEngine:
    """create_async_engine, reading a PostgreSQL URL in any of libpq's host
    forms (app.core.database_url): its servers join `options`' connect_args."""
    if not is_postgresql_url(database_url):
        return create_async_engine(database_url, **options)
    url, servers = parse_postgresql_url(database_url).engine_arguments()
    options["connect_args"] = {**options.get("connect_args", {}), **servers}
    return create_async_engine(url, **options)


def _create_postgresql_engine(settings: Settings) -> AsyncEngine:
    return engine_for_url(
        settings.database_url,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        pool_timeout=settings.db_timeout_seconds,
        # Statement parameters are users' data: never in error messages (logs).
        hide_parameters=True,
        json_serializer=json_codec.dumps_for_jsonb,
        json_deserializer=json_codec.loads,
        connect_args={
            "timeout": settings.db_timeout_seconds,
            # Every statement too: a database that stops answering (not only one
            # that refuses connections) must not hold a request past the limit.
            "command_timeout": settings.db_timeout_seconds,
            "server_settings": {"application_name": "session-state"},
            **sqlalchemy_connect_args(settings.db_pooler),
        },
    )


def _create_sqlite_engine(settings: Settings) -> AsyncEngine:
    engine = create_async_engine(
        settings.database_url,
        hide_parameters=True,
        json_serializer=json_codec.dumps_text,
        json_deserializer=json_codec.loads,
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
    )

    # pysqlite's own transaction handling defers BEGIN and cannot take the write
    # lock up front; take control of BEGIN so that writers serialize.
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        configure_sqlite_connection(cursor.execute)
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Connection) -> None:
        # A writer takes the database's write lock at BEGIN, so a
        # read-modify-write inside its transaction cannot interleave with
        # another writer, in this process or any other.
        if connection.get_execution_options().get(WRITE_OPTION):
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            connection.exec_driver_sql("BEGIN")

    return engine
