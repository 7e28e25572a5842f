"""A scripted LangGraph graph (no LLM) with an interrupt, and a command line
that runs one phase of it in a process of its own:

    python -m tests.client.langgraph_scripted BASE_URL APP THREAD start|resume

prints the graph's state and history as JSON (what `summary` gives)."""

import json
import operator
import sys
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from session_state_client.langgraph import SessionStateSaver


class Ticket(TypedDict):
    steps: Annotated[list[str], operator.add]
    text: str
    decision: str


def triage(state: Ticket) -> dict[str, Any]:
    return {"steps": ["triage"], "text": state["text"].strip().lower()}


def draft(state: Ticket) -> dict[str, Any]:
    return {"steps": [f"draft:{len(state['text'])}"]}


def review(state: Ticket) -> dict[str, Any]:
    decision = interrupt({"question": "send this reply?", "text": state["text"]})
    return {"steps": ["review"], "decision": decision}


def send(state: Ticket) -> dict[str, Any]:
    return {"steps": [f"send:{state['decision']}"]}


def build(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(Ticket)
    for name, node in (("triage", triage), ("draft", draft), ("review", review), ("send", send)):
        graph.add_node(name, node)
    graph.add_edge(START, "triage")
    graph.add_edge("triage", "draft")
    graph.add_edge("draft", "review")
    graph.add_edge("review", "send")
    graph.add_edge("send", END)
    return graph.compile(checkpointer=checkpointer)


FIRST_INPUT = {"steps": [], "text": "  My Order Never Arrived  ", "decision": ""}
RESUME_WITH = "approved"


def start(graph: Any, config: dict[str, Any]) -> None:
    graph.invoke(FIRST_INPUT, config)


def resume(graph: Any, config: dict[str, Any]) -> None:
    graph.invoke(Command(resume=RESUME_WITH), config)


def summary(graph: Any, config: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on the checkpointer: the state, and each step of
    the history (ids and times differ from run to run)."""

    def snapshot(state: Any) -> dict[str, Any]:
        return {
            "values": state.values,
            "next": list(state.next),
            "step": state.metadata["step"],
            "source": state.metadata["source"],
            "interrupts": [
                interrupt.value for task in state.tasks for interrupt in task.interrupts
            ],
            "has_parent": state.parent_config is not None,
        }

    return {
        "state": snapshot(graph.get_state(config)),
        "history": [snapshot(state) for state in graph.get_state_history(config)],
    }


def build_counter(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """One node that adds the input's step to the list: each turn of a thread
    is one invoke."""
    graph = StateGraph(Ticket)
    graph.add_node("note", lambda state: {"steps": [f"seen:{len(state['steps'])}"]})
    graph.add_edge(START, "note")
    graph.add_edge("note", END)
    return graph.compile(checkpointer=checkpointer)


def meet(directory: Path, name: str, peers: int) -> None:
    """Waits until `peers` processes (this one among them) reached here: a
    process that started slower would otherwise find the other's turns done."""
    (directory / name).touch()
    deadline = time.monotonic() + 120
    while len(list(directory.iterdir())) < peers:
        if time.monotonic() > deadline:
            raise SystemExit(f"{name}: the other writers never came")
        time.sleep(0.01)


def hammer(
    checkpointer: BaseCheckpointSaver[Any], name: str, turns: int, meeting: tuple[Path, int]
) -> None:
    """`turns` turns on a thread of this process's own and on the shared one,
    interleaved; started when all writers are ready (`meeting`: a directory
    and how many)."""
    graph = build_counter(checkpointer)
    meet(meeting[0], name, meeting[1])
    for turn in range(turns):
        for thread_id in (f"own-{name}", "shared"):
            config = {"configurable": {"thread_id": thread_id}}
            graph.invoke({"steps": [f"{name}:{turn}"], "text": "", "decision": ""}, config)


def main() -> None:
    if sys.argv[1] == "hammer":
        # hammer session BASE_URL APP NAME TURNS MEETING_DIR WRITERS
        # hammer postgres DSN - NAME TURNS MEETING_DIR WRITERS
        kind, target, app_name, name, turns, directory, writers = sys.argv[2:9]
        meeting = (Path(directory), int(writers))
        if kind == "postgres":
            from langgraph.checkpoint.postgres import PostgresSaver

            with PostgresSaver.from_conn_string(target) as postgres:
                hammer(postgres, name, int(turns), meeting)
        else:
            with SessionStateSaver(target, app_name=app_name) as saver:
                hammer(saver, name, int(turns), meeting)
        return
    base_url, app_name, thread_id, phase = sys.argv[1:5]
    config = {"configurable": {"thread_id": thread_id, "user_id": "alice"}}
    with SessionStateSaver(base_url, app_name=app_name) as saver:
        graph = build(saver)
        (start if phase == "start" else resume)(graph, config)
        print(json.dumps(summary(graph, config)))


if __name__ == "__main__":
    main()
