"""The memories waiting for a vector, and the task that embeds them.

A memory write never waits for a remote embedder: the memory is stored at
once (keyword-searchable) without a vector, and `serve` embeds it here, in
batches, retrying with backoff while the embedder is slow, down or answers
what cannot be used. Rows embedded by another model (after a change of
embedder) wait too, so a ranking never mixes two models. `session-state
memory reindex` runs the same passes from the command line. Progress is the
rows themselves: a pass stopped anywhere resumes where it was.
"""

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from .db.store import Store
from .embedding import Embedder, EmbedderFailed, stored_vectors
from .errors import DatabaseUnavailable
from .metrics import MEMORY_EMBEDDING_BACKLOG, MEMORY_EMBEDDINGS
from .observability import trace_without_data

logger = logging.getLogger("session_state")

# Texts read and embedded per round (a remote embedder gets them in its own
# batch size).
EMBED_BATCH = 256
# Waits between failed passes: 1 s doubling to at most 60 s, with jitter.
FIRST_RETRY_SECONDS = 1.0
LAST_RETRY_SECONDS = 60.0
# An idle task looks again this often (for rows other processes wrote).
IDLE_SECONDS = 60.0
# At least this long between two passes, however many writes wake it.
MIN_PASS_INTERVAL_SECONDS = 0.5


@dataclass
class BacklogStatus:
    """What /readyz and the metric show."""

    waiting: int | None = None
    last_error: str | None = None
    failures: int = 0


class EmbeddingBacklog:
    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        *,
        batch: int = EMBED_BATCH,
        first_retry_seconds: float = FIRST_RETRY_SECONDS,
        last_retry_seconds: float = LAST_RETRY_SECONDS,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.batch = batch
        self.first_retry_seconds = first_retry_seconds
        self.last_retry_seconds = last_retry_seconds
        self.status = BacklogStatus()
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Something was stored without a vector: look soon."""
        self._wake.set()

    async def embed_waiting(
        self,
        app_name: str | None = None,
        user_id: str | None = None,
        progress: Callable[[int], object] | None = None,
    ) -> int:
        """Embeds every memory not embedded by the current model (of one app
        or user when given), in id order; returns how many. EmbedderFailed
        when the embedder fails (what was stored before stays)."""
        model = self.embedder.model_id
        after_id = 0
        embedded = 0
        while rows := await self.store.memories_to_embed(
            model, after_id, self.batch, app_name, user_id
        ):
            after_id = rows[-1][0]
            try:
                vectors = await self.embedder.embed([text for _, text in rows])
            except EmbedderFailed:
                MEMORY_EMBEDDINGS.labels("failed").inc(len(rows))
                raise
            stored = stored_vectors(vectors)
            await self.store.store_embeddings(
                model, [(row[0], vector) for row, vector in zip(rows, stored, strict=True)]
            )
            MEMORY_EMBEDDINGS.labels("embedded").inc(len(rows))
            embedded += len(rows)
            if progress is not None:
                progress(len(rows))
        return embedded

    async def count_waiting(self) -> int:
        waiting = await self.store.count_memories_to_embed(self.embedder.model_id, None, None)
        self.status.waiting = waiting
        MEMORY_EMBEDDING_BACKLOG.set(waiting)
        return waiting

    def _retry_after(self) -> float:
        doubled = self.first_retry_seconds * 2.0 ** min(self.status.failures - 1, 30)
        bound = min(self.last_retry_seconds, doubled)
        return bound * random.uniform(0.5, 1.0)

    async def pass_once(self) -> None:
        """One pass and a count; failures are recorded and logged (never
        with a text), not raised."""
        try:
            await self.embed_waiting()
            self.status.failures = 0
            self.status.last_error = None
        except EmbedderFailed as error:
            self.status.failures += 1
            self.status.last_error = str(error)
            logger.warning("memory embedding failed: %s", error)
        except DatabaseUnavailable as error:
            self.status.failures += 1
            self.status.last_error = error.detail
            logger.warning("memory embedding failed: %s", error.detail)
        with contextlib.suppress(DatabaseUnavailable):
            await self.count_waiting()

    async def run(self) -> None:
        """Embeds what waits, when woken, after a failure's backoff, and every
        IDLE_SECONDS, until cancelled."""
        while True:
            self._wake.clear()
            started = time.monotonic()
            try:
                await self.pass_once()
            except Exception as error:
                # A bug must not stop embedding for the life of the process.
                self.status.failures += 1
                logger.error("memory embedding failed\n%s", trace_without_data(error))
            wait = self._retry_after() if self.status.failures else IDLE_SECONDS
            await asyncio.sleep(max(0.0, MIN_PASS_INTERVAL_SECONDS - (time.monotonic() - started)))
            if self.status.failures:
                # Backing off: a write does not cut the wait short.
                await asyncio.sleep(wait)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=wait)
