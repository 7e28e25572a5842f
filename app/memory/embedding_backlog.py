"""The memories waiting for a vector, and the task that embeds them.

A memory write never waits for a remote embedder: the memory is stored at
once (keyword-searchable) without a vector, and `serve` embeds it here, in
batches, retrying with backoff while the embedder is slow, down or answers
what cannot be used. Rows embedded by another model (after a change of
embedder) wait too, so a ranking never mixes two models. `session-state
memory reindex` runs the same passes from the command line. Progress is the
rows themselves: a pass stopped anywhere resumes where it was.

Several `serve` processes share the backlog: each batch of rows is claimed
by one process (until CLAIM_SECONDS; a process that dies leaves its claim to
expire), so each row is embedded once. A text the embedder refuses (a 4xx
or an unusable answer, app.memory.embedding.EmbedderFailed.refused) does not hold
back its batch: the batch is halved until that text is alone, the others are
stored, and the text is tried again later, then given up on after
MAX_EMBEDDING_TRIES refusals (counted in the backlog's status; still found
by keywords; `memory reindex` tries it again).
"""

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.errors import DatabaseUnavailable
from ..core.metrics import MEMORY_EMBEDDING_BACKLOG, MEMORY_EMBEDDING_GIVEN_UP, MEMORY_EMBEDDINGS
from ..core.observability import trace_without_data
from .embedding import Embedder, EmbedderFailed, StoredVector, stored_vectors
from .store import MemoryStore

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
# A batch is claimed for this long: more than embedding it takes (a remote
# embedder's timeout per call of its batch size), so no other process takes
# it meanwhile; a process that dies frees its rows after this.
CLAIM_SECONDS = 600.0
# Refusals of a text alone before it is given up on.
MAX_EMBEDDING_TRIES = 3


class _RefusingEverything(Exception):
    pass


@dataclass
class _Halving:
    refusals_left: int
    answered: bool = False
    first_refusal: EmbedderFailed | None = None


@dataclass
class BacklogStatus:
    """What /readyz and the metric show."""

    waiting: int | None = None
    given_up: int | None = None
    last_error: str | None = None
    failures: int = 0


class EmbeddingBacklog:
    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        *,
        batch: int = EMBED_BATCH,
        first_retry_seconds: float = FIRST_RETRY_SECONDS,
        last_retry_seconds: float = LAST_RETRY_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.batch = batch
        self.first_retry_seconds = first_retry_seconds
        self.last_retry_seconds = last_retry_seconds
        self.clock = clock
        self.status = BacklogStatus()
        self._wake = asyncio.Event()
        # Whether the embedder ever answered in this process: until it has,
        # a refusal of every text says more about it than about the texts.
        self._answered = False
        # When a refused text may be tried again (None: nothing refused).
        self._next_retry: float | None = None

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
        or user when given) that no other process has claimed, in id order;
        returns how many. EmbedderFailed when the embedder fails (what was
        stored before stays; the rows of the failed batch are released)."""
        model = self.embedder.model_id
        embedded = 0
        while rows := await self.store.claim_memories_to_embed(
            model,
            self.batch,
            app_name,
            user_id,
            now=self.clock(),
            until=self.clock() + CLAIM_SECONDS,
            max_tries=MAX_EMBEDDING_TRIES,
        ):
            try:
                stored, refused = await self._embed_rows(rows)
            except EmbedderFailed:
                MEMORY_EMBEDDINGS.labels("failed").inc(len(rows))
                with contextlib.suppress(DatabaseUnavailable):
                    await self.store.release_memories_to_embed([row[0] for row in rows])
                raise
            await self.store.store_embeddings(model, stored)
            if refused:
                await self._refuse(refused)
            MEMORY_EMBEDDINGS.labels("embedded").inc(len(stored))
            embedded += len(stored)
            if progress is not None:
                progress(len(rows))
        return embedded

    async def _embed_rows(
        self, rows: Sequence[tuple[int, str]]
    ) -> tuple[list[tuple[int, StoredVector]], list[int]]:
        """The rows' vectors, and the ids of the rows whose text the embedder
        refused alone, found by halving a refused batch: about 2 log2(n)
        calls for one such text among n. An embedder that answers none of
        the texts is failing, not the texts (EmbedderFailed, and no more
        calls than one text costs); so is one that refuses a text alone
        before it ever answered in this process."""
        halving = _Halving(refusals_left=2 * len(rows).bit_length() + 1)
        try:
            stored, refused = await self._halving(rows, halving)
        except _RefusingEverything:
            stored, refused = [], []
        refusal = halving.first_refusal
        if refusal is not None and not stored and (len(rows) > 1 or not self._answered):
            raise refusal
        if stored:
            self._answered = True
        return stored, refused

    async def _halving(
        self, rows: Sequence[tuple[int, str]], halving: "_Halving"
    ) -> tuple[list[tuple[int, StoredVector]], list[int]]:
        try:
            vectors = await self.embedder.embed([text for _, text in rows])
        except EmbedderFailed as error:
            if not error.refused:
                raise
            if halving.first_refusal is None:
                halving.first_refusal = error
            if not halving.answered:
                halving.refusals_left -= 1
                if halving.refusals_left < 0:
                    raise _RefusingEverything from None
            if len(rows) == 1:
                return [], [rows[0][0]]
            middle = len(rows) // 2
            first, first_refused = await self._halving(rows[:middle], halving)
            second, second_refused = await self._halving(rows[middle:], halving)
            return first + second, first_refused + second_refused
        halving.answered = True
        stored = stored_vectors(vectors)
        return [(row[0], vector) for row, vector in zip(rows, stored, strict=True)], []

    async def _refuse(self, ids: list[int]) -> None:
        """One more refusal of each text alone; tried again after a backoff."""
        delay = self.first_retry_seconds * random.uniform(1.0, 2.0)
        retry_at = self.clock() + min(delay, self.last_retry_seconds)
        await self.store.refuse_memories_to_embed(ids, retry_at)
        MEMORY_EMBEDDINGS.labels("refused").inc(len(ids))
        logger.warning("memory texts the embedder refused alone, tried later: %d", len(ids))
        self._next_retry = retry_at if self._next_retry is None else min(self._next_retry, retry_at)

    async def count_waiting(self) -> int:
        count = await self.store.count_memories_to_embed(
            self.embedder.model_id, None, None, MAX_EMBEDDING_TRIES
        )
        self.status.waiting = count.waiting
        self.status.given_up = count.given_up
        MEMORY_EMBEDDING_BACKLOG.set(count.waiting)
        MEMORY_EMBEDDING_GIVEN_UP.set(count.given_up)
        return count.waiting

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
            if self._next_retry is not None:
                # A refused text is tried again when its backoff ends.
                wait = min(wait, max(0.0, self._next_retry - self.clock()))
                self._next_retry = None
            await asyncio.sleep(max(0.0, MIN_PASS_INTERVAL_SECONDS - (time.monotonic() - started)))
            if self.status.failures:
                # Backing off: a write does not cut the wait short.
                await asyncio.sleep(wait)
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):  # not wait_for: see app.streams.changes
                    await self._wake.wait()
