"""Live streams of a session's changes, read from storage by revision.

A stream knows the last revision its reader has (`last`); woken by a hint
(app.streams.changes) or by its heartbeat, it reads the changes after it from the
primary in one snapshot and sends them in revision order: each event as
`appended` (its id is the revision its append made, the ETag the append
answered), each removal as `removed`. Storage is the only source of what is
sent, so a resume after any revision, a lost hint or a hint for changes
already sent can neither skip nor repeat a change. The stream watches for
hints before it reads the session first, so nothing committed after it opened
can be missed.
"""

import asyncio
import logging
import random
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol
from urllib.parse import quote, unquote

from ..core import json_codec
from ..core.errors import DatabaseUnavailable, FieldError, InvalidInput, SessionNotFound
from ..core.identifiers import session_id_problem
from ..core.metrics import LIVE_STREAM_READS
from ..sessions.domain import ChangeCursor, SessionChanges, SessionKey, UserChanges
from ..sessions.store import SessionStore
from .changes import ChangeHub, Waiter
from .store import ChangeLog

logger = logging.getLogger("session_state.streams.live")

# Events read from storage at once, and their JSON bytes (after the first):
# what one stream holds in memory while its reader takes them.
READ_BATCH_EVENTS = 100
READ_BATCH_BYTES = 1024 * 1024


class FollowedStore(SessionStore, ChangeLog, Protocol):
    """What a stream reads: the session, and what changed after a revision."""


MessageKind = Literal["appended", "removed", "deleted", "created", "expired", "reset"]


@dataclass(frozen=True)
class StreamMessage:
    """One Server-Sent Event: `id` None for `deleted` (the reader keeps the
    id of the last change it has)."""

    event: MessageKind
    data: str
    id: int | None = None
    # A user stream's id: its cursor (UserCursor.text).
    cursor: str | None = None


# A heartbeat is due: the stream sends a comment line.
HEARTBEAT = None
StreamItem = StreamMessage | None


class SessionStream:
    """One reader following one session; `open` first (it raises the
    problems answered before streaming), then iterate `messages`."""

    def __init__(
        self,
        store: FollowedStore,
        hub: ChangeHub,
        key: SessionKey,
        *,
        heartbeat_seconds: float,
        clock: Callable[[], float] = time.time,
        share_reads: bool = True,
    ) -> None:
        """`share_reads` False: this stream reads alone (bench.streams
        measures what sharing saves)."""
        self.store = store
        self.hub = hub
        self.key = key
        self.share_reads = share_reads
        self.heartbeat_seconds = heartbeat_seconds
        self.clock = clock
        self.last = 0
        self.expire_time: float | None = None
        self._watch_key = (key.app_name, key.user_id, key.session_id)
        self._watch = hub.watch(*self._watch_key)
        self._waiter: Waiter | None = None
        self._generation = 0

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
            heartbeat_at = _next_heartbeat(self.heartbeat_seconds)
            while True:
                waiter.flag.clear()  # a hint arriving while we read wakes us again
                self._generation = self.hub.generation(*self._watch_key)
                sent = False
                try:
                    async for message in self._read():
                        sent = True
                        yield message
                        if message.event == "deleted":
                            return
                except DatabaseUnavailable:
                    # Read again at the next heartbeat; nothing is lost meanwhile.
                    _log_unavailable()
                if sent:
                    heartbeat_at = _next_heartbeat(self.heartbeat_seconds)
                woken = await self._wait(waiter, heartbeat_at)
                if not woken and time.monotonic() >= heartbeat_at:
                    yield HEARTBEAT
                    heartbeat_at = _next_heartbeat(self.heartbeat_seconds)
        finally:
            self.close()

    async def _wait(self, waiter: Waiter, heartbeat_at: float) -> bool:
        """Whether a hint came before the heartbeat (or expiry) was due."""
        timeout = heartbeat_at - time.monotonic()
        if self.expire_time is not None:
            timeout = min(timeout, self.expire_time - self.clock())
        try:
            async with asyncio.timeout(max(timeout, 0.0)):  # not wait_for: see app.streams.changes
                await waiter.flag.wait()
        except TimeoutError:
            return False
        return True

    async def _read(self) -> AsyncIterator[StreamMessage]:
        more = True
        while more:
            changes = await self._read_changes()
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

    async def _read_changes(self) -> SessionChanges | None:
        """The changes after `last`, read once for every stream of this
        process following the session from there: a read in flight is joined
        if it started after the hint that woke this stream (it has seen that
        change), else a new one replaces it."""
        if not self.share_reads:
            return await self._read_once(self.last)
        reads = _shared_reads.setdefault(self.hub, {})
        slot = (self.key, self.last)
        shared = reads.get(slot)
        if shared is None or shared[0] < self._generation:
            task = asyncio.ensure_future(self._read_once(self.last))
            shared = (self.hub.generation(*self._watch_key), task)
            reads[slot] = shared
            task.add_done_callback(lambda done: _forget(reads, slot, done))
        # Shielded: a reader leaving does not cancel the others' read.
        return await asyncio.shield(shared[1])

    async def _read_once(self, after: int) -> SessionChanges | None:
        async with self.hub.reads:
            LIVE_STREAM_READS.inc()
            return await self.store.read_changes(
                self.key, after, READ_BATCH_EVENTS, READ_BATCH_BYTES, self.clock()
            )

    def _deleted(self) -> dict[str, object]:
        return {"sessionId": self.key.session_id, "revision": self.last}


