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
than `MAX_IN_FLIGHT` of these requests are out leaves at the end of the
current turn of the loop, with the batches other threads make in that
turn: alone, to its own thread's route, when there are none, so that a
lone thread waits for nothing but that turn. Batches made while the
requests are out wait for one to end, then go together.
"""

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Generic, TypeVar

from session_state_client._gathering import Gatherer

Item = TypeVar("Item")

# Requests of several threads out at once, per event loop, before batches
# wait for one to end.
MAX_IN_FLIGHT = 2
# The server's limit (MAX_THREAD_BATCHES_PER_CALL).
MAX_TOGETHER = 100
# The saver's batches gather in one lane per event loop (its app's).
_LANE = ""


@dataclass(eq=False)
class ThreadBatch(Generic[Item]):
    """A thread's calls that go in one request of its own route, or in one
    entry of a request of several threads."""

    thread_id: str
    items: Sequence[Item]
    # Set once the batch was sent and each of its items settled.
    answer: "asyncio.Future[None]"


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
        self._gatherer: Gatherer[ThreadBatch[Item]] = Gatherer(
            self._send,
            max_in_flight=MAX_IN_FLIGHT,
            max_together=MAX_TOGETHER,
            weigh=lambda batch: weigh(batch.items),
            max_weight=max_weight,
        )

    async def send(self, thread_id: str, items: Sequence[Item]) -> None:
        """Returns once the batch was sent and each item settled."""
        mine = ThreadBatch(thread_id, items, asyncio.get_running_loop().create_future())
        await self._gatherer.submit(_LANE, mine, partial(self._send_alone, thread_id, items))

    async def _send(self, lane: str, taken: Sequence[ThreadBatch[Item]]) -> None:
        try:
            if len(taken) == 1:
                await self._send_alone(taken[0].thread_id, taken[0].items)
            else:
                await self._send_together(taken)
        finally:
            for batch in taken:
                if not batch.answer.done():
                    batch.answer.set_result(None)
