"""One SessionStateSession used from many threads at once, each thread with
an event loop of its own (`asyncio.run`, as `Runner.run_sync` and threaded
web servers do): no error, no hang, and nothing lost, on both backends."""

import asyncio
import threading
import time
import uuid
from typing import Any

from session_state_client.openai_agents import SessionStateSession
from tests.conftest import ServerProcess

THREADS = 8
ADDS_PER_THREAD = 5
POPS_PER_THREAD = 2
JOIN_TIMEOUT_SECONDS = 120


def _content(item: Any) -> str:
    content: str = item["content"]
    return content


async def test_one_session_shared_by_threads_with_their_own_loops_loses_nothing(
    server: ServerProcess,
) -> None:
    session = SessionStateSession(
        f"threads-{uuid.uuid4().hex[:8]}",
        app_name="agents-threads",
        user_id="ann",
        base_url=server.base_url,
    )
    # Timed, so that a thread that failed cannot leave the others waiting.
    start = threading.Barrier(THREADS, timeout=JOIN_TIMEOUT_SECONDS)
    all_added = threading.Barrier(THREADS, timeout=JOIN_TIMEOUT_SECONDS)
    errors: list[BaseException] = []
    popped: list[str] = []
    read_back: dict[int, list[str]] = {}
    windows: dict[int, tuple[float, float]] = {}
    lock = threading.Lock()

    async def turns(number: int) -> None:
        for turn in range(ADDS_PER_THREAD):
            await session.add_items([{"role": "user", "content": f"{number}-{turn}"}])
        items = await session.get_items()
        mine = [_content(item) for item in items if _content(item).startswith(f"{number}-")]
        await asyncio.to_thread(all_added.wait)  # no pop before every thread has read
        taken = [await session.pop_item() for _ in range(POPS_PER_THREAD)]
        with lock:
            read_back[number] = mine
            popped.extend(_content(item) for item in taken if item is not None)

    def worker(number: int) -> None:
        start.wait()
        began = time.monotonic()
        try:
            asyncio.run(turns(number))
        except BaseException as error:
            with lock:
                errors.append(error)
        windows[number] = (began, time.monotonic())

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        await asyncio.to_thread(thread.join, JOIN_TIMEOUT_SECONDS)
    try:
        assert not [thread for thread in threads if thread.is_alive()], "threads hung"
        assert errors == []
        # The threads ran at once: every one started before any ended.
        assert max(began for began, _ in windows.values()) < min(
            ended for _, ended in windows.values()
        )

        added = {f"{n}-{turn}" for n in range(THREADS) for turn in range(ADDS_PER_THREAD)}
        # Each thread read its own items back whole and in its order.
        for number, mine in read_back.items():
            assert mine == [f"{number}-{turn}" for turn in range(ADDS_PER_THREAD)]
        assert len(read_back) == THREADS
        remaining = [_content(item) for item in await session.get_items()]
        assert len(popped) == THREADS * POPS_PER_THREAD
        # Every item is either still there or was popped by exactly one thread.
        assert sorted(remaining + popped) == sorted(added)
    finally:
        await session.close()


def test_a_with_block_closes_the_connections_of_every_loop(server: ServerProcess) -> None:
    """Sync code (threads running `asyncio.run`, as `Runner.run_sync` does)
    closes the session with `with`: afterwards it refuses calls, as the
    SDK's sessions do once closed, and every loop's connections are gone."""
    import pytest

    with SessionStateSession(
        f"with-{uuid.uuid4().hex[:8]}",
        app_name="agents-threads",
        user_id="ann",
        base_url=server.base_url,
    ) as session:
        threads = [
            threading.Thread(
                target=asyncio.run,
                args=(session.add_items([{"role": "user", "content": str(number)}]),),
            )
            for number in range(3)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_TIMEOUT_SECONDS)
        # A loop that is still open when the block ends: its pool is closed too.
        loop = asyncio.new_event_loop()
        assert len(loop.run_until_complete(session.get_items())) == 3
    # Closed on that loop while it was idle: nothing is left to finish on it.
    assert session.client._http._by_loop == {}
    assert not [task for task in asyncio.all_tasks(loop) if not task.done()]
    loop.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(session.get_items())