# Per hub (process): the reads in flight, by session and revision read after.
_ReadSlot = tuple[SessionKey, int]
_shared_reads: "weakref.WeakKeyDictionary[ChangeHub, dict[_ReadSlot, _SharedRead]]" = (
    weakref.WeakKeyDictionary()
)
_SharedRead = tuple[int, "asyncio.Future[SessionChanges | None]"]


def _forget(
    reads: dict[_ReadSlot, _SharedRead],
    slot: _ReadSlot,
    done: "asyncio.Future[SessionChanges | None]",
) -> None:
    if not done.cancelled():
        done.exception()  # retrieved: each reader gets it from its own await
    shared = reads.get(slot)
    if shared is not None and shared[1] is done:
        del reads[slot]


_last_logged = 0.0
LOG_EVERY_SECONDS = 10.0


def _log_unavailable() -> None:
    """Once in a while, not once per stream: thousands may fail together."""
    global _last_logged
    if time.monotonic() - _last_logged >= LOG_EVERY_SECONDS:
        _last_logged = time.monotonic()
        logger.warning("live streams: database unavailable, they read again at their heartbeat")


def _next_heartbeat(interval: float) -> float:
    """When the next heartbeat is due: within the interval, spread so that
    streams opened together do not all read storage at the same moment."""
    return time.monotonic() + interval * random.uniform(0.5, 1.0)


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
    elif item.cursor is not None:
        head = f"id: {item.cursor}\n" + head
    return (head + f"data: {item.data}\n\n").encode()


USER_STREAM_BATCH = 100
# Tombstones (deletions, expiries, erasures) are kept this long by default
# (SESSION_STATE_TOMBSTONE_RETENTION_SECONDS): a user stream resumed from an
# older cursor may have missed some, and is told to start over (`reset`).
# The sweeper prunes them (docs/api.md, "Live streams").
TOMBSTONE_RETENTION_SECONDS = 7 * 24 * 3600.0
# Past any tombstone number, and past any change number: a read that only
# wants the newest of each.
_NO_TOMBSTONES_AFTER = 1 << 62
_NO_CHANGES_AFTER: ChangeCursor = (1 << 62, "")
# A change numbered past the horizon (PostgreSQL: a transaction older than it
# still runs, anywhere in the cluster) is read again after this long, twice
# as long each time up to the most, until the horizon passes it: its own
# hint may have come and gone.
PENDING_FIRST_WAIT_SECONDS = 0.02
PENDING_MOST_WAIT_SECONDS = 1.0
# The cursor a user stream sends as `id:`: n<change number>.<tombstone
# number>.<session id, percent-encoded> (a new form: the former was an
# update time, with or without `:<tombstone number>`).
CURSOR_PREFIX = "n"


