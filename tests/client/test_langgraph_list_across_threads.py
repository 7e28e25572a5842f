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

from session_state_client.langgraph import SessionStateSaver
from tests.client import langgraph_scripted as scripted
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
