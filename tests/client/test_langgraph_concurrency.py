"""Two processes write LangGraph threads at once through SessionStateSaver,
each its own thread and one shared thread: nothing is lost, and the outcome
is LangGraph's own PostgresSaver's for the same two processes, on both backends."""

import itertools
import subprocess
import sys
import tempfile
import uuid
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver

from session_state_client.langgraph import SessionStateSaver
from tests.client import langgraph_scripted as scripted
from tests.conftest import ServerProcess, create_postgres_database, drop_postgres_database

TURNS = 8
WRITERS = ("a", "b")


def _run_writers(kind: str, target: str, app_name: str) -> None:
    command = [sys.executable, "-m", "tests.client.langgraph_scripted", "hammer", kind]
    with tempfile.TemporaryDirectory() as meeting:
        processes = [
            subprocess.Popen(
                [*command, target, app_name, name, str(TURNS), meeting, str(len(WRITERS))]
            )
            for name in WRITERS
        ]
        assert [process.wait(timeout=300) for process in processes] == [0, 0]


def _writers_in_order(saver: Any, thread_id: str) -> list[str]:
    """Who wrote each turn of a thread, in the order the turns were stored
    (each turn's first checkpoint after its input ends with the input)."""
    graph = scripted.build_counter(saver)
    history = reversed(list(graph.get_state_history({"configurable": {"thread_id": thread_id}})))
    return [
        state.values["steps"][-1].split(":")[0]
        for state in history
        if state.metadata["source"] == "loop" and not state.values["steps"][-1].startswith("seen")
    ]


def _outcome(saver: Any) -> dict[str, Any]:
    """Per thread: how many checkpoints, and the steps of its latest state
    (the shared thread's as a sorted list: the interleaving is not fixed)."""
    graph = scripted.build_counter(saver)
    outcome: dict[str, Any] = {}
    for thread_id in [*(f"own-{name}" for name in WRITERS), "shared"]:
        config = {"configurable": {"thread_id": thread_id}}
        history = list(graph.get_state_history(config))
        inputs = sorted(
            step
            for step in graph.get_state(config).values["steps"]
            if ":" in step and not step.startswith("seen")
        )
        outcome[thread_id] = {"checkpoints": len(history), "inputs_in_latest": inputs}
    return outcome


def _sequential_own_thread() -> dict[str, Any]:
    saver = InMemorySaver()
    graph = scripted.build_counter(saver)
    config = {"configurable": {"thread_id": "own"}}
    for turn in range(TURNS):
        graph.invoke({"steps": [f"a:{turn}"], "text": "", "decision": ""}, config)
    return {
        "checkpoints": len(list(graph.get_state_history(config))),
        "values": graph.get_state(config).values,
    }


def test_two_processes_lose_nothing_and_match_postgres_saver(
    server: ServerProcess,
) -> None:
    app_name = f"lg-{uuid.uuid4().hex[:10]}"
    _run_writers("session", server.base_url, app_name)
    with SessionStateSaver(server.base_url, app_name=app_name) as saver:
        ours = _outcome(saver)
        shared_turns = _writers_in_order(saver, "shared")
        own = scripted.build_counter(saver).get_state({"configurable": {"thread_id": "own-a"}})

    # The two processes' turns on the shared thread interleaved (one after
    # the other would switch writers once).
    switches = sum(first != second for first, second in itertools.pairwise(shared_turns))
    assert switches >= 2, shared_turns
    sequential = _sequential_own_thread()
    # Each process's own thread is exactly what one process alone makes.
    assert ours["own-a"]["checkpoints"] == sequential["checkpoints"]
    assert own.values == sequential["values"]
    # The shared thread holds every checkpoint both processes stored.
    assert ours["shared"]["checkpoints"] == 2 * sequential["checkpoints"]

    name = create_postgres_database("langgraph_peer")
    dsn = f"postgresql://postgres@127.0.0.1:5432/{name}"
    try:
        with PostgresSaver.from_conn_string(dsn) as postgres:
            postgres.setup()
        _run_writers("postgres", dsn, "-")
        with PostgresSaver.from_conn_string(dsn) as postgres:
            theirs = _outcome(postgres)
    finally:
        drop_postgres_database(name)
    for thread_id in ("own-a", "own-b"):
        assert ours[thread_id] == theirs[thread_id]
    assert ours["shared"]["checkpoints"] == theirs["shared"]["checkpoints"]
