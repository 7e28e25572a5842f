"""The sweeper: deletes expired sessions with their events, and every other
feature's expired rows (LangGraph's threads and store items; see
lifecycle.tables for what each table's rows go with).

Expired sessions are already missing for every API call (the store's reads
and writes compare their expiry with the clock); the sweeper only frees
their rows, in bounded batches, so it never holds many rows locked. `serve`
runs it every SESSION_STATE_SWEEP_INTERVAL_SECONDS; `session-state sweep`
runs one pass. With several processes on one PostgreSQL database, one
sweeps at a time (a pass that finds another sweeping is skipped, or ends
early, by a transaction-level lock that works through PgBouncer's
transaction mode); on SQLite they take turns batch by batch.
"""

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Protocol

from ..core.audit import audit_event
from ..core.errors import DatabaseUnavailable
from ..core.metrics import (
    ROWS_SWEPT,
    SESSIONS_EXPIRED_WAITING,
    SESSIONS_SWEPT,
    SWEEP_DURATION,
    SWEEPS,
)
from ..core.observability import trace_without_data
from ..langgraph.checkpoints.metrics import THREADS_REMOVED
from ..langgraph.checkpoints.service import SWEEP_BATCH_THREADS
from ..langgraph.checkpoints.store import CheckpointStore
from ..langgraph.store.metrics import STORE_ITEMS_REMOVED
from ..langgraph.store.service import SWEEP_BATCH_ITEMS
from ..langgraph.store.storage import ItemStorage
from ..sessions.changes import Change
from ..sessions.domain import SessionKey, Swept
from ..streams.changes import ChangeHub
from ..streams.live import TOMBSTONE_RETENTION_SECONDS
from ..streams.store import ChangeLog
from .erasure import ERASE_BATCH_EVENTS
from .store import LifecycleStore

logger = logging.getLogger("session_state")


class SweptStore(LifecycleStore, ChangeLog, Protocol):
    """What a pass deletes from: expired rows, and tombstones past keeping."""

    def checkpoint_store(self) -> CheckpointStore: ...

    def item_storage(self) -> ItemStorage: ...


@dataclass(frozen=True)
class SweepReport:
    """One pass: what it deleted (None: another process was sweeping), and
    the expired sessions left when it ended."""

    swept: Swept | None
    waiting: int
    seconds: float


class Sweeper:
    def __init__(
        self,
        store: SweptStore,
        *,
        clock: Callable[[], float] = time.time,
        with_memories: bool = False,
        batch_events: int = ERASE_BATCH_EVENTS,
        changes: ChangeHub | None = None,
        announce: Callable[[Change], None] | None = None,
        tombstone_retention_seconds: float = TOMBSTONE_RETENTION_SECONDS,
    ) -> None:
        self.store = store
        self.threads = store.checkpoint_store()
        self.store_items = store.item_storage()
        self.clock = clock
        self.with_memories = with_memories
        self.batch_events = batch_events
        self.tombstone_retention_seconds = tombstone_retention_seconds
        # Told of each session swept: user streams announce it (`expired`);
        # `announce` instead of a hub (`session-state sweep`, no streams).
        self.announce = announce if changes is None else changes.publish

    async def sweep_once(self) -> SweepReport:
        """One pass over everything expired now. DatabaseUnavailable when the
        database cannot serve (what was committed before stays deleted)."""
        started = time.monotonic()
        expired: list[SessionKey] = []
        try:
            try:
                swept = await self.store.sweep_expired(
                    self.clock(),
                    self.batch_events,
                    with_memories=self.with_memories,
                    expired=expired,
                )
            finally:
                self._announce(expired)
            if swept is not None:
                swept += await self._sweep_langgraph(self.clock())
            await self.store.prune_tombstones(self.clock() - self.tombstone_retention_seconds)
        except DatabaseUnavailable:
            SWEEPS.labels("failed").inc()
            raise
        seconds = time.monotonic() - started
        if swept is None:
            SWEEPS.labels("skipped").inc()
        else:
            SWEEPS.labels("swept").inc()
            SWEEP_DURATION.observe(seconds)
            SESSIONS_SWEPT.inc(swept.sessions)
            for table, rows in asdict(swept).items():
                ROWS_SWEPT.labels(table).inc(rows)
            if any(asdict(swept).values()):
                # Counts only, never whose: a session id may name a person.
                logger.info("swept", extra={**asdict(swept), "seconds": round(seconds, 3)})
                audit_event("sweep", **asdict(swept))
        waiting = await self.store.count_expired(self.clock())
        SESSIONS_EXPIRED_WAITING.set(waiting)
        return SweepReport(swept, waiting, seconds)

    async def _sweep_langgraph(self, now: float) -> Swept:
        """What expires by the same clock besides sessions, after them."""
        threads = await self.threads.sweep_expired(now, SWEEP_BATCH_THREADS)
        THREADS_REMOVED.labels("swept").inc(threads)
        items = await self.store_items.sweep_expired(now, SWEEP_BATCH_ITEMS)
        STORE_ITEMS_REMOVED.labels("swept").inc(items)
        return Swept(threads=threads, store_items=items)

    def _announce(self, expired: list[SessionKey]) -> None:
        if self.announce is None:
            return
        for key in expired:
            self.announce(Change(key.app_name, key.user_id, key.session_id, "expired"))

    async def run(self, interval_seconds: float) -> None:
        """Sweeps every `interval_seconds` until cancelled; a pass that fails
        is logged and the next one tried at its time."""
        while True:
            await asyncio.sleep(interval_seconds)
            try:
                await self.sweep_once()
            except DatabaseUnavailable as error:
                logger.warning("sweep failed: %s", error.detail)
            except Exception as error:
                # A bug must not stop sweeping for the life of the process.
                SWEEPS.labels("failed").inc()
                logger.error("sweep failed\n%s", trace_without_data(error))
