"""Which database stores everything, and how a process talks to it: the
pool, a pooler in front, read replicas, the connection that listens for
changes, grouped appends and the timeout."""

from typing import Literal, Self

from pydantic import Field, field_validator, model_validator
from sqlalchemy.engine import make_url

from ..database_url import PostgresqlAddress, is_postgresql_url, parse_postgresql_url
from .group import SettingGroup

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./session_state.db"
# The connection pooler in front of PostgreSQL, by its pool mode (app.db.poolers).
Pooler = Literal["none", "session", "transaction"]
# Schemes people write for the same databases -> the one the service needs
# (libpq's postgresql:// and postgres:// are read with asyncpg as they are).
_SYNCHRONOUS_SCHEMES = {
    "postgresql+psycopg2": "postgresql+asyncpg",
    "postgresql+psycopg": "postgresql+asyncpg",
    "sqlite": "sqlite+aiosqlite",
}


class DatabaseSettings(SettingGroup):
    """SQLite or PostgreSQL; for PostgreSQL, its replicas, pool and pooler."""

    title = "Database"

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="sqlite+aiosqlite:///file.db, or a PostgreSQL URL: postgresql://... (libpq's "
        "form, several hosts and target_session_attrs included) or postgresql+asyncpg://...",
    )
    read_database_url: str | None = Field(
        default=None,
        description="PostgreSQL only: the read replicas (libpq's URL forms, several hosts "
        "allowed) that serve session reads, lists, event pages and memory search.",
    )
    listen_database_url: str | None = Field(
        default=None,
        description="PostgreSQL only: a direct URL (not through a transaction-mode pooler such "
        "as PgBouncer, where LISTEN does not work) for the one connection per process that "
        "hears other processes' changes for live streams. Unset: the database URL.",
    )
    max_replica_lag_seconds: float = Field(
        default=5.0,
        gt=0,
        description="A replica further behind the primary than this serves no reads.",
    )
    db_pool_size: int = Field(
        default=10, ge=1, description="PostgreSQL: connections of a process's pool."
    )
    # PostgreSQL: a process opens up to db_pool_size + db_max_overflow
    # connections as requests need them, and closes those idle for 5 minutes.
    db_max_overflow: int = Field(
        default=0, ge=0, description="PostgreSQL: connections a pool may open beyond its size."
    )
    db_pooler: Pooler = Field(
        default="none",
        description="PostgreSQL: the connection pooler between the service and the database, "
        "by its pool mode (PgBouncer's pool_mode=transaction: transaction). A pooler found "
        "while this is none is refused at start-up.",
    )
    append_batch_size: int = Field(
        default=64,
        ge=1,
        le=1000,
        description="PostgreSQL: the most concurrent appends sent in one statement and"
        " committed together (group commit); 1 sends each by itself.",
    )
    db_timeout_seconds: float = Field(
        default=5.0,
        gt=0,
        description="Bounds connecting, waiting for a pooled connection, an append's wait for"
        " its batch and every statement.",
    )

    @field_validator("database_url")
    @classmethod
    def _refuse_unsupported_driver(cls, url: str) -> str:
        if is_postgresql_url(url):
            # Held in the form SQLAlchemy reads, the servers as host= parameters.
            return parse_postgresql_url(url).canonical()
        # A synchronous driver would block the event loop; say so at start-up.
        if url.startswith("sqlite+aiosqlite:"):
            if _is_sqlite_in_memory(url):
                raise ValueError(
                    "an in-memory SQLite database cannot be shared by the service's "
                    "connections (each would open its own): name a file, as "
                    "sqlite+aiosqlite:///session_state.db"
                )
            return url
        scheme = url.split("://", 1)[0] if "://" in url else None
        if scheme in _SYNCHRONOUS_SCHEMES:
            driver = _SYNCHRONOUS_SCHEMES[scheme]
            raise ValueError(
                f"write {driver}:// instead of {scheme}:// (the service needs the asyncio "
                f"driver, {driver.split('+')[1]})"
            )
        # The URL itself is not repeated: it may hold a password.
        raise ValueError(
            "must start with sqlite+aiosqlite://, postgresql:// or postgresql+asyncpg://"
        )

    @field_validator("read_database_url", "listen_database_url")
    @classmethod
    def _refuse_a_replica_url_not_postgresql(cls, url: str | None) -> str | None:
        if url is None or not url.strip():
            return None
        if not is_postgresql_url(url):
            raise ValueError("must start with postgresql:// or postgresql+asyncpg://")
        return parse_postgresql_url(url).canonical()

    @model_validator(mode="after")
    def _replicas_only_beside_postgresql(self) -> Self:
        if self.read_database_url is not None and self.is_sqlite:
            raise ValueError(
                "SESSION_STATE_READ_DATABASE_URL needs a PostgreSQL SESSION_STATE_DATABASE_URL "
                "(SQLite has no replicas)"
            )
        if self.listen_database_url is not None and self.is_sqlite:
            raise ValueError(
                "SESSION_STATE_LISTEN_DATABASE_URL needs a PostgreSQL SESSION_STATE_DATABASE_URL "
                "(on SQLite, streams follow the changes of their own process)"
            )
        return self

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def postgresql_address(self) -> PostgresqlAddress:
        """The servers, user, database and options of a PostgreSQL database_url."""
        return parse_postgresql_url(self.database_url)


def _is_sqlite_in_memory(url: str) -> bool:
    database = make_url(url).database
    return database in (None, "", ":memory:") or "mode=memory" in url
