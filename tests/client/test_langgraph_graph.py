"""A real LangGraph graph on SessionStateSaver: it runs to an interrupt in
one process, a new process with a new saver resumes it, and the state and
history equal what LangGraph's InMemorySaver gives for the same run, sync
and async. delete_thread leaves no row behind."""

import json
import sqlite3
import subprocess
import sys
import uuid
from typing import Any

import asyncpg
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from session_state_client.langgraph import SessionStateSaver
from tests.client import langgraph_scripted as scripted
from tests.conftest import ServerProcess, run_blocking

LANGGRAPH_TABLES = ("lg_threads", "lg_checkpoints", "lg_channel_values", "lg_writes")


def _run_phase(server: ServerProcess, app_name: str, thread_id: str, phase: str) -> Any:
    command = [sys.executable, "-m", "tests.client.langgraph_scripted", server.base_url]
    finished = subprocess.run(
        [*command, app_name, thread_id, phase],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return json.loads(finished.stdout)


def _in_memory_run() -> tuple[Any, Any]:
    config = {"configurable": {"thread_id": "reference", "user_id": "alice"}}
    graph = scripted.build(InMemorySaver())
    scripted.start(graph, config)
    interrupted = scripted.summary(graph, config)
    scripted.resume(graph, config)
    return interrupted, scripted.summary(graph, config)


def rows_of_app(server: ServerProcess, app_name: str) -> int:
    """Rows of the app in every LangGraph table, read from the database."""
    if server.database_url.startswith("sqlite"):
        path = server.database_url.split("///", 1)[1]
        with sqlite3.connect(path) as connection:
            return sum(
                connection.execute(
                    f"SELECT count(*) FROM {table} WHERE app_name = ?", (app_name,)
                ).fetchone()[0]
                for table in LANGGRAPH_TABLES
            )

    async def count() -> int:
        url = server.database_url.replace("postgresql+asyncpg://", "postgresql://")
        connection = await asyncpg.connect(url)
        try:
            total = 0
            for table in LANGGRAPH_TABLES:
                sql = f"SELECT count(*) FROM {table} WHERE app_name = $1"
                total += await connection.fetchval(sql, app_name)
            return total
        finally:
            await connection.close()

    return run_blocking(count())


def test_a_graph_interrupted_in_one_process_resumes_in_another_as_in_memory(
    server: ServerProcess,
) -> None:
    app_name, thread_id = f"lg-{uuid.uuid4().hex[:10]}", "ticket-1"
    interrupted = _run_phase(server, app_name, thread_id, "start")
    expected_interrupted, expected_final = _in_memory_run()
    assert interrupted["state"]["next"] == ["review"]
    assert interrupted["state"]["interrupts"][0]["question"] == "send this reply?"
    assert interrupted == expected_interrupted

    final = _run_phase(server, app_name, thread_id, "resume")
    assert final["state"]["values"]["steps"][-1] == "send:approved"
    assert final == expected_final
    assert len(final["history"]) == 6

    assert rows_of_app(server, app_name) > 0
    with SessionStateSaver(server.base_url, app_name=app_name) as saver:
        saver.delete_thread(thread_id)
        assert saver.get_tuple({"configurable": {"thread_id": thread_id}}) is None
    assert rows_of_app(server, app_name) == 0


async def test_the_async_graph_api_gives_the_in_memory_history(server: ServerProcess) -> None:
    app_name = f"lg-{uuid.uuid4().hex[:10]}"
    config: Any = {"configurable": {"thread_id": "ticket-async"}}
    expected_interrupted, expected_final = _in_memory_run()
    async with SessionStateSaver(server.base_url, app_name=app_name) as saver:
        graph = scripted.build(saver)
        await graph.ainvoke(scripted.FIRST_INPUT, config)
        assert (await graph.aget_state(config)).next == ("review",)
        await graph.ainvoke(Command(resume=scripted.RESUME_WITH), config)
        history = [state async for state in graph.aget_state_history(config)]
        final = await graph.aget_state(config)
        assert final.values == expected_final["state"]["values"]
        assert [state.values for state in history] == [
            step["values"] for step in expected_final["history"]
        ]
        await saver.adelete_thread("ticket-async")
    assert rows_of_app(server, app_name) == 0
    assert expected_interrupted["state"]["next"] == ["review"]
