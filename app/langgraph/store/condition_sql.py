"""A search filter's condition (app.langgraph.store.filters) as SQL on the
item's value, for either dialect: one compiler, the JSON functions the
dialect's (app.langgraph.dialects). Every part is true or false, never NULL
(NOT of a NULL would be NULL); a test that needs a kind of value is made only
on a value of that kind (PostgreSQL's jsonb functions fail on another)."""

from typing import Any

from ..dialects import Dialect, JsonKind
from .filters import (
    AllOf,
    AnyOf,
    Compares,
    Condition,
    Equals,
    HasLength,
    HasSize,
    IsKind,
    Negated,
    Scalar,
)

# Qualified: inside a subquery over JSON rows, `value` is the rows' own column.
_DOCUMENT = "lg_store_items.value"


def _kind_of(value: Scalar) -> JsonKind:
    if isinstance(value, bool):
        return "boolean"
    return "string" if isinstance(value, str) else "number"


class ConditionSql:
    """Compiles conditions, binding their operands as :f0, :f1, ... in
    `parameters`."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.parameters: dict[str, Any] = {}

    def _bind(self, value: Any) -> str:
        name = f"f{len(self.parameters)}"
        self.parameters[name] = value
        return f":{name}"

    def _scalar(self, value: Scalar) -> str:
        return self.dialect.scalar_parameter(self._bind(self.dialect.scalar_argument(value)))

    def _count(self, number: int) -> str:
        return self.dialect.typed(self._bind(number), "int")

    def _is(self, location: str, kind: JsonKind) -> str:
        names = ", ".join(f"'{name}'" for name in self.dialect.kinds[kind])
        return f"{self.dialect.kind_at(location)} IN ({names})"

    def _when(self, location: str, kind: JsonKind, test: str) -> str:
        """`test`, made on a value of that kind only."""
        when = self._is(location, kind)
        return f"COALESCE(CASE WHEN {when} THEN {test} END, {self.dialect.false})"

    def sql(self, condition: Condition | None) -> str:
        """None: every item."""
        dialect = self.dialect
        if condition is None:
            return dialect.true
        if isinstance(condition, AllOf | AnyOf):
            if not condition.parts:
                return dialect.true if isinstance(condition, AllOf) else dialect.false
            joiner = " AND " if isinstance(condition, AllOf) else " OR "
            return "(" + joiner.join(self.sql(part) for part in condition.parts) + ")"
        if isinstance(condition, Negated):
            return f"(NOT {self.sql(condition.part)})"
        at = dialect.location(_DOCUMENT, self._bind(dialect.path_argument(condition.path)))
        if isinstance(condition, IsKind):
            if condition.kind == "missing":
                return f"({dialect.kind_at(at)} IS NULL)"
            return f"COALESCE({self._is(at, condition.kind)}, {dialect.false})"
        if isinstance(condition, Equals):
            wanted = condition.value
            return self._when(
                at, _kind_of(wanted), f"{dialect.scalar_at(at)} = {self._scalar(wanted)}"
            )
        if isinstance(condition, HasLength):
            test = f"{dialect.array_length_at(at)} = {self._count(condition.length)}"
            return self._when(at, "array", test)
        if isinstance(condition, HasSize):
            return self._when(
                at, "object", f"{dialect.key_count_at(at)} = {self._count(condition.size)}"
            )
        assert isinstance(condition, Compares)
        test = f"{dialect.scalar_at(at)} {condition.operator} {self._scalar(condition.number)}"
        return self._when(at, "number", test)
