"""A search filter as conditions on paths inside an item's value, for the
database to evaluate (compiled to SQL by app.langgraph.store.condition_sql)
so a search reads only the page it returns. The meaning is LangGraph's
InMemoryStore's:

- a key's plain value is equal (JSON equality: true is not 1; null also
  matches a missing key, as `dict.get` gives None);
- an object of keys matches an object holding at least those keys, each
  matching (containment, nested as deep as the filter goes);
- an array matches an array of the same length, element by element;
- an object of operators ($eq $ne $gt $gte $lt $lte) applies each; $eq and
  $ne compare whole JSON values, the ordering ones numbers only.

A filter is bounded (MAX_FILTER_CONDITIONS, MAX_FILTER_DEPTH): a bigger one
is refused as a FilterProblem, never compiled into an unbounded query."""

from dataclasses import dataclass
from typing import Any, Literal

from ...core.json_rules import text_problem

MAX_FILTER_CONDITIONS = 128
MAX_FILTER_DEPTH = 16

Step = str | int
Path = tuple[Step, ...]
Kind = Literal["object", "array", "string", "number", "boolean", "null", "missing"]
Scalar = str | int | float | bool
Ordering = Literal[">", ">=", "<", "<="]

OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_ORDERINGS: dict[str, Ordering] = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


class FilterProblem(ValueError):
    """Why a filter cannot be applied (the message names it)."""


@dataclass(frozen=True)
class IsKind:
    """The value at `path` is of that JSON kind ("missing": there is none)."""

    path: Path
    kind: Kind


@dataclass(frozen=True)
class Equals:
    """The value at `path` is this string, number or boolean (a number equal
    by value, 1 and 1.0 alike; a boolean is not a number)."""

    path: Path
    value: Scalar


@dataclass(frozen=True)
class HasLength:
    """The value at `path` is an array of `length` elements."""

    path: Path
    length: int


@dataclass(frozen=True)
class HasSize:
    """The value at `path` is an object of `size` keys."""

    path: Path
    size: int


@dataclass(frozen=True)
class Compares:
    """The value at `path` is a number, and `value <operator> number`."""

    path: Path
    operator: Ordering
    number: int | float


@dataclass(frozen=True)
class AllOf:
    parts: tuple["Condition", ...]


@dataclass(frozen=True)
class AnyOf:
    parts: tuple["Condition", ...]


@dataclass(frozen=True)
class Negated:
    part: "Condition"


Condition = IsKind | Equals | HasLength | HasSize | Compares | AllOf | AnyOf | Negated


def _key(key: str) -> str:
    # SQLite's JSON paths cannot name a key with a double quote; PostgreSQL's
    # text cannot hold NUL.
    if '"' in key:
        raise FilterProblem(f"a filter key holds no double quote: {key!r}")
    problem = text_problem(key)
    if problem is not None:
        raise FilterProblem(problem)
    return key


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class _Compiler:
    def __init__(self) -> None:
        self.conditions = 0

    def _count(self, path: Path) -> None:
        self.conditions += 1
        if self.conditions > MAX_FILTER_CONDITIONS:
            raise FilterProblem(
                f"the filter has more than {MAX_FILTER_CONDITIONS} conditions "
                "(keys, elements and operators together)"
            )
        if len(path) > MAX_FILTER_DEPTH:
            raise FilterProblem(f"the filter nests deeper than {MAX_FILTER_DEPTH} levels")

    def match(self, path: Path, wanted: Any) -> Condition:
        """InMemoryStore's _compare_values."""
        self._count(path)
        if isinstance(wanted, dict):
            operators = [name for name in wanted if name.startswith("$")]
            if operators:
                if len(operators) != len(wanted):
                    raise FilterProblem("an object mixes operators and keys")
                return AllOf(
                    tuple(self.operator(path, name, operand) for name, operand in wanted.items())
                )
            return AllOf(
                (
                    IsKind(path, "object"),
                    *(self.match((*path, _key(key)), item) for key, item in wanted.items()),
                )
            )
        if isinstance(wanted, list):
            return AllOf(
                (
                    HasLength(path, len(wanted)),
                    *(self.match((*path, index), item) for index, item in enumerate(wanted)),
                )
            )
        if wanted is None:
            return AnyOf((IsKind(path, "null"), IsKind(path, "missing")))
        return Equals(path, wanted)

    def operator(self, path: Path, name: str, operand: Any) -> Condition:
        if name not in OPERATORS:
            raise FilterProblem(
                f"unknown operator {name!r} (known: {', '.join(sorted(OPERATORS))})"
            )
        if name in _ORDERINGS:
            if not is_number(operand):
                raise FilterProblem(f"{name} compares numbers")
            self._count(path)
            return Compares(path, _ORDERINGS[name], operand)
        # $eq and $ne: whole-value JSON equality (null: also a missing key).
        equal = self.equal(path, operand, top=True)
        return equal if name == "$eq" else Negated(equal)

    def equal(self, path: Path, wanted: Any, *, top: bool = False) -> Condition:
        self._count(path)
        if isinstance(wanted, dict):
            return AllOf(
                (
                    HasSize(path, len(wanted)),
                    *(self.equal((*path, _key(key)), item) for key, item in wanted.items()),
                )
            )
        if isinstance(wanted, list):
            return AllOf(
                (
                    HasLength(path, len(wanted)),
                    *(self.equal((*path, index), item) for index, item in enumerate(wanted)),
                )
            )
        if wanted is None:
            null = IsKind(path, "null")
            return AnyOf((null, IsKind(path, "missing"))) if top else null
        return Equals(path, wanted)


def compile_filter(filter_: dict[str, Any]) -> Condition:
    """The filter as one condition on the item's value; FilterProblem if it
    is not one LangGraph accepts, or is past the bounds."""
    compiler = _Compiler()
    return AllOf(tuple(compiler.match((_key(key),), wanted) for key, wanted in filter_.items()))
