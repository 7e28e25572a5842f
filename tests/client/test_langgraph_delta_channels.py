"""LangGraph's DeltaChannel (beta in langgraph 1.2) on SessionStateSaver,
on both backends.

A graph whose state is a DeltaChannel runs many turns, with a fork from an
older checkpoint, on SessionStateSaver and on InMemorySaver: the state
after each is the same. For every checkpoint of the thread, the saver's
`get_delta_channel_history` (sync and async) equals the base saver's walk,
one `get_tuple` per ancestor, over the same saver. And it reads the
ancestors in pages: a history of over a hundred ancestors takes three
requests where the base walk takes one per ancestor.
"""

import uuid
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

import httpx
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from session_state_client.langgraph import SessionStateSaver
from tests.client.own_loops import runs_cleanly
from tests.conftest import ServerProcess

CHANNELS = ["items", "notes"]


def _extend(state: list[Any] | None, writes: Sequence[list[Any]]) -> list[Any]:
    return [*(state or []), *(item for write in writes for item in write)]


class State(TypedDict):
    # A snapshot every 4 updates: walks that end at a seed, and walks that
    # reach the root (notes are written rarely).
    items: Annotated[list[Any], DeltaChannel(_extend, snapshot_frequency=4)]
    notes: Annotated[list[Any], DeltaChannel(_extend)]
    n: int


def _step(state: State) -> dict[str, Any]:
    update: dict[str, Any] = {"items": [state["n"]], "n": state["n"] + 1}
    if state["n"] % 5 == 0:
        update["notes"] = [f"note {state['n']}"]
    return update


def _echo(state: State) -> dict[str, Any]:
    return {"items": [f"echo {state['n']}"]}


def _graph(saver: BaseCheckpointSaver[Any]) -> Any:
    """Two nodes in one step, both writing items: a checkpoint's writes to
    a channel come in an order the history must keep."""
    builder = StateGraph(State)
    builder.add_node("step", _step)
    builder.add_node("echo", _echo)
    builder.add_edge(START, "step")
    builder.add_edge(START, "echo")
    builder.add_edge("step", END)
    builder.add_edge("echo", END)
    return builder.compile(checkpointer=saver)


async def _run(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[Any]:
    """Twelve turns, a fork from the fifth checkpoint back, three more
    turns on the fork: the state after each."""
    graph = _graph(saver)
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    states = []
    n = 0
    for _ in range(12):
        n = (await graph.ainvoke({"n": n}, config))["n"]
        states.append((await graph.aget_state(config)).values)
    history = [snapshot async for snapshot in graph.aget_state_history(config)]
    # A fork: a run from an older checkpoint, updated first; the thread's
    # newest checkpoints are then on the fork.
    forked = await graph.aupdate_state(history[5].config, {"items": ["forked"]}, as_node="echo")
    n = 100
    for turn in range(3):
        n = (await graph.ainvoke({"n": n}, forked if turn == 0 else config))["n"]
        states.append((await graph.aget_state(config)).values)
    return states


def _saver(server: ServerProcess) -> SessionStateSaver:
    return SessionStateSaver(server.base_url, app_name=f"lg-{uuid.uuid4().hex[:10]}")


async def test_a_delta_channel_graph_keeps_the_state_in_memory_gives(server: ServerProcess):
    reference = await _run(InMemorySaver(), "t")
    async with _saver(server) as saver:
        assert await _run(saver, "t") == reference
    assert any("forked" in state["items"] for state in reference)
    assert any(state.get("notes") for state in reference)


async def test_each_checkpoints_history_is_the_base_savers_walk(server: ServerProcess):
    async with _saver(server) as saver:
        await _run(saver, "t")
        config = {"configurable": {"thread_id": "t"}}
        checkpoints = [found async for found in saver.alist(config)]
        assert len(checkpoints) > 40
        seeded = 0
        for found in checkpoints:
            walked = await BaseCheckpointSaver.aget_delta_channel_history(
                saver, config=found.config, channels=CHANNELS
            )
            paged = await saver.aget_delta_channel_history(config=found.config, channels=CHANNELS)
            assert paged == walked
            assert saver.get_delta_channel_history(config=found.config, channels=CHANNELS) == walked
            seeded += "seed" in walked["items"]
        # Walks that stop at a snapshot and walks to the root both ran.
        assert 0 < seeded < len(checkpoints)
        assert await saver.aget_delta_channel_history(config=config, channels=[]) == {}
        missing = {"configurable": {"thread_id": "none", "checkpoint_ns": ""}}
        nothing = {channel: {"writes": []} for channel in CHANNELS}
        assert await saver.aget_delta_channel_history(config=missing, channels=CHANNELS) == nothing


def _thread_reads(server: ServerProcess) -> float:
    """GET requests the server answered on a thread's checkpoint routes."""
    metrics = httpx.get(f"{server.base_url}/metrics").text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("session_state_http_requests_total{")
        and 'method="GET"' in line
        and "/threads/{thread_id}/checkpoints" in line
    )


