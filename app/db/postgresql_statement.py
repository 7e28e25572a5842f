"""SQL for asyncpg written with `:name` parameters: every statement of the
PostgreSQL stores binds its values by name and is sent with asyncpg's `$n`."""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def _positional(sql: str, names: list[str]) -> str:
    """`:name` parameters as asyncpg's `$n`, numbered in the order given."""
    numbers = {name: f"${index}" for index, name in enumerate(names, start=1)}
    return re.sub(r"(?<!:):(\w+)", lambda match: numbers[match.group(1)], sql)


@dataclass(frozen=True)
class Statement:
    """SQL written with `:name` parameters, sent as `$n`: the code binds
    values by name, so no list of values has to follow the text's order."""

    text: str
    names: tuple[str, ...]

    @classmethod
    def of(cls, sql: str) -> "Statement":
        """Numbered in the order the names first appear."""
        names = list(dict.fromkeys(re.findall(r"(?<!:):(\w+)", sql)))
        return cls(_positional(sql, names), tuple(names))

    def arguments(self, values: Mapping[str, Any]) -> list[Any]:
        """The values in the statement's order; every name bound, none more."""
        if len(values) == len(self.names):
            try:
                return [values[name] for name in self.names]
            except KeyError:
                pass
        missing = sorted(set(self.names) - set(values))
        extra = sorted(set(values) - set(self.names))
        raise TypeError(f"parameters not bound: {missing}; bound but not taken: {extra}")

    def columns(self, rows: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
        """For a statement of arrays: an array per name, an element per row."""
        return [list(column) for column in zip(*map(self.arguments, rows), strict=True)]
