"""Group commit: appends that arrive while earlier ones are at the database
wait, and go together in one statement.

Each request still gets its own answer. A batch holds at most one append per
session, taken in arrival order, so a session's appends are sent in the
order they came and no statement bumps one session row twice.

The batch statement never waits for a session that another transaction
holds (a fork copying its history, an erasure, a lock of a test): it answers
"held" for that append, which is then sent by itself, outside the batches,
and waits there. So one held session delays its own appends only. When a
batch fails as a whole with an error of the kind one item can cause (an
event id stored by a concurrent transaction, a deadlock), every item of it
is sent by itself the same way, so one append's conflict never fails its
neighbours; an error that says the database cannot serve (it is
unreachable, a timeout) is every item's answer.

An append waits for a batch to take it at most `max_wait` seconds (the
database timeout), then fails as the database's own timeout does.

With nothing at the database there is no wait: an append is sent at once.
Batches form only under load, and grow with it.
"""

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..core.metrics import APPEND_BATCH_SIZE

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(eq=False)
class _Waiting(Generic[Item, Result]):
    item: Item
    key: Hashable
    answer: "asyncio.Future[Result]"
    taken: bool = field(default=False)
    # Fails the answer if no batch takes the append in time; cancelled once one does.
    deadline: asyncio.TimerHandle | None = field(default=None)


class AppendBatcher(Generic[Item, Result]):
    def __init__(
        self,
        *,
        run_batch: Callable[[list[Item]], Awaitable[list[Result | None]]],
        run_one: Callable[[Item], Awaitable[Result]],
        session_of: Callable[[Item], Hashable],
        runs_singly: Callable[[Exception], bool],
        timed_out: Callable[[], Exception],
        max_items: int,
        max_in_flight: int,
        max_wait: float,
    ) -> None:
        """`run_batch` answers each item in order, None for one whose session
        was held (sent again by itself, with `run_one`); `runs_singly` says
        whether a batch's error may be one item's doing. At most
        `max_in_flight` batches are at the database at once; `timed_out` is
        the error of an append no batch took within `max_wait` seconds."""
        self._run_batch = run_batch
        self._run_one = run_one
        self._session_of = session_of
        self._runs_singly = runs_singly
        self._timed_out = timed_out
        self._max_items = max_items
        self._max_in_flight = max_in_flight
        self._max_wait = max_wait
        self._waiting: deque[_Waiting[Item, Result]] = deque()
        self._in_flight = 0
        # Strong references to running tasks (the loop keeps weak ones).
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, item: Item) -> Result:
        loop = asyncio.get_running_loop()
        waiting: _Waiting[Item, Result] = _Waiting(
            item, self._session_of(item), loop.create_future()
        )
        deadline = waiting.deadline = loop.call_later(self._max_wait, self._time_out, waiting)
        self._waiting.append(waiting)
        if self._in_flight < self._max_in_flight:
            self._in_flight += 1
            self._start(self._flush())
        try:
            return await waiting.answer
        except asyncio.CancelledError:
            # The request went away: unsent, it stays unsent.
            waiting.answer.cancel()
            deadline.cancel()
            raise

    def _time_out(self, waiting: _Waiting[Item, Result]) -> None:
        """No batch took the append within `max_wait`: it fails, and a later
        batch drops it unsent (its answer is done). One taken waits for its
        batch's answer, however long the statement's own timeout lets it."""
        if not waiting.taken:
            _fail(waiting, self._timed_out())

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _flush(self) -> None:
        try:
            while batch := self._take_batch():
                await self._answer(batch)
        finally:
            self._in_flight -= 1

    def _take_batch(self) -> list[_Waiting[Item, Result]]:
        """The oldest waiting appends, one per session; a session's later
        appends keep their place for the next batch. Appends whose request
        has gone (their answer cancelled) are dropped unsent."""
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
            waiting.taken = True
            if waiting.deadline is not None:
                waiting.deadline.cancel()
            batch.append(waiting)
        later.extend(self._waiting)
        self._waiting = later
        return batch

    async def _answer(self, batch: list[_Waiting[Item, Result]]) -> None:
        APPEND_BATCH_SIZE.observe(len(batch))
        try:
            results = await self._run_batch([waiting.item for waiting in batch])
        except asyncio.CancelledError:
            # The server is stopping: nobody is left waiting.
            for waiting in batch:
                waiting.answer.cancel()
            raise
        except Exception as error:
            if not self._runs_singly(error):
                for waiting in batch:
                    _fail(waiting, error)
                return
            for waiting in batch:
                self._start(self._answer_singly(waiting))
            return
        for waiting, result in zip(batch, results, strict=True):
            if result is None:
                # Sent by itself, outside the batches: it may wait for a lock.
                self._start(self._answer_singly(waiting))
            else:
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