@dataclass(frozen=True)
class UserCursor:
    """Where a user stream's reader is: every session change up to
    (`change`, `session_id`) in change order, and every tombstone up to
    `seq`; `former` for a cursor of a former form (the stream resets)."""

    change: int
    session_id: str
    seq: int
    former: bool = False

    def text(self) -> str:
        return f"{CURSOR_PREFIX}{self.change}.{self.seq}.{quote(self.session_id, safe='')}"

    @classmethod
    def parse(cls, text: str) -> "UserCursor | None":
        """None when the text is no cursor of any form."""
        text = text.strip()
        if text.startswith(CURSOR_PREFIX):
            change, _, rest = text[len(CURSOR_PREFIX) :].partition(".")
            seq, dot, session_id = rest.partition(".")
            if not (dot and _is_number(change) and _is_number(seq)):
                return None
            try:
                session_id = unquote(session_id, errors="strict")
            except UnicodeDecodeError:
                return None
            if session_id and session_id_problem(session_id) is not None:
                return None  # no session has it (PostgreSQL refuses a NUL)
            return cls(int(change), session_id, int(seq))
        # The former forms: an update time, and `:<tombstone number>`.
        time_text, colon, seq_text = text.partition(":")
        try:
            value = float(time_text)
        except ValueError:
            return None
        if not 0 <= value < 1e12 or (colon and not _is_number(seq_text)):
            return None
        return cls(0, "", 0, former=True)


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 18


