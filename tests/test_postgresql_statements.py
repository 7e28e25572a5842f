"""Every PostgreSQL statement of the features is written with `:name`
parameters (app.db.postgresql_statement): each name is one numbered
parameter, none is left unnumbered, and no module keeps SQL with `$n`
written by hand (a value bound by its place drifts when the text changes).
No database needed: the statements are checked as built."""

import re
from collections.abc import Iterator
from types import ModuleType

import pytest

from session_state.backends import postgresql as backend
from session_state.db import provisioning
from session_state.db.postgresql_statement import Statement
from session_state.lifecycle import postgresql_statements as lifecycle_sql
from session_state.memory import postgresql_statements as memory_sql
from session_state.sessions import postgresql_statements as sessions_sql
from session_state.streams import changes
from session_state.streams import postgresql_statements as streams_sql
from session_state.streams import postgresql_tombstones as tombstones

MODULES = [
    sessions_sql,
    streams_sql,
    tombstones,
    changes,
    memory_sql,
    lifecycle_sql,
    backend,
    provisioning,
]


def _statements(module: ModuleType) -> Iterator[tuple[str, Statement]]:
    for name, value in vars(module).items():
        if isinstance(value, Statement):
            yield name, value
        elif isinstance(value, dict):
            for variant, member in value.items():
                if isinstance(member, Statement):
                    yield f"{name}[{variant}]", member


STATEMENTS = [
    pytest.param(statement, id=f"{module.__name__.rsplit('.', 1)[-1]}.{name}")
    for module in MODULES
    for name, statement in _statements(module)
]


def test_every_feature_has_its_statements_here() -> None:
    for module in MODULES:
        assert any(True for _ in _statements(module)), module.__name__


@pytest.mark.parametrize("statement", STATEMENTS)
def test_each_name_is_one_numbered_parameter_and_none_is_left_unnumbered(
    statement: Statement,
) -> None:
    numbers = {int(number) for number in re.findall(r"\$(\d+)", statement.text)}
    assert numbers == set(range(1, len(statement.names) + 1))
    assert len(set(statement.names)) == len(statement.names)
    assert re.search(r"(?<!:):[a-z_]", statement.text) is None


@pytest.mark.parametrize("module", MODULES, ids=lambda module: module.__name__)
def test_no_module_keeps_sql_with_positional_parameters(module: ModuleType) -> None:
    written_by_place = [
        name
        for name, value in vars(module).items()
        if isinstance(value, str) and re.search(r"\$\d", value)
    ]
    assert not written_by_place
