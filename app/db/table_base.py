"""What every table shares: the metadata they join, the width of identifier
columns and the JSON column types. A module of its own, beneath the table
modules (app.sessions.tables and LangGraph's), so that they need nothing of each
other."""

from typing import Any

from sqlalchemy import JSON, MetaData, Text
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
