"""What every table shares: the metadata they join, the width of identifier
columns, the JSON column types and the columns several tables repeat (an
identifier in the key, a row's lifetime). A module of its own, beneath the
table modules (app.sessions.tables and LangGraph's), so that they need nothing
of each other."""

from typing import Any

from sqlalchemy import JSON, Column, Double, Index, MetaData, String, Text, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from ..core import json_codec
from ..core.identifiers import IDENTIFIER_MAX_LENGTH

# Column widths of app names, user ids, session ids and event ids: the API's
# identifier limit (the migrations keep the number they were written with).
IDENTIFIER_LENGTH = IDENTIFIER_MAX_LENGTH


class JsonText(TypeDecorator[Any]):
    """JSON kept in a TEXT column. SQLite gives a column declared JSON numeric
    affinity, which would turn a stored `1.0` into the integer 1."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str:
        return json_codec.dumps_text(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> Any:
        return None if value is None else json_codec.loads(value)


# JSONB on PostgreSQL (for the database-side `||` merge). On SQLite a session's
# state (always an object, so never mistaken for a number) is a JSON column; one
# key's value, which may be a bare number, is TEXT (see JsonText).
JsonDocument = JSON().with_variant(JSONB(), "postgresql")
JsonValue = JsonText().with_variant(JSONB(), "postgresql")

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# Schema objects the migrations write by hand, per dialect (full-text indexes,
# rows kept by triggers), that no model describes. Each table module names its
# own here, as its tables join `metadata`; autogenerate leaves them alone
# (app.db.migrations.include_object).
WRITTEN_BY_HAND: set[str] = set()

# Each helper returns new objects: a Column or Index belongs to one table.


def identifier_key(name: str) -> Column[str]:
    """A primary-key column holding an identifier (app name, user id, thread id)."""
    return Column(name, String(IDENTIFIER_LENGTH), primary_key=True)


def lifetime_columns() -> list[Column[float]]:
    """When the row was created and last written (epoch seconds), when it
    expires (NULL: never) and the idle time a write pushes its expiry out by."""
    return [
        Column("create_time", Double, nullable=False),
        Column("update_time", Double, nullable=False),
        Column("expire_time", Double, nullable=True),
        Column("ttl_seconds", Double, nullable=True),
    ]


def expiry_index(table_name: str) -> Index:
    """The sweeper's index of a table with lifetime_columns: only rows that
    expire are in it."""
    return Index(
        f"ix_{table_name}_expire_time",
        "expire_time",
        postgresql_where=text("expire_time IS NOT NULL"),
        sqlite_where=text("expire_time IS NOT NULL"),
    )
