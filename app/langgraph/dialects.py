"""What LangGraph's SQL says differently on PostgreSQL and on SQLite. Its
statements are written once, with `:name` parameters (sent as asyncpg's `$n`
by app.db.postgresql_statement, bound by SQLAlchemy on SQLite), and ask a
dialect only for these pieces: a cast, a prefix test, a JSON array parameter
read as rows, a batch's row identity, and the JSON functions a store filter is
compiled with (app.langgraph.store.condition_sql)."""

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ..core import json_codec

# A kind of JSON value, as the store's filters name them (filters.Kind).
JsonKind = str


class Dialect(ABC):
    true: str
    false: str
    # A row's physical identity, for deleting a batch of rows chosen by a
    # subquery; and what that subquery adds so that concurrent sweepers skip
    # each other's rows instead of waiting for them.
    row_id: str
    skip_locked: str
    # The larger of its arguments.
    greatest: str
    # The names the JSON type function gives each kind of value.
    kinds: ClassVar[Mapping[JsonKind, tuple[str, ...]]]

    @abstractmethod
    def typed(self, parameter: str, sql_type: str) -> str:
        """`parameter` cast where the database cannot infer its type."""

    @abstractmethod
    def starts_with(self, text: str, prefix: str) -> str: ...

    @abstractmethod
    def position(self, text: str, part: str) -> str:
        """Where `part` first is in `text`, from 1; 0 when it is not."""

    @abstractmethod
    def json_rows(self, parameter: str) -> str:
        """A JSON array parameter as rows, each element in a column `value`."""

    @abstractmethod
    def json_text_rows(self, parameter: str) -> str:
        """A JSON array of strings as rows, each string as text in `value`."""

    @abstractmethod
    def json_argument(self, value: Any) -> Any:
        """A list or object bound to a JSON parameter (or stored in a JSON column)."""

    @abstractmethod
    def json_result(self, value: Any) -> Any:
        """A JSON column's value as read."""

    # A store filter's JSON functions. A location is what they take to reach
    # a path inside a document.

    @abstractmethod
    def path_argument(self, path: Sequence[str | int]) -> Any:
        """A path inside a document, as its parameter is bound."""

    @abstractmethod
    def location(self, document: str, path_parameter: str) -> str: ...

    @abstractmethod
    def kind_at(self, location: str) -> str:
        """The name of the kind of value there (`kinds`); NULL when there is none."""

    @abstractmethod
    def scalar_at(self, location: str) -> str:
        """The value there, comparable with a scalar_parameter by = and order."""

    @abstractmethod
    def scalar_parameter(self, parameter: str) -> str: ...

    @abstractmethod
    def scalar_argument(self, value: str | int | float | bool) -> Any: ...

    @abstractmethod
    def array_length_at(self, location: str) -> str: ...

    @abstractmethod
    def key_count_at(self, location: str) -> str: ...


class PostgresDialect(Dialect):
    """JSONB: a value inside a document is a jsonb value, compared with jsonb
    (numbers by value, true is not 1)."""

    true = "true"
    false = "false"
    row_id = "ctid"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    greatest = "greatest"
    kinds: ClassVar[Mapping[JsonKind, tuple[str, ...]]] = {
        "object": ("object",),
        "array": ("array",),
        "string": ("string",),
        "number": ("number",),
        "boolean": ("boolean",),
        "null": ("null",),
    }

    def typed(self, parameter: str, sql_type: str) -> str:
        return f"{parameter}::{sql_type}"

    def starts_with(self, text: str, prefix: str) -> str:
        return f"starts_with({text}, {prefix})"

    def position(self, text: str, part: str) -> str:
        return f"strpos({text}, {part})"

    def json_rows(self, parameter: str) -> str:
        return f"jsonb_array_elements({parameter}::jsonb)"

    def json_text_rows(self, parameter: str) -> str:
        return f"jsonb_array_elements_text({parameter}::jsonb)"

    def json_argument(self, value: Any) -> Any:
        return value  # the pool's jsonb codec encodes it

    def json_result(self, value: Any) -> Any:
        return value

    def path_argument(self, path: Sequence[str | int]) -> Any:
        return [str(step) for step in path]

    def location(self, document: str, path_parameter: str) -> str:
        return f"({document} #> {path_parameter}::text[])"

    def kind_at(self, location: str) -> str:
        return f"jsonb_typeof({location})"

    def scalar_at(self, location: str) -> str:
        return location

    def scalar_parameter(self, parameter: str) -> str:
        return f"{parameter}::jsonb"

    def scalar_argument(self, value: str | int | float | bool) -> Any:
        return value

    def array_length_at(self, location: str) -> str:
        return f"jsonb_array_length({location})"

    def key_count_at(self, location: str) -> str:
        return f"(SELECT count(*) FROM jsonb_object_keys({location}))"


# SQLite binds integers of 64 bits; a bigger one compares as a float.
_SQLITE_INTEGERS = range(-(2**63), 2**63)


class SqliteDialect(Dialect):
    """JSON text: a location is the document and a JSON path ('$."key"[0]';
    the store's filters refuse keys holding a double quote), the arguments of
    SQLite's JSON functions; a value there is compared as SQL's."""

    true = "1"
    false = "0"
    row_id = "rowid"
    skip_locked = ""  # one writer at a time
    greatest = "max"
    kinds: ClassVar[Mapping[JsonKind, tuple[str, ...]]] = {
        "object": ("object",),
        "array": ("array",),
        "string": ("text",),
        "number": ("integer", "real"),
        "boolean": ("true", "false"),
        "null": ("null",),
    }

    def typed(self, parameter: str, sql_type: str) -> str:
        return parameter

    def starts_with(self, text: str, prefix: str) -> str:
        return f"substr({text}, 1, length({prefix})) = {prefix}"

    def position(self, text: str, part: str) -> str:
        return f"instr({text}, {part})"

    def json_rows(self, parameter: str) -> str:
        return f"json_each({parameter})"

    def json_text_rows(self, parameter: str) -> str:
        return f"json_each({parameter})"

    def json_argument(self, value: Any) -> Any:
        return json_codec.dumps_text(value)

    def json_result(self, value: Any) -> Any:
        return json_codec.loads(value)

    def path_argument(self, path: Sequence[str | int]) -> Any:
        # A key as JSON writes it, escapes and all: SQLite before 3.45
        # compares a path's key with the stored text as it is.
        steps = (
            f"[{step}]" if isinstance(step, int) else f".{json_codec.dumps_text(step)}"
            for step in path
        )
        return "$" + "".join(steps)

    def location(self, document: str, path_parameter: str) -> str:
        return f"{document}, {path_parameter}"

    def kind_at(self, location: str) -> str:
        return f"json_type({location})"

    def scalar_at(self, location: str) -> str:
        return f"json_extract({location})"

    def scalar_parameter(self, parameter: str) -> str:
        return parameter

    def scalar_argument(self, value: str | int | float | bool) -> Any:
        if isinstance(value, int) and value not in _SQLITE_INTEGERS:
            return float(value)
        return value

    def array_length_at(self, location: str) -> str:
        return f"json_array_length({location})"

    def key_count_at(self, location: str) -> str:
        return f"(SELECT count(*) FROM json_each({location}))"


POSTGRESQL = PostgresDialect()
SQLITE = SqliteDialect()
