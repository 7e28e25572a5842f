"""The operator store contract suite itself: every method of the
`OperatorStore` and `ImportTransaction` protocols is called by one of its
tests."""

from pathlib import Path

import pytest

from session_state.admin.store import ImportTransaction, OperatorStore

from ..contract_coverage import is_called, protocol_methods, suite_sources

SUITE = Path(__file__).parent


@pytest.mark.parametrize("method", protocol_methods(OperatorStore, ImportTransaction))
def test_every_operator_store_method_is_held_to_the_contract(method: str):
    assert is_called(method, suite_sources(SUITE)), f"no contract test calls {method}"
