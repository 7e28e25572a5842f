"""Threads' batches sent together: the LangGraph saver's batches of many
threads, made in one turn of the event loop or while its requests are in
flight, go to the server in one request (`POST
/apps/{app}/thread-operations`), each answered on its own.

Why: an agent server runs many graphs at once, and each request costs the
client, the server's HTTP stack and its task about as much as the
statements behind it (docs/performance.md). Sent together, the threads'
batches share that cost, as the appends to many sessions share theirs
(session_state_client._coalescing).

What a thread sees does not change: its calls are still answered in
order, one request of its in flight at a time. A batch made while fewer
than `max_in_flight` of these requests are out leaves at the end of the
current turn of the loop, with the batches other threads make in that
turn: alone, to its own thread's route, when there are none, so that a
lone thread waits for nothing but that turn. Batches made while the
requests are out wait for one to end, then go together.
"""

import asyncio
import threading
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")

# Requests of several threads out at once, per event loop, before batches
# wait for one to end.
MAX_IN_FLIGHT = 2
# The server's limit (MAX_THREAD_BATCHES_PER_CALL).
MAX_TOGETHER = 100


@dataclass(eq=False)
class ThreadBatch(Generic[Item]):
    """A thread's calls that go in one request of its own route, or in one
    entry of a request of several threads."""

    thread_id: str
    items: Sequence[Item]
    # Set once the batch was sent and each of its items settled.
    sent: "asyncio.Future[None]"


class _LoopRequests(Generic[Item]):
    def __init__(self) -> None:
        self.in_flight = 0
        self.waiting: deque[ThreadBatch[Item]] = deque()
        # A request is taken and leaves at the end of this turn of the loop.
        self.gathering = False


SendAlone = Callable[[str, Sequence[Item]], Awaitable[None]]
SendTogether = Callable[[Sequence[ThreadBatch[Item]]], Awaitable[None]]


class ThreadGathering(Generic[Item]):
    def __init__(
        self,
        send_alone: SendAlone[Item],
        send_together: SendTogether[Item],
        weigh: Callable[[Sequence[Item]], int],
        max_weight: int,
    ) -> None:
        """`send_alone`: sends a thread's batch by its own route and settles
        its items, never raising; `send_together`: the same for several
        threads' batches in one request; `weigh`: a batch's bytes, of which
        a request of several holds at most `max_weight` (a batch heavier
        than that goes alone)."""
        self._send_alone = send_alone
        self._send_together = send_together
        self._weigh = weigh
        self._max_weight = max_weight
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopRequests[Item]]
        self._by_loop = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        # Strong references to running tasks (the loop keeps weak ones).
        self._tasks: set[asyncio.Task[None]] = set()
        self.max_in_flight = MAX_IN_FLIGHT

    async def send(self, thread_id: str, items: Sequence[Item]) -> None:
        """Returns once the batch was sent and each item settled."""
        loop = asyncio.get_running_loop()
        requests = self._by_loop.get(loop)
        if requests is None:
            with self._lock:  # each thread of a sync caller may run a loop of its own
                requests = self._by_loop.setdefault(loop, _LoopRequests())
        mine = ThreadBatch(thread_id, items, loop.create_future())
        requests.waiting.append(mine)
        if requests.gathering or requests.in_flight >= self.max_in_flight:
            await mine.sent
            return
        # A request is free: this caller sends it after one turn of the loop,
        # so that the batches other threads make in that turn go with it.
        requests.gathering = True
        requests.in_flight += 1
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            mine.sent.cancel()
            requests.gathering = False
            self._done(requests)
            raise
        requests.gathering = False
        taken = self._take(requests)
        if taken == [mine]:
            try:
                await self._send_alone(thread_id, items)
            finally:
                mine.sent.set_result(None)
                self._done(requests)
            return
        self._start(self._send(requests, taken))
        await mine.sent

    def _take(self, requests: _LoopRequests[Item]) -> list[ThreadBatch[Item]]:
        """The batches waiting, oldest first, as many as go together (at
        least one); those whose waiter has gone (cancelled) are dropped unsent."""
        taken: list[ThreadBatch[Item]] = []
        weight = 0
        while requests.waiting and len(taken) < MAX_TOGETHER:
            batch = requests.waiting[0]
            if batch.sent.done():
                requests.waiting.popleft()
                continue
            weight += self._weigh(batch.items)
            if taken and weight > self._max_weight:
                break
            taken.append(requests.waiting.popleft())
        return taken

    def _done(self, requests: _LoopRequests[Item]) -> None:
        """A request ended: the batches waiting go together at the end of
        this turn of the loop (with those its answers lead to)."""
        requests.in_flight -= 1
        if requests.waiting and not requests.gathering:
            requests.gathering = True
            requests.in_flight += 1
            asyncio.get_running_loop().call_soon(self._send_gathered, requests)

    def _send_gathered(self, requests: _LoopRequests[Item]) -> None:
        requests.gathering = False
        taken = self._take(requests)
        if taken:
            self._start(self._send(requests, taken))
        else:
            self._done(requests)

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, requests: _LoopRequests[Item], taken: list[ThreadBatch[Item]]) -> None:
        try:
            if len(taken) == 1:
                await self._send_alone(taken[0].thread_id, taken[0].items)
            else:
                await self._send_together(taken)
        finally:
            for batch in taken:
                if not batch.sent.done():
                    batch.sent.set_result(None)
            self._done(requests)
