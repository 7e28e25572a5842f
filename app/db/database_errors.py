"""Database failures as domain errors, for both stores and both drivers'
error families (SQLAlchemy's wrappers and asyncpg's own, raised by the
statements the PostgreSQL store sends on asyncpg directly)."""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import asyncpg
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from ..core.errors import DatabaseUnavailable
from ..core.metrics import DB_ERRORS

logger = logging.getLogger("session_state")

# SQLSTATE classes that say the database cannot serve now, not that the
# request is wrong: connection exception, insufficient resources (such as too
# many connections), operator intervention (shutting down, starting up).
_UNAVAILABLE_SQLSTATE_CLASSES = ("08", "53", "57")
# And one SQLSTATE: read_only_sql_transaction, a write on a server that is no
# longer the primary (a standby after a failover, reached through a proxy or
# a URL without target_session_attrs=read-write).
READ_ONLY_SQLSTATE = "25006"
_UNAVAILABLE_SQLSTATES = (READ_ONLY_SQLSTATE,)
# The server a connection is on is gone, going or no longer the primary:
# connection exceptions, admin or crash shutdown, cannot connect now, read-only.
_SERVER_LOST_SQLSTATE_CLASSES = ("08",)
_SERVER_LOST_SQLSTATES = ("57P01", "57P02", "57P03", READ_ONLY_SQLSTATE)

# The database cannot be reached or answer now.
_UNAVAILABLE_ERRORS: tuple[type[BaseException], ...] = (
    # Refused, reset, unreachable, and a host name that stopped resolving
    # (socket.gaierror: a stopped compose service's name).
    OSError,
    # Waiting for a pooled connection, connecting, or a statement, past
    # SESSION_STATE_DB_TIMEOUT_SECONDS.
    TimeoutError,
    PoolTimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.InsufficientResourcesError,
    # The driver lost track of a connection's protocol (its socket dropped
    # mid-statement, seen in a switchover), or no server of a multi-host URL
    # matches target_session_attrs (TargetServerAttributeNotMatched: no
    # primary, during a failover).
    asyncpg.InternalClientError,
)
# A connection that met one of these, unwrapped, is not used again.
_SERVER_LOST_ERRORS: tuple[type[BaseException], ...] = (
    ConnectionError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
)


# How many wrappers deep a driver's error is looked for.
_WRAPPING_DEPTH = 4


def is_database_unavailable(error: BaseException) -> bool:
    """Whether `error`, or the driver error it wraps, says the database
    cannot serve now. SQLAlchemy wraps a driver error twice (its DBAPIError,
    whose `orig` is the dialect's adapter error, whose cause is asyncpg's);
    a connection lent from the pool fails with the adapter's error alone."""
    if isinstance(error, OperationalError) or (
        isinstance(error, DBAPIError) and error.connection_invalidated
    ):
        return True
    current: BaseException | None = error
    for _ in range(_WRAPPING_DEPTH):
        if current is None:
            return False
        if isinstance(current, _UNAVAILABLE_ERRORS):
            return True
        sqlstate = getattr(current, "sqlstate", None)
        if isinstance(sqlstate, str) and (
            sqlstate.startswith(_UNAVAILABLE_SQLSTATE_CLASSES) or sqlstate in _UNAVAILABLE_SQLSTATES
        ):
            return True
        current = getattr(current, "orig", None) or current.__cause__
    return False


def loses_server(error: BaseException) -> bool:
    """Whether a connection that met `error` (asyncpg's, unwrapped) must be
    discarded, and the pool's others are suspect: the server dropped it, is
    shutting down or starting, is no longer the primary, or the driver lost
    track of the protocol. A timeout is not such an error: asyncpg cancels
    the statement and keeps a connection that survives the cancellation."""
    if isinstance(error, _SERVER_LOST_ERRORS):
        return True
    sqlstate = getattr(error, "sqlstate", None)
    return isinstance(sqlstate, str) and (
        sqlstate.startswith(_SERVER_LOST_SQLSTATE_CLASSES) or sqlstate in _SERVER_LOST_SQLSTATES
    )


def as_domain_error(error: Exception) -> Exception:
    """What a store raises for `error` from its database: DatabaseUnavailable
    for a database that cannot serve now (a client may retry), the error
    itself for anything else (a domain error, or a bug)."""
    if is_database_unavailable(error):
        # The type only: messages of database errors carry users' data.
        logger.warning("database unavailable: %s", type(error).__name__)
        DB_ERRORS.labels("unavailable").inc()
        return DatabaseUnavailable("the database is unreachable")
    if isinstance(error, DBAPIError | asyncpg.PostgresError):
        DB_ERRORS.labels("other").inc()
    return error


def raise_as_domain_error(error: Exception) -> NoReturn:
    """Raises what a store raises for `error` (see as_domain_error)."""
    domain_error = as_domain_error(error)
    if domain_error is error:
        raise error
    raise domain_error from error


@contextmanager
def database_errors_as_domain_errors() -> Iterator[None]:
    """Around every use of a connection, its acquisition included."""
    try:
        yield
    except Exception as error:
        raise_as_domain_error(error)
