"""Live streams of a session's changes, read from storage by revision.

A stream knows the last revision its reader has (`last`); woken by a hint
(app.changes) or by its heartbeat, it reads the changes after it from the
primary in one snapshot and sends them in revision order: each event as
`appended` (its id is the revision its append made, the ETag the append
answered), each removal as `removed`. Storage is the only source of what is
sent, so a resume after any revision, a lost hint or a hint for changes
already sent can neither skip nor repeat a change. The stream watches for
hints before it reads the session first, so nothing committed after it opened
can be missed.
"""

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Literal

from . import json_codec
from .changes import ChangeHub, Waiter
from .db.store import Store
from .domain import SessionChanges, SessionKey
from .errors import FieldError, InvalidInput, SessionNotFound

# Events read from storage at once, and their JSON bytes (after the first):
# what one stream holds in memory while its reader takes them.
READ_BATCH_EVENTS = 100
READ_BATCH_BYTES = 1024 * 1024

MessageKind = Literal["appended", "removed", "deleted"]


@dataclass(frozen=True)
class StreamMessage:
    """One Server-Sent Event: `id` None for `deleted` (the reader keeps the
    id of the last change it has)."""

    event: MessageKind
    data: str
    id: int | None = None


# A heartbeat is due: the stream sends a comment line.
HEARTBEAT = None
StreamItem = StreamMessage | None


class SessionStream:
    """One reader following one session; `open` first (it raises the
    problems answered before streaming), then iterate `messages`."""

    def __init__(
        self,
        store: Store,
        hub: ChangeHub,
        key: SessionKey,
        *,
        heartbeat_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.hub = hub
        self.key = key
        self.heartbeat_seconds = heartbeat_seconds
        self.clock = clock
        self.last = 0
        self.expire_time: float | None = None
        self._watch = hub.watch(key.app_name, key.user_id, key.session_id)
        self._waiter: Waiter | None = None

    async def open(self, after: int | None, *, after_field: list[str | int]) -> None:
        """Starts after revision `after` (None: the current one). Raises
        SessionNotFound, or InvalidInput when `after` is past the session's
        revision (a session deleted and created again, or a made-up id)."""
        self._waiter = self._watch.__enter__()
        try:
            session = await self.store.read_session(self.key, self.clock())
            if session is None:
                raise SessionNotFound.of(self.key)
            if after is not None and after > session.revision:
                raise InvalidInput(
                    [
                        FieldError(
                            after_field,
                            f"the session is at revision {session.revision}, before {after}: "
                            "it was deleted and created again, or the id is not one of its",
                        )
                    ]
                )
        except BaseException:
            self.close()
            raise
        self.last = session.revision if after is None else after
        self.expire_time = session.expire_time

    def close(self) -> None:
        if self._waiter is not None:
            self._waiter = None
            self._watch.__exit__(None, None, None)

    async def messages(self) -> AsyncGenerator[StreamItem, None]:
        """The changes after `last`, then each as it comes, with a
        HEARTBEAT whenever `heartbeat_seconds` pass without a message; ends
        after `deleted`."""
        waiter = self._waiter
        assert waiter is not None, "open() first"
        try:
            heartbeat_at = time.monotonic() + self.heartbeat_seconds
            while True:
                waiter.flag.clear()  # a hint arriving while we read wakes us again
                sent = False
                async for message in self._read():
                    sent = True
                    yield message
                    if message.event == "deleted":
                        return
                if sent:
                    heartbeat_at = time.monotonic() + self.heartbeat_seconds
                woken = await self._wait(waiter, heartbeat_at)
                if not woken and time.monotonic() >= heartbeat_at:
                    yield HEARTBEAT
                    heartbeat_at = time.monotonic() + self.heartbeat_seconds
        finally:
            self.close()

    async def _wait(self, waiter: Waiter, heartbeat_at: float) -> bool:
        """Whether a hint came before the heartbeat (or expiry) was due."""
        timeout = heartbeat_at - time.monotonic()
        if self.expire_time is not None:
            timeout = min(timeout, self.expire_time - self.clock())
        try:
            await asyncio.wait_for(waiter.flag.wait(), max(timeout, 0.0))
        except TimeoutError:
            return False
        return True

    async def _read(self) -> AsyncIterator[StreamMessage]:
        more = True
        while more:
            changes = await self.store.read_changes(
                self.key, self.last, READ_BATCH_EVENTS, READ_BATCH_BYTES, self.clock()
            )
            if changes is None or changes.revision < self.last:
                # Deleted, expired or erased (or deleted and created again).
                yield StreamMessage("deleted", json_codec.dumps_text(self._deleted()))
                return
            self.expire_time = changes.expire_time
            for message in _in_revision_order(changes):
                yield message
                assert message.id is not None
                self.last = message.id
            self.last = max(self.last, changes.up_to)
            more = changes.more

    def _deleted(self) -> dict[str, object]:
        return {"sessionId": self.key.session_id, "revision": self.last}


def _in_revision_order(changes: SessionChanges) -> list[StreamMessage]:
    messages = [StreamMessage("appended", event.data, event.seq) for event in changes.events]
    messages += [
        StreamMessage(
            "removed",
            json_codec.dumps_text(
                {"removedEventIds": removal.event_ids, "revision": removal.revision}
            ),
            removal.revision,
        )
        for removal in changes.removals
    ]
    messages.sort(key=lambda message: message.id or 0)
    return messages


def event_stream_bytes(item: StreamItem) -> bytes:
    """One message as text/event-stream. The data is compact JSON (one line:
    no newline can be in it), the event name and id ours."""
    if item is None:
        return b": heartbeat\n\n"
    head = f"event: {item.event}\n"
    if item.id is not None:
        head = f"id: {item.id}\n" + head
    return (head + f"data: {item.data}\n\n").encode()
