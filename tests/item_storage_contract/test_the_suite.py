"""The item storage contract suite itself: every method of the
`ItemStorage` and `ItemTransaction` protocols is called by one of its tests."""

from pathlib import Path

import pytest

from session_state.langgraph.store.storage import ItemStorage, ItemTransaction

from ..contract_coverage import is_called, protocol_methods, suite_sources

SUITE = Path(__file__).parent


@pytest.mark.parametrize("method", protocol_methods(ItemStorage, ItemTransaction))
def test_every_item_storage_method_is_held_to_the_contract(method: str):
    assert is_called(method, suite_sources(SUITE)), f"no contract test calls {method}"
