"""Who is told when a session changes: the live streams waiting on it.

A `ChangeHub` per process keeps, for each session followed, the wake-up flags
of its streams. A write, once committed, publishes a `Change`: the hub sets
the flags of the streams it concerns, and a relay (PostgreSQL: `NOTIFY` on one
connection per process, `PostgresChangeRelay`) tells the other processes'
hubs. A change is only a hint: a woken stream reads what changed from storage
by revision, so a lost or repeated hint loses or repeats nothing (a stream
also reads storage at each heartbeat, and every stream is woken when the
relay's connection comes back).

A hint goes to the other processes only while there are any: a relay
counts the others' connections when it connects and every
PEER_RECOUNT_SECONDS, and each relay says hello when it connects, so the
others learn of it at once. A process alone (one worker, SQLite) sends no
NOTIFY at all: one per batch of appends is a statement and a commit each,
a large share of an append's server CPU (docs/performance.md, "Server CPU
per append").
"""

import asyncio
import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Protocol

import asyncpg

from ..core import json_codec
from ..db.postgresql_statement import Statement
from ..sessions.changes import Change

logger = logging.getLogger("session_state.streams.changes")

# The channel every process of a database listens on.
CHANNEL = "session_state_changes"
# Pending hints sent in one NOTIFY round trip, at most.
NOTIFY_BATCH = 500
# How long the relay waits before connecting again after losing its connection.
RECONNECT_DELAY_SECONDS = 1.0
# The relays' connections, as PostgreSQL lists them (pg_stat_activity).
RELAY_APPLICATION_NAME = "session-state changes"
# How often a relay counts the other processes' relays again (a peer that
# connects says hello; one that goes away is only seen by counting).
PEER_RECOUNT_SECONDS = 10.0
HELLO = "hello"
_COUNT_PEERS = Statement.of(
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    " AND application_name = :application_name AND pid <> pg_backend_pid()"
)
_NOTIFY = Statement.of("SELECT pg_notify(:channel, :payload)")
# Several hints in one round trip.
_NOTIFY_EACH = Statement.of(
    "SELECT pg_notify(:channel, payload) FROM unnest(:payloads::text[]) AS payload"
)


class Waiter:
    """One stream's wake-up flag (a hint only: streams read what changed
    from storage)."""

    __slots__ = ("flag",)

    def __init__(self) -> None:
        self.flag = asyncio.Event()


class Relay(Protocol):
    def send(self, change: Change) -> None: ...

    async def close(self) -> None: ...


WatchKey = tuple[str, str | None, str | None]


class ChangeHub:
    def __init__(self, max_reads_at_once: int = 4) -> None:
        self._waiters: dict[WatchKey, set[Waiter]] = {}
        # Per session followed: how many hints woke its streams so far. A read
        # started at generation g has seen every change hinted up to g.
        self._generations: dict[WatchKey, int] = {}
        self.relay: Relay | None = None
        # Streams of this process reading storage at once: a change followed
        # by thousands must not take every pooled connection from the writes.
        self.reads = asyncio.Semaphore(max_reads_at_once)

    @contextlib.contextmanager
    def watch(self, app_name: str, user_id: str, session_id: str | None) -> Iterator[Waiter]:
        """A flag set at each change of the session (`session_id` None: of
        any session of the user) published from now on."""
        key = (app_name, user_id, session_id)
        waiter = Waiter()
        self._waiters.setdefault(key, set()).add(waiter)
        try:
            yield waiter
        finally:
            waiters = self._waiters.get(key)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiters[key]
                    self._generations.pop(key, None)

    def generation(self, app_name: str, user_id: str, session_id: str) -> int:
        return self._generations.get((app_name, user_id, session_id), 0)

    @property
    def watching(self) -> int:
        return sum(len(waiters) for waiters in self._waiters.values())

    def publish(self, change: Change) -> None:
        """Wakes this process's streams the change concerns and, through the
        relay, the other processes'. Never blocks, never raises."""
        self.wake(change)
        if self.relay is not None:
            self.relay.send(change)

    def wake(self, change: Change) -> None:
        if change.user_id is None or change.session_id is None:
            self._wake_matching(change)
            return
        for key in (
            (change.app_name, change.user_id, change.session_id),
            (change.app_name, change.user_id, None),
        ):
            self._advance(key)
            for waiter in self._waiters.get(key, ()):
                waiter.flag.set()

    def _advance(self, key: WatchKey) -> None:
        if key in self._waiters:
            self._generations[key] = self._generations.get(key, 0) + 1

    def _wake_matching(self, change: Change) -> None:
        for key, waiters in self._waiters.items():
            app_name, user_id, _ = key
            if app_name == change.app_name and change.user_id in (None, user_id):
                self._advance(key)
                for waiter in waiters:
                    waiter.flag.set()

    def wake_all(self) -> None:
        """Every stream reads storage again (hints may have been lost)."""
        for key, waiters in self._waiters.items():
            self._advance(key)
            for waiter in waiters:
                waiter.flag.set()

    async def close(self) -> None:
        if self.relay is not None:
            await self.relay.close()
            self.relay = None