class UserStream:
    """One reader following every session of a user: tombstones in their
    order (`deleted`, `expired`), then summaries of the sessions changed
    since, in change order (`created`, `appended`, `removed`), each read in
    one snapshot; `reset` when the tombstones after the reader's cursor were
    pruned (it lists the sessions again).

    A session's change number is set by every write of its row, in commit
    order as far as a reader can see: on PostgreSQL the writing
    transaction's id, read only below the oldest transaction still running
    (the horizon), so that none numbered below it can commit later; on
    SQLite (one writer) the user's newest plus one. The cursor is the last
    (number, session id) sent, so a resume sends each change once: no gap,
    no repeat, whatever the writers' clocks or the events' own times."""

    def __init__(
        self,
        store: FollowedStore,
        hub: ChangeHub,
        app_name: str,
        user_id: str,
        *,
        heartbeat_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.hub = hub
        self.app_name = app_name
        self.user_id = user_id
        self.heartbeat_seconds = heartbeat_seconds
        self.clock = clock
        self._watch = hub.watch(app_name, user_id, None)
        self._waiter: Waiter | None = None
        self.change: ChangeCursor = (0, "")  # the last session change sent
        self.seq = 0  # the last tombstone sent
        self._reset_reason: str | None = None
        self._pending_wait: float | None = None

    async def open(self, cursor: UserCursor | None, *, cursor_field: list[str | int]) -> None:
        """Raises InvalidInput when the cursor is past the user's newest
        tombstone or change (made up, or of another database)."""
        self._waiter = self._watch.__enter__()
        try:
            newest = await self.store.read_user_changes(
                self.app_name,
                self.user_id,
                _NO_TOMBSTONES_AFTER,
                _NO_CHANGES_AFTER,
                1,
                self.clock(),
            )
            if (
                cursor is not None
                and not cursor.former
                and (cursor.seq > newest.newest_seq or cursor.change > newest.next_change)
            ):
                raise InvalidInput(
                    [FieldError(cursor_field, "the cursor is not one this user's stream sent")]
                )
        except BaseException:
            self.close()
            raise
        if cursor is None:
            self.change, self.seq = (newest.horizon, ""), newest.newest_seq
        elif cursor.former:
            self._start_over(newest, "the cursor is of a former form")
        else:
            self.change, self.seq = (cursor.change, cursor.session_id), cursor.seq

    def _start_over(self, newest: UserChanges, reason: str) -> None:
        self.change, self.seq = (newest.horizon, ""), newest.newest_seq
        self._reset_reason = reason

    def close(self) -> None:
        if self._waiter is not None:
            self._waiter = None
            self._watch.__exit__(None, None, None)

    async def messages(self) -> AsyncGenerator[StreamItem, None]:
        waiter = self._waiter
        assert waiter is not None, "open() first"
        try:
            heartbeat_at = _next_heartbeat(self.heartbeat_seconds)
            while True:
                # Hints only wake the stream: what it sends is read from storage.
                waiter.flag.clear()
                sent = False
                try:
                    if self._reset_reason is not None:
                        sent = True
                        yield self._reset()
                    async for message in self._read():
                        sent = True
                        yield message
                except DatabaseUnavailable:
                    _log_unavailable()
                if sent:
                    heartbeat_at = _next_heartbeat(self.heartbeat_seconds)
                try:
                    timeout = max(heartbeat_at - time.monotonic(), 0.0)
                    if self._pending_wait is not None:
                        timeout = min(timeout, self._pending_wait)
                    async with asyncio.timeout(timeout):  # not wait_for: see app.streams.changes
                        await waiter.flag.wait()
                except TimeoutError:
                    if time.monotonic() >= heartbeat_at:
                        yield HEARTBEAT
                        heartbeat_at = _next_heartbeat(self.heartbeat_seconds)
        finally:
            self.close()

    def _reset(self) -> StreamMessage:
        data = {"reason": self._reset_reason}
        self._reset_reason = None
        return self._message("reset", data)

    def _message(self, event: MessageKind, data: Mapping[str, object]) -> StreamMessage:
        cursor = UserCursor(self.change[0], self.change[1], self.seq)
        return StreamMessage(event, json_codec.dumps_text(data), None, cursor.text())

    async def _read(self) -> AsyncIterator[StreamMessage]:
        more = True
        while more:
            async with self.hub.reads:
                changes = await self.store.read_user_changes(
                    self.app_name,
                    self.user_id,
                    self.seq,
                    self.change,
                    USER_STREAM_BATCH,
                    self.clock(),
                )
            gone = changes.tombstones
            if gone and gone[0].seq != self.seq + 1 and gone[0].kind != "erased":
                # Tombstones after the reader's were pruned: it missed some.
                self._start_over(changes, "the cursor is older than the tombstones kept")
                yield self._reset()
                return
            for tombstone in gone:
                self.seq = tombstone.seq
                event: MessageKind = "expired" if tombstone.kind == "expired" else "deleted"
                yield self._message(event, {"sessionId": tombstone.session_id})
            for row in changes.sessions:
                self.change = (row.change_number, row.id)
                event = "created" if row.revision == 0 else "appended"
                if row.removed:
                    event = "removed"
                summary = {
                    "sessionId": row.id,
                    "revision": row.revision,
                    "updateTime": row.update_time,
                }
                yield self._message(event, summary)
            if not changes.more_sessions and self.change[0] < changes.horizon:
                # Every change numbered below the horizon is sent.
                self.change = (changes.horizon, "")
            more = changes.more_sessions or len(gone) == USER_STREAM_BATCH
            self._pending_wait = _pending_wait(self._pending_wait) if changes.pending else None


def _pending_wait(last: float | None) -> float:
    if last is None:
        return PENDING_FIRST_WAIT_SECONDS
    return min(last * 2, PENDING_MOST_WAIT_SECONDS)
