"""LangGraph's own conformance suite for checkpointers
(langgraph-checkpoint-conformance) against SessionStateSaver on a started
server, on each backend: every one of its tests, the extended capabilities
(delete_for_runs, copy_thread, prune) included, must pass. Its report says
FULL for a saver that merely lacks methods, so the tests are counted."""

import uuid
from collections.abc import AsyncGenerator

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from session_state_client.langgraph import SessionStateSaver
from tests.conftest import ServerProcess

# Tests in langgraph-checkpoint-conformance 0.0.2: put 17, put_writes 10,
# get_tuple 10, list 16, delete_thread 5, delete_for_runs 7, copy_thread 8,
# prune 8.
CONFORMANCE_TESTS = 81


async def test_session_state_saver_passes_every_conformance_test(server: ServerProcess) -> None:
    await passes_every_conformance_test(server.base_url)


async def passes_every_conformance_test(base_url: str) -> None:
    """Also run with encryption at rest on (test_langgraph_encryption)."""
    app_name = f"lg-{uuid.uuid4().hex[:10]}"

    @checkpointer_test(name=f"SessionStateSaver-{app_name}")
    async def saver() -> AsyncGenerator[SessionStateSaver, None]:
        async with SessionStateSaver(base_url, app_name=app_name) as checkpointer:
            yield checkpointer

    report = await validate(saver)
    results = report.results
    failures = [failure for result in results.values() for failure in result.failures]
    assert failures == []
    assert {name for name, result in results.items() if result.detected} == {
        capability.value for capability in ALL_CAPABILITIES
    }
    passed = {name: result.tests_passed for name, result in results.items()}
    assert sum(passed.values()) == CONFORMANCE_TESTS, passed
