"""Appends sent together: the appends a client's callers make in one turn
of the event loop, or while the app's requests are in flight, go to the
server in one request (`POST /apps/{app}/appends`), each answered on its own.

Why: an agent server appends to many conversations at once, and each
request costs the client, the server's HTTP stack and the server's task
about as much as the append itself (docs/performance.md). Sent together,
they share that cost, and the server's group commit stores them in one
statement as it would concurrent requests.

Nothing changes for a caller but when its append leaves. An append made
while fewer than `MAX_IN_FLIGHT` of its app's requests are out leaves at
the end of the current turn of the loop, with the appends other callers
make in the same turn (the conversations one answer woke): alone when
there are none, so a lone conversation waits for nothing but that turn.
What gathers is split among the free requests when each part would hold at
least `MIN_PART` appends, so that the server works on one part while the
next is sent and their answers wake their callers apart; fewer go in one
request, whose fixed costs they then share. Appends made while the
requests are out wait for one to end, then go together. Each append of a
request gets the answer, the exception and the retries it would have had
alone. A request the server refuses whole as an older server does (the
route unknown: `route_unknown`), or for a body above its limit, is sent
again as single appends; refused whole with a problem of its own (a
gateway's 404, say), that problem is each append's answer. Only
the async client sends appends together (the sync client's callers are
threads, each waiting on its own request).
"""

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import pydantic_core

from session_state_client import _requests
from session_state_client._constants import RETRYABLE_STATUSES
from session_state_client._exceptions import APIStatusError, result_error, route_unknown
from session_state_client._gathering import Gatherer
from session_state_client._models import AppendResult
from session_state_client._requests import Answer, Call
from session_state_client._revisions import SeenRevisions

T = TypeVar("T")
Send = Callable[[Call[T]], Awaitable[T]]

# An app's append requests out at once, per event loop, before appends wait
# for one to end (the server's group commit keeps two batches in flight too).
MAX_IN_FLIGHT = 2
# The server's limit (MAX_APPENDS_PER_REQUEST).
MAX_TOGETHER = 100
# The fewest appends a part may hold when what gathered is split among free
# requests: below it, one request's own cost (client, server and statement)
# outweighs what working on two parts at once saves (docs/performance.md).
MIN_PART = 15
# Statuses of a request refused whole that single appends may not meet: the
# body too large, or the wrapper refused. (An unknown route, an older server's
# answer, is told apart by route_unknown.)
_SENT_ALONE_AFTER = frozenset({413, 422})


@dataclass(eq=False)
class _Waiting:
    call: Call[AppendResult]
    user_id: str
    session_id: str
    event: Any
    if_match: int | None
    answer: "asyncio.Future[AppendResult]"


