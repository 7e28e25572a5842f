"""Read replicas (SESSION_STATE_READ_DATABASE_URL): a second PostgreSQL store
on the replicas (opened by app.stores.open_replica), and whether it may
answer reads now.

A replica serves reads while its measured lag is within
SESSION_STATE_MAX_REPLICA_LAG_SECONDS. The lag is measured off the request
path, at most once a LAG_CHECK_SECONDS, by a task a read starts when the last
measurement is that old; reads never wait for it. Until a first measurement,
after a failed one, or when the last is older than LAG_VALID_SECONDS (the
replica stopped answering the check), reads go to the primary.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar

import asyncpg

from ..core.errors import DatabaseUnavailable
from ..core.metrics import READS

T = TypeVar("T")
# The store as a feature reads it (SessionStore, MemoryStore): the replicas'
# and the primary's are both the deployment's whole store.
StoreT = TypeVar("StoreT", covariant=True)
READS_FROM_REPLICA = READS.labels("replica")
READS_FROM_PRIMARY = READS.labels("primary")

logger = logging.getLogger("session_state")

LAG_CHECK_SECONDS = 1.0
LAG_VALID_SECONDS = 3.0


class ReplicaUnavailable(Exception):
    """A read on the replica failed for a reason the primary does not share
    (down, unreachable, a query cancelled by a conflict with recovery)."""


class ReplicationSource(Protocol):
    """Where the lag is measured: the replicas' store."""

    async def replay_lag_seconds(self) -> float: ...

    async def close(self) -> None: ...


class Replica(Generic[StoreT]):
    """The replicas' store, read as a StoreT, and their measured lag (on
    `source`, the same store); `clock` is monotonic."""

    def __init__(
        self,
        store: StoreT,
        source: ReplicationSource,
        max_lag_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.source = source
        self.max_lag_seconds = max_lag_seconds
        self.clock = clock
        self._lag: float | None = None
        self._measured_at = -float("inf")
        self._checked_at = -float("inf")
        self._check: asyncio.Task[None] | None = None

    @property
    def lag_seconds(self) -> float | None:
        """The last measured lag; None before one or after a failed one."""
        return self._lag

    def is_usable(self) -> bool:
        """Whether the replica may answer a read now; starts a measurement
        when the last is due."""
        now = self.clock()
        if now - self._checked_at >= LAG_CHECK_SECONDS and self._check is None:
            self._checked_at = now
            self._check = asyncio.create_task(self._measure())
        return (
            self._lag is not None
            and self._lag <= self.max_lag_seconds
            and now - self._measured_at < LAG_VALID_SECONDS
        )

    async def read(self, read: Callable[[StoreT], Awaitable[T]]) -> T:
        """`read` on the replicas' store; ReplicaUnavailable when the replica
        failed it, and then reads go to the primary until a measurement
        succeeds. Domain errors (too large a response) pass as they are."""
        try:
            return await read(self.store)
        except (DatabaseUnavailable, asyncpg.PostgresError) as error:
            logger.warning("read replica failed a read: %s", type(error).__name__)
            self._lag = None
            raise ReplicaUnavailable from error

    async def measure(self) -> float | None:
        """Measures the lag now (None: the replica did not answer)."""
        try:
            lag = await self.source.replay_lag_seconds()
        except (DatabaseUnavailable, asyncpg.PostgresError) as error:
            logger.warning("read replica unavailable: %s", type(error).__name__)
            self._lag = None
            return None
        self._lag, self._measured_at = lag, self.clock()
        return lag

    async def _measure(self) -> None:
        try:
            await self.measure()
        except Exception:  # a bug must not pass silently, nor kill reads
            logger.exception("measuring the read replica's lag failed")
            self._lag = None
        finally:
            self._check = None

    async def close(self) -> None:
        if self._check is not None:
            self._check.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._check
        await self.source.close()


def _always(_found: object) -> bool:
    return True


class ReadRouting(Generic[StoreT]):
    """Sends a read to the replica when it is usable and what it finds is
    `recent_enough`, else (and when it fails) to the primary: so a reader
    that names the revision it saw never gets an older one, and a replica
    that is down or behind costs a read on the primary, never an error."""

    def __init__(self, primary: StoreT, replica: Replica[StoreT] | None) -> None:
        self.primary = primary
        self.replica = replica

    async def read(
        self,
        read: Callable[[StoreT], Awaitable[T]],
        recent_enough: Callable[[T], bool] = _always,
    ) -> T:
        replica = self.replica
        if replica is not None and replica.is_usable():
            try:
                found = await replica.read(read)
            except ReplicaUnavailable:
                pass
            else:
                if recent_enough(found):
                    READS_FROM_REPLICA.inc()
                    return found
        READS_FROM_PRIMARY.inc()
        return await read(self.primary)