def encode_change(change: Change, origin: str) -> str:
    return json_codec.dumps_text(
        [
            origin,
            change.app_name,
            change.user_id,
            change.session_id,
            change.kind,
            change.revision,
        ]
    )


def decode_change(payload: str) -> tuple[str, Change] | None:
    try:
        origin, app_name, user_id, session_id, kind, revision = json_codec.loads(payload)
    except ValueError:
        return None
    return origin, Change(app_name, user_id, session_id, kind, revision)


class PostgresChangeRelay:
    """One connection per process that LISTENs for the other processes'
    changes and NOTIFYs its own, after their commit, batched, off the
    request's path (an append does not wait for it)."""

    def __init__(
        self,
        hub: ChangeHub,
        dsn: str,
        timeout: float,
        *,
        listen: bool = True,
        statement_cache_size: int = 100,
    ) -> None:
        """`listen` False: only NOTIFY (through a transaction-mode pooler,
        where a LISTEN would be lost with its server connection)."""
        self.hub = hub
        self.dsn = dsn
        self.timeout = timeout
        self.listen = listen
        self.statement_cache_size = statement_cache_size
        # Told apart from other processes' hints (our own need no relaying back).
        self.origin = f"{os.getpid()}-{id(self):x}"
        self._pending: list[str] = []
        self._have_pending = asyncio.Event()
        self._connection: asyncpg.Connection | None = None
        self._task: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()
        # Whether other processes' relays are connected (True until counted:
        # a hint too many costs a NOTIFY, a hint too few a heartbeat's wait).
        self.peers = True
        self._hellos = 0  # hellos heard: a count made meanwhile may be stale

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    def send(self, change: Change) -> None:
        if not self.peers:
            return  # nobody else to tell
        if len(self._pending) >= 10 * NOTIFY_BATCH:
            # The database is away: the hints are dropped, and the streams
            # of other processes find the changes at their next heartbeat.
            return
        self._pending.append(encode_change(change, self.origin))
        self._have_pending.set()

    def _received(self, _connection: object, _pid: int, _channel: str, payload: str) -> None:
        if payload.startswith(f'["{HELLO}",'):
            if payload != _hello(self.origin):
                self._hellos += 1
                self.peers = True
            return
        decoded = decode_change(payload)
        if decoded is None:
            return
        origin, change = decoded
        if origin != self.origin:
            self.hub.wake(change)

    async def _run(self) -> None:
        while True:
            try:
                await self._serve_connection()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the database went away: connect again
                logger.warning("change relay disconnected: %s", type(error).__name__)
            self.connected.clear()
            await asyncio.sleep(RECONNECT_DELAY_SECONDS)

    async def _serve_connection(self) -> None:
        connection = await asyncpg.connect(
            self.dsn,
            timeout=self.timeout,
            statement_cache_size=self.statement_cache_size,
            server_settings={"application_name": RELAY_APPLICATION_NAME},
        )
        self._connection = connection
        lost = asyncio.Event()

        def connection_lost(_connection: object) -> None:
            lost.set()
            self._have_pending.set()  # wakes the loop below

        connection.add_termination_listener(connection_lost)
        try:
            if self.listen:
                await connection.add_listener(CHANNEL, self._received)
                # Listening first: a peer that connects after the count says hello.
                await self._count_peers(connection)
                hello = {"channel": CHANNEL, "payload": _hello(self.origin)}
                await connection.execute(_NOTIFY.text, *_NOTIFY.arguments(hello))
            # Not listening (a pooler), it cannot hear a newcomer's hello:
            # `peers` stays True and every hint is sent.
            self.connected.set()
            # Hints sent while no connection listened are lost: every stream
            # of this process reads storage again.
            self.hub.wake_all()
            loop = asyncio.get_running_loop()
            recount_at = loop.time() + PEER_RECOUNT_SECONDS
            while not lost.is_set():
                if not self._pending:
                    # asyncio.timeout, not wait_for: Python 3.11's wait_for can
                    # swallow a cancellation that lands as its wait ends, and
                    # this loop then outlives close().
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(max(recount_at - loop.time(), 0)):
                            await self._have_pending.wait()
                if self.listen and loop.time() >= recount_at and not lost.is_set():
                    await self._count_peers(connection)
                    recount_at = loop.time() + PEER_RECOUNT_SECONDS
                while self._pending and not lost.is_set():
                    batch = self._pending[:NOTIFY_BATCH]
                    del self._pending[:NOTIFY_BATCH]
                    hints = {"channel": CHANNEL, "payloads": batch}
                    await connection.execute(
                        _NOTIFY_EACH.text, *_NOTIFY_EACH.arguments(hints), timeout=self.timeout
                    )
                self._have_pending.clear()
        finally:
            self._connection = None
            with contextlib.suppress(Exception):
                async with asyncio.timeout(self.timeout):
                    await connection.close()

    async def _count_peers(self, connection: asyncpg.Connection) -> None:
        hellos = self._hellos
        relays = {"application_name": RELAY_APPLICATION_NAME}
        others = await connection.fetchval(
            _COUNT_PEERS.text, *_COUNT_PEERS.arguments(relays), timeout=self.timeout
        )
        # A hello heard while counting is a peer the count may have missed.
        self.peers = bool(others) or self._hellos != hellos
        if not self.peers:
            self._pending.clear()

    async def close(self) -> None:
        if self._task is not None:
            # Cancelled again until it ends: one cancellation lost inside a
            # library call must not leave the relay running past shutdown.
            while not self._task.done():
                self._task.cancel()
                await asyncio.wait([self._task], timeout=1)
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


