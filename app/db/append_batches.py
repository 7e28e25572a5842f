"""Group commit: appends that arrive while earlier ones are at the database
wait, and go together in one statement.

Each request still gets its own answer. A batch holds at most one append per
session, taken in arrival order, so a session's appends are sent in the
order they came and no statement bumps one session row twice. When a batch
fails as a whole with an error of the kind one item can cause (an event id
stored by a concurrent transaction, a deadlock between two processes'
batches), every item of it is run by itself, so one append's conflict never
fails its neighbours; an error that says the database cannot serve (it is
unreachable, a timeout) is every item's answer.

With nothing at the database there is no wait: an append is sent at once.
Batches form only under load, and grow with it.
"""

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ..metrics import APPEND_BATCH_SIZE

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(eq=False)
class _Waiting(Generic[Item, Result]):
    item: Item
    key: Hashable
    answer: "asyncio.Future[Result]" = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class AppendBatcher(Generic[Item, Result]):
    def __init__(
        self,
        *,
        run_batch: Callable[[list[Item]], Awaitable[list[Result]]],
        run_one: Callable[[Item], Awaitable[Result]],
        session_of: Callable[[Item], Hashable],
        runs_singly: Callable[[Exception], bool],
        max_items: int,
        max_in_flight: int,
    ) -> None:
        """`run_batch` answers each item in order; `runs_singly` says whether
        its error may be one item's doing (then each item runs by itself).
        At most `max_in_flight` batches are at the database at once."""
        self._run_batch = run_batch
        self._run_one = run_one
        self._session_of = session_of
        self._runs_singly = runs_singly
        self._max_items = max_items
        self._max_in_flight = max_in_flight
        self._waiting: deque[_Waiting[Item, Result]] = deque()
        self._in_flight = 0
        # Strong references to the running flushes (the loop keeps weak ones).
        self._flushes: set[asyncio.Task[None]] = set()

    async def submit(self, item: Item) -> Result:
        waiting: _Waiting[Item, Result] = _Waiting(item, self._session_of(item))
        self._waiting.append(waiting)
        if self._in_flight < self._max_in_flight:
            self._in_flight += 1
            flush = asyncio.create_task(self._flush())
            self._flushes.add(flush)
            flush.add_done_callback(self._flushes.discard)
        return await waiting.answer

    async def _flush(self) -> None:
        try:
            while batch := self._take_batch():
                await self._answer(batch)
        finally:
            self._in_flight -= 1

    def _take_batch(self) -> list[_Waiting[Item, Result]]:
        """The oldest waiting appends, one per session; a session's later
        appends keep their place for the next batch. Appends whose request
        has gone (its waiter cancelled) are dropped unsent."""
        batch: list[_Waiting[Item, Result]] = []
        sessions: set[Hashable] = set()
        later: deque[_Waiting[Item, Result]] = deque()
        while self._waiting and len(batch) < self._max_items:
            waiting = self._waiting.popleft()
            if waiting.answer.done():
                continue
            if waiting.key in sessions:
                later.append(waiting)
                continue
            sessions.add(waiting.key)
            batch.append(waiting)
        later.extend(self._waiting)
        self._waiting = later
        return batch

    async def _answer(self, batch: list[_Waiting[Item, Result]]) -> None:
        try:
            await self._send(batch)
        except BaseException:
            # Cancelled (the server is stopping): nobody is left waiting.
            for waiting in batch:
                waiting.answer.cancel()
            raise

    async def _send(self, batch: list[_Waiting[Item, Result]]) -> None:
        APPEND_BATCH_SIZE.observe(len(batch))
        if len(batch) == 1:
            await self._answer_singly(batch[0])
            return
        try:
            results = await self._run_batch([waiting.item for waiting in batch])
        except Exception as error:
            if not self._runs_singly(error):
                for waiting in batch:
                    _fail(waiting, error)
                return
            await asyncio.gather(*(self._answer_singly(waiting) for waiting in batch))
            return
        for waiting, result in zip(batch, results, strict=True):
            _resolve(waiting, result)

    async def _answer_singly(self, waiting: _Waiting[Item, Result]) -> None:
        try:
            result = await self._run_one(waiting.item)
        except Exception as error:
            _fail(waiting, error)
        else:
            _resolve(waiting, result)


# A waiter already done had its request go away: nobody to answer.


def _resolve(waiting: _Waiting[Item, Result], result: Result) -> None:
    if not waiting.answer.done():
        waiting.answer.set_result(result)


def _fail(waiting: _Waiting[Item, Result], error: Exception) -> None:
    if not waiting.answer.done():
        waiting.answer.set_exception(error)