class AppendCoalescer:
    def __init__(self, send: Send[Any], seen: SeenRevisions, *, together: bool = True) -> None:
        """`send`: the client's own (retries included); `seen`: its revisions;
        `together`: False sends every append as a request of its own."""
        self._send = send
        self._seen = seen
        # Each app's appends gather apart (an app's key may reach only it).
        self.gathering: Gatherer[_Waiting] = Gatherer(
            self._send_together,
            max_in_flight=MAX_IN_FLIGHT,
            max_together=MAX_TOGETHER,
            split=self._split,
        )
        # Cleared when the server does not know the route: appends go alone.
        self.server_takes_many = True
        self.min_part = MIN_PART
        # Off: every append is a request of its own.
        self.together = together

    async def send(
        self, app_name: str, user_id: str, session_id: str, event: Any, if_match: int | None
    ) -> AppendResult:
        """The append of `event` (a dict with its id, or encoded JSON)."""
        call = _requests.append_event(app_name, user_id, session_id, event, if_match)
        if not (self.together and self.server_takes_many):
            result: AppendResult = await self._send(call)
            return result
        mine = _Waiting(
            call, user_id, session_id, event, if_match, asyncio.get_running_loop().create_future()
        )
        return await self.gathering.submit(app_name, mine, lambda: self._send(call))

    def _split(self, batch: Sequence[_Waiting], free: int) -> list[list[_Waiting]]:
        """The batch in as many requests as are `free` and it fills with
        `min_part` appends each, in near-equal parts, oldest first: while
        the server works on one part, this process sends the next, and their
        answers come back apart, so the callers they wake do not all wait on
        one request. A smaller batch goes whole. A session's appends stay in
        one part, in their order (the server runs a request's appends to one
        session in order; two requests, at once)."""
        count = max(1, min(free, len(batch) // self.min_part))
        size = -(-len(batch) // count)
        parts: list[list[_Waiting]] = [[]]
        part_of: dict[str | None, list[_Waiting]] = {}
        for waiting in batch:
            part = part_of.get(waiting.call.session)
            if part is None:
                if len(parts[-1]) >= size and len(parts) < count:
                    parts.append([])
                part = part_of[waiting.call.session] = parts[-1]
            part.append(waiting)
        return parts

    async def _send_together(self, app_name: str, batch: Sequence[_Waiting]) -> None:
        if len(batch) == 1:
            await _settle(batch[0], self._send(batch[0].call))
        else:
            await self._send_many(app_name, batch)

    async def _send_many(self, app_name: str, batch: Sequence[_Waiting]) -> None:
        call = _appends_call(app_name, batch)
        try:
            answer = await self._send(call)
        except APIStatusError as refused:
            if route_unknown(refused):
                self.server_takes_many = False
            elif refused.status_code not in _SENT_ALONE_AFTER:
                raise
            await self._send_alone(batch)
            return
        results = answer.body["results"]
        alone: list[_Waiting] = []
        for waiting, result in zip(batch, results, strict=True):
            status, revision = result["status"], result.get("revision")
            # Written, whether or not its caller still waits: reads see it.
            self._seen.see("note", waiting.call.session, revision)
            if waiting.answer.done():
                continue
            if status < 400:
                waiting.answer.set_result(
                    AppendResult.model_construct(
                        event=result["event"],
                        revision=revision,
                        persisted=revision is not None,
                        replayed=revision is not None and status == 200,
                    )
                )
            elif status in RETRYABLE_STATUSES:
                alone.append(waiting)  # retried as a single append would be
            else:
                waiting.answer.set_exception(_item_error(answer.response, status, result))
        if alone:
            await self._send_alone(alone)

    async def _send_alone(self, batch: Sequence[_Waiting]) -> None:
        """Each append as a single request; a session's in their order."""
        by_session: dict[str | None, list[_Waiting]] = {}
        for waiting in batch:
            by_session.setdefault(waiting.call.session, []).append(waiting)

        async def in_order(appends: list[_Waiting]) -> None:
            for waiting in appends:
                if not waiting.answer.done():
                    await _settle(waiting, self._send(waiting.call))

        await asyncio.gather(*(in_order(appends) for appends in by_session.values()))


async def _settle(waiting: _Waiting, sent: Awaitable[AppendResult]) -> None:
    """The waiting append's answer: the result or the error of `sent`."""
    try:
        result = await sent
    except asyncio.CancelledError:
        raise
    except Exception as error:
        if not waiting.answer.done():
            waiting.answer.set_exception(error)
        return
    if not waiting.answer.done():
        waiting.answer.set_result(result)


@dataclass(frozen=True)
class _Answers:
    body: dict[str, Any]
    response: Answer


def _appends_call(app_name: str, batch: Sequence[_Waiting]) -> Call[_Answers]:
    items = []
    for waiting in batch:
        head: dict[str, Any] = {"userId": waiting.user_id, "sessionId": waiting.session_id}
        if waiting.if_match is not None:
            head["ifMatch"] = waiting.if_match
        # The event spliced in as encoded (an ADK event comes as bytes already).
        event = _requests.encode(waiting.event)
        items.append(pydantic_core.to_json(head)[:-1] + b',"event":' + event + b"}")
    body = b'{"appends":[' + b",".join(items) + b"]}"
    return Call(
        "POST",
        _requests.appends_path(app_name),
        lambda response: _Answers(pydantic_core.from_json(response.content), response),
        json=body,
        # Every event carries its id: the server answers a repeat as a retry.
        repeatable=True,
    )


def _item_error(response: Answer, status: int, result: dict[str, Any]) -> APIStatusError:
    """The exception a single append would have raised for `result`."""
    url = str(response.request.url if isinstance(response, httpx.Response) else response.url)
    request_id = response.headers.get("x-request-id")
    return result_error(url, status, result.get("problem"), request_id)


class DirectAppends:
    """The sync client's appends: each its own request."""

    def __init__(
        self,
        send: Callable[[Call[AppendResult]], AppendResult],
        seen: SeenRevisions,
        *,
        together: bool = True,
    ):
        # `seen` and `together` go unused: the generated client builds both
        # alike, `send` records each answer's revision itself, and every
        # append goes alone.
        self._send = send

    def send(
        self, app_name: str, user_id: str, session_id: str, event: Any, if_match: int | None
    ) -> AppendResult:
        return self._send(_requests.append_event(app_name, user_id, session_id, event, if_match))