async def tell_servers(dsn: str, changes: list[Change], seconds: float) -> None:
    """`notify_processes` for a command run beside the servers: a database
    that cannot be reached costs the streams a heartbeat's wait, so it is
    not the command's failure."""
    with contextlib.suppress(OSError, asyncpg.PostgresError, TimeoutError):
        await notify_processes(dsn, changes, seconds)


async def notify_processes(dsn: str, changes: list[Change], seconds: float) -> None:
    """Tells the relays of every server process on the database of changes
    made elsewhere (`session-state sweep`), in one NOTIFY round trip per
    batch. A hint lost here costs the streams a heartbeat's wait, nothing
    more."""
    if not changes:
        return
    origin = f"{os.getpid()}-command"
    payloads = [encode_change(change, origin) for change in changes]
    connection = await asyncpg.connect(dsn, timeout=seconds, statement_cache_size=0)
    try:
        for start in range(0, len(payloads), NOTIFY_BATCH):
            hints = {"channel": CHANNEL, "payloads": payloads[start : start + NOTIFY_BATCH]}
            await connection.execute(
                _NOTIFY_EACH.text, *_NOTIFY_EACH.arguments(hints), timeout=seconds
            )
    finally:
        await connection.close()


def _hello(origin: str) -> str:
    return json_codec.dumps_text([HELLO, origin])