async def test_a_long_history_is_read_in_pages_not_one_request_per_ancestor(
    server: ServerProcess,
):
    async with _saver(server) as saver:
        graph = _graph(saver)
        config = {"configurable": {"thread_id": "long"}}
        n = 0
        for _ in range(40):
            n = (await graph.ainvoke({"n": n}, config))["n"]
        latest = await saver.aget_tuple(config)
        assert latest is not None

        before = _thread_reads(server)
        paged = await saver.aget_delta_channel_history(config=latest.config, channels=["notes"])
        paged_requests = _thread_reads(server) - before
        before = _thread_reads(server)
        walked = await BaseCheckpointSaver.aget_delta_channel_history(
            saver, config=latest.config, channels=["notes"]
        )
        walked_requests = _thread_reads(server) - before

    assert paged == walked
    # "notes" has no snapshot: both walk every one of the 120 ancestors.
    assert len(paged["notes"]["writes"]) == 8
    assert walked_requests > 100
    # The checkpoint, then two pages of 100.
    assert paged_requests == 3


async def test_a_parent_whose_id_sorts_after_its_childs_is_still_walked(server: ServerProcess):
    """Checkpoints put by hand need not have LangGraph's time-ordered ids:
    a parent that no page of older checkpoints holds is read by id, as the
    base walk reads it, down to the seed."""
    async with _saver(server) as saver:
        thread = {"thread_id": "by-hand", "checkpoint_ns": ""}
        parent: str | None = None
        # The root holds the seed; each later checkpoint has a smaller id.
        for checkpoint_id, values in (("z", {"items": ["seed"]}), ("m", {}), ("b", {})):
            checkpoint = empty_checkpoint()
            checkpoint["id"] = checkpoint_id
            checkpoint["channel_values"] = values
            versions = {channel: saver.get_next_version(None, None) for channel in values}
            checkpoint["channel_versions"] = versions
            config = {"configurable": {**thread, "checkpoint_id": parent}}
            stored = await saver.aput(config, checkpoint, {"step": 0}, versions)
            await saver.aput_writes(stored, [("items", f"written at {checkpoint_id}")], "task")
            parent = checkpoint_id
        target = {"configurable": {**thread, "checkpoint_id": "b"}}
        walked = await BaseCheckpointSaver.aget_delta_channel_history(
            saver, config=target, channels=["items"]
        )
        paged = await saver.aget_delta_channel_history(config=target, channels=["items"])
        # The seed's checkpoint's own writes count, as the base walk has it.
        written = [("task", "items", f"written at {name}") for name in ("z", "m")]
        assert walked == {"items": {"writes": written, "seed": ["seed"]}}
        assert paged == walked
        assert saver.get_delta_channel_history(config=target, channels=["items"]) == walked


_LOOPS_PROGRAM = """
import asyncio, sys
from tests.client.own_loops import on_threads_and_loops
from langgraph.checkpoint.base import BaseCheckpointSaver
from session_state_client.langgraph import SessionStateSaver
from tests.client.test_langgraph_delta_channels import CHANNELS, _graph

base_url, app_name = sys.argv[1], sys.argv[2]
saver = SessionStateSaver(base_url, app_name=app_name)
failures = []

async def turns(thread_id):
    graph, config = _graph(saver), {"configurable": {"thread_id": thread_id}}
    n = 0
    for _ in range(6):
        n = (await graph.ainvoke({"n": n}, config))["n"]
    latest = await saver.aget_tuple(config)
    paged = await saver.aget_delta_channel_history(config=latest.config, channels=CHANNELS)
    walked = await BaseCheckpointSaver.aget_delta_channel_history(
        saver, config=latest.config, channels=CHANNELS
    )
    items = (await graph.aget_state(config)).values["items"]
    if paged != walked or len(items) != 12:
        failures.append((thread_id, len(items)))

on_threads_and_loops(lambda thread, loop: turns(f"t{thread}-{loop}"))
saver.close()
print("failures:", failures)
print("done")
"""


def test_threads_each_on_its_own_loop_walk_histories_and_close_cleanly(server: ServerProcess):
    """As LangGraph's sync callers and ADK's sync Runner.run do: four OS
    threads, each running two event loops in turn, run DeltaChannel graphs
    and read their histories through one saver, which then closes with
    nothing left unclosed."""
    runs_cleanly(_LOOPS_PROGRAM, server.base_url, f"lg-{uuid.uuid4().hex[:10]}")
