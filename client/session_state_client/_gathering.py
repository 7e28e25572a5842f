"""Calls that gather into shared requests: what callers of one key (an app,
a saver) make in one turn of the event loop, or while that key's requests
are in flight, goes to the server in one request. The mechanism the append
coalescer (session_state_client._coalescing) and the LangGraph saver's
thread gathering (session_state_client._thread_gathering) share; each
says what goes together, how it is split and how it is sent.

A call made while fewer than `max_in_flight` of its key's requests are out
leaves at the end of the current turn of the loop, with the calls other
callers make in that turn: alone, by the caller's own `alone`, when there
are none, so that a lone caller waits for nothing but that turn. Calls made
while the requests are out wait for one to end, then go together. Each
event loop has its own requests (each thread of a sync caller may run a
loop of its own).
"""

import asyncio
import threading
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Generic, Protocol, TypeVar


class Waiting(Protocol):
    """A call waiting for its request: its answer is set once it was sent
    (and cancelled when its caller goes)."""

    @property
    def answer(self) -> "asyncio.Future[Any]": ...


W = TypeVar("W", bound=Waiting)
R = TypeVar("R")

# Sends a part of what gathered and sets each call's answer; an exception
# it raises becomes the answer of each call it left unanswered.
SendPart = Callable[[str, Sequence[W]], Awaitable[None]]
# Splits what gathered into parts, given how many requests are free.
Split = Callable[[Sequence[W], int], list[list[W]]]


class _Lane(Generic[W]):
    """One key's calls on one event loop."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.in_flight = 0
        self.waiting: deque[W] = deque()
        # A request is taken and leaves at the end of this turn of the loop.
        self.gathering = False


def _no_loop() -> None:
    return None


def _whole(taken: Sequence[W], free: int) -> list[list[W]]:
    return [list(taken)]


class Gatherer(Generic[W]):
    def __init__(
        self,
        send: SendPart[W],
        *,
        max_in_flight: int,
        max_together: int,
        split: Split[W] = _whole,
        weigh: Callable[[W], int] | None = None,
        max_weight: int = 0,
    ) -> None:
        """`max_together`: the most calls a request holds; `weigh` and
        `max_weight`: a request holds at most that weight (a heavier call
        goes in one of its own); `split`: parts of what gathered, each a
        request of its own, when more than one request is free."""
        self._send = send
        self._split = split
        self._weigh = weigh
        self._max_weight = max_weight
        self.max_in_flight = max_in_flight
        self.max_together = max_together
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Lane[W]]]
        self._by_loop = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._last: tuple[Callable[[], asyncio.AbstractEventLoop | None], dict[str, _Lane[W]]]
        self._last = (_no_loop, {})
        # Strong references to running tasks (the loop keeps weak ones).
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, key: str, mine: W, alone: Callable[[], Awaitable[R]]) -> R:
        """`mine`'s answer, or `alone()`'s when it leaves by itself (in the
        caller's own task, as it would without gathering)."""
        lane = self._lane(key)
        lane.waiting.append(mine)
        if lane.gathering or lane.in_flight >= self.max_in_flight:
            # Cancelled while waiting: the answer is cancelled with it and never sent.
            result: R = await mine.answer
            return result
        # A request is free: this caller sends it after one turn of the loop,
        # so that the calls other callers make in that turn go with it.
        lane.gathering = True
        lane.in_flight += 1
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            mine.answer.cancel()
            lane.gathering = False
            self._done(lane)
            raise
        lane.gathering = False
        taken = self._take(lane)
        if taken == [mine]:
            try:
                return await alone()
            finally:
                self._done(lane)
        self._send_taken(lane, taken)
        result = await mine.answer
        return result

    def _lane(self, key: str) -> _Lane[W]:
        loop = asyncio.get_running_loop()
        # The common case, one loop, skips the weak mapping's lookup. One
        # tuple, swapped whole: threads on other loops may swap it meanwhile.
        last_loop, lanes = self._last
        if last_loop() is not loop:
            with self._lock:
                lanes = self._by_loop.setdefault(loop, {})
            self._last = (weakref.ref(loop), lanes)
        lane = lanes.get(key)
        if lane is None:
            lane = lanes[key] = _Lane(key)  # only this loop's thread uses `lanes`
        return lane

    def _take(self, lane: _Lane[W]) -> list[W]:
        """The calls waiting, oldest first, as many as go together; those
        whose caller has gone (their answer cancelled) are dropped unsent."""
        taken: list[W] = []
        weight = 0
        while lane.waiting and len(taken) < self.max_together:
            waiting = lane.waiting[0]
            if waiting.answer.done():
                lane.waiting.popleft()
                continue
            if self._weigh is not None:
                weight += self._weigh(waiting)
                if taken and weight > self._max_weight:
                    break
            taken.append(lane.waiting.popleft())
        return taken

    def _done(self, lane: _Lane[W]) -> None:
        """A request ended: the calls waiting go together at the end of this
        turn of the loop (with those its answers lead to)."""
        lane.in_flight -= 1
        if lane.waiting and not lane.gathering:
            lane.gathering = True
            lane.in_flight += 1
            asyncio.get_running_loop().call_soon(self._send_gathered, lane)

    def _send_gathered(self, lane: _Lane[W]) -> None:
        lane.gathering = False
        taken = self._take(lane)
        if taken:
            self._send_taken(lane, taken)
        else:
            self._done(lane)

    def _send_taken(self, lane: _Lane[W], taken: list[W]) -> None:
        """In as many parts as `split` makes of it (one request is taken)."""
        parts = self._split(taken, self.max_in_flight - lane.in_flight + 1)
        lane.in_flight += len(parts) - 1
        for part in parts:
            self._start(self._send_part(lane, part))

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_part(self, lane: _Lane[W], part: list[W]) -> None:
        try:
            await self._send(lane.key, part)
        except asyncio.CancelledError:
            for waiting in part:
                waiting.answer.cancel()
            raise
        except Exception as error:  # no answer at all (after the retries)
            for waiting in part:
                if not waiting.answer.done():
                    waiting.answer.set_exception(error)
        finally:
            self._done(lane)
