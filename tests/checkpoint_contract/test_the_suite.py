"""The checkpoint contract suite itself: every method of the
`CheckpointStore` protocol is called by one of its tests."""

from pathlib import Path

import pytest

from session_state.langgraph.checkpoints.store import CheckpointStore

from ..contract_coverage import is_called, protocol_methods, suite_sources

SUITE = Path(__file__).parent


@pytest.mark.parametrize("method", protocol_methods(CheckpointStore))
def test_every_checkpoint_store_method_is_held_to_the_contract(method: str):
    assert is_called(method, suite_sources(SUITE)), f"no contract test calls {method}"
