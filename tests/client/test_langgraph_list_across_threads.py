"""SessionStateSaver's list with no thread (LangGraph's list(None)): the
same graph run on several threads by SessionStateSaver and by LangGraph's
InMemorySaver lists the same checkpoints, with the same filters, limits
and `before`, sync and async, on both backends; newest first across
threads, as PostgresSaver orders them. A config naming only a user lists
that user's threads."""

import uuid
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver

from session_state_client import SessionStateClient
from session_state_client.langgraph import SessionStateSaver
from tests.client import langgraph_scripted as scripted
from tests.client.own_loops import runs_cleanly
from tests.conftest import ServerProcess, run_blocking

THREADS = {"t1": "ada", "t2": "bo", "t3": "ada"}


def run_everywhere(saver: BaseCheckpointSaver[Any]) -> None:
    """The scripted graph on every thread: t1 and t2 to the end, t3 to its interrupt."""
    graph = scripted.build(saver)
    for thread_id, user_id in THREADS.items():
        config = {"configurable": {"thread_id": thread_id, "user_id": user_id}}
        scripted.start(graph, config)
        if thread_id != "t3":
            scripted.resume(graph, config)


def shape(found: list[CheckpointTuple]) -> list[tuple[Any, ...]]:
    """What a checkpoint is, ids and times aside, in a thread-independent order."""
    return sorted(
        (
            item.config["configurable"]["thread_id"],
            item.metadata["step"],
            item.metadata["source"],
            repr(sorted(item.checkpoint["channel_values"].items())),
            len(item.pending_writes or []),
            item.parent_config is not None,
        )
        for item in found
    )


def test_list_none_gives_every_threads_checkpoints_as_in_memory(server: ServerProcess) -> None:
    reference = InMemorySaver()
    run_everywhere(reference)
    with SessionStateSaver(server.base_url, app_name=f"lg-{uuid.uuid4().hex[:10]}") as saver:
        run_everywhere(saver)
        listed = list(saver.list(None))
        assert len(listed) == len(list(reference.list(None))) > len(THREADS)
        assert shape(listed) == shape(list(reference.list(None)))
        # Newest first across threads (checkpoint ids grow with time).
        ids = [item.config["configurable"]["checkpoint_id"] for item in listed]
        assert ids == sorted(ids, reverse=True)
        assert listed[0].config["configurable"]["thread_id"] == "t3"
        # Each is what the thread's own get_tuple gives.
        for item in listed[:5]:
            alone = saver.get_tuple(item.config)
            assert alone is not None and alone.checkpoint == item.checkpoint
            assert alone.pending_writes == item.pending_writes

        for query in ({"source": "input"}, {"step": 2}, {"source": "loop", "step": 1}):
            assert shape(list(saver.list(None, filter=query))) == shape(
                list(reference.list(None, filter=query))
            ), query
        assert [item.config for item in saver.list(None, limit=4)] == [
            item.config for item in listed[:4]
        ]
        before = listed[3].config
        assert [item.config for item in saver.list(None, before=before)] == [
            item.config for item in listed[4:]
        ]
        ada = list(saver.list({"configurable": {"user_id": "ada"}}))
        assert {item.config["configurable"]["thread_id"] for item in ada} == {"t1", "t3"}
        assert shape(ada) == [row for row in shape(listed) if row[0] != "t2"]


def test_alist_none_lists_as_list_does(server: ServerProcess) -> None:
    app_name = f"lg-{uuid.uuid4().hex[:10]}"
    with SessionStateSaver(server.base_url, app_name=app_name) as saver:
        run_everywhere(saver)
        expected = [item.config for item in saver.list(None)]

    async def listed() -> list[Any]:
        async with SessionStateSaver(server.base_url, app_name=app_name) as saver:
            assert [item.config async for item in saver.alist(None, limit=3)] == expected[:3]
            return [item.config async for item in saver.alist(None)]

    assert run_blocking(listed()) == expected


_LOOPS_PROGRAM = """
import asyncio, sys, threading
from session_state_client import AsyncSessionStateClient
from session_state_client.langgraph import SessionStateSaver

base_url, app_name, expected = sys.argv[1], sys.argv[2], int(sys.argv[3])
saver = SessionStateSaver(base_url, app_name=app_name)
client = AsyncSessionStateClient(base_url=base_url)
failures = []

async def read():
    listed = [item async for item in saver.alist(None)]
    memories = [m async for m in client.iter_memories(app_name=app_name, user_id="ada")]
    if len(listed) != expected or [m.id for m in memories] != ["m2", "m1"]:
        failures.append((len(listed), [m.id for m in memories]))

async def reads():
    await asyncio.wait_for(asyncio.gather(*(read() for _ in range(4))), 60)

def worker():
    for _ in range(2):  # two loops, one after the other, on each OS thread
        asyncio.run(reads())

threads = [threading.Thread(target=worker) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
asyncio.run(client.close())
saver.close()
print("failures:", failures)
print("done")
"""


def test_threads_each_on_its_own_loop_list_across_threads_and_close_cleanly(
    server: ServerProcess,
) -> None:
    """As ADK's sync Runner.run and LangGraph's sync callers do: four OS
    threads, each running two event loops in turn, read the app's
    checkpoints and a user's memories through one saver and one async
    client, then close with nothing left unclosed."""
    app_name = f"lg-{uuid.uuid4().hex[:10]}"
    with SessionStateSaver(server.base_url, app_name=app_name) as saver:
        run_everywhere(saver)
        expected = len(list(saver.list(None)))
    with SessionStateClient(base_url=server.base_url) as client:
        memories = [{"id": f"m{n}", "content": {"parts": [{"text": f"fact {n}"}]}} for n in (1, 2)]
        client.add_memory(app_name=app_name, user_id="ada", memories=memories)
    runs_cleanly(_LOOPS_PROGRAM, server.base_url, app_name, str(expected))
