"""The contract suite itself: every method of the `Store` protocol is
called by it, and every row of docs/design.md's "Backend differences"
names one of its tests and a backend."""

import ast
from pathlib import Path

import pytest

from session_state.stores import Store

from ..contract_coverage import is_called, protocol_methods, suite_sources
from .differences import BACKENDS, read_differences

SUITE = Path(__file__).parent


def _contract_tests() -> set[str]:
    names = set()
    for path in SUITE.glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            is_function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            if is_function and node.name.startswith("test_"):
                names.add(node.name)
    return names


@pytest.mark.parametrize("method", protocol_methods(Store))
def test_every_store_method_is_held_to_the_contract(method: str):
    assert is_called(method, suite_sources(SUITE)), f"no contract test calls {method}"


def test_every_listed_difference_names_a_contract_test_and_one_backend():
    tests = _contract_tests()
    rows = read_differences()
    for row in rows:
        assert row.test in tests, f"docs/design.md lists {row.test}, which is no contract test"
        assert row.backend in BACKENDS, f"{row.test}: {row.backend!r} is no backend"
        assert row.telltale, f"{row.test}: the row says in no `code` what its failure shows"
    listed = [row.test for row in rows]
    # On both, it is no difference: it is the contract, or a bug in both.
    assert len(listed) == len(set(listed)), "a test is listed for both backends"


def test_the_table_is_read_row_by_row():
    document = """
## Backend differences

| Test | Backend | What it does instead | Why it is kept |
|---|---|---|---|
| `test_a` | sqlite | Answers `None` instead. | Because. |

## Next
| not | this |
"""
    (row,) = read_differences(document)
    assert (row.test, row.backend, row.telltale) == ("test_a", "sqlite", "None")
