"""Long-term memory: a per-(app, user) searchable store, written as ADK's
BaseMemoryService writes it (a stored session, events, entries; delete one
memory, forget a user) and searched with `search_memory`."""

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..core.config import (
    DEFAULT_MIN_SIMILARITY,
    DEFAULT_RELEVANCE_MARGIN,
    RESPONSE_OVERHEAD_BYTES,
)
from ..core.errors import EmbedderUnavailable, SemanticSearchOff, SessionNotFound
from ..core.limits import Limits
from ..core.metrics import MEMORY_SEARCH_FALLBACKS
from ..sessions.domain import MemoryRecord, SessionKey
from ..sessions.replica import ReadRouting, Replica
from .domain import FoundMemory, MemoryPage, VectorQuery
from .embedding import Embedder, EmbedderFailed, Vectors, stored_vector, stored_vectors
from .first_pass import KeptSignBits
from .ranking import how_found, hybrid_order, semantic_order
from .records import as_taken, entry_record, memory_record
from .relevance import ReferenceVectors, RelevanceRule, by_meaning
from .session_ingestion import SessionIngestion
from .store import MemoryStore

if TYPE_CHECKING:
    from .embedding_backlog import EmbeddingBacklog

logger = logging.getLogger("session_state")


def _attach(records: list[MemoryRecord], model: str, vectors: Vectors) -> list[MemoryRecord]:
    # Built field by field: dataclasses.replace is slow per record, a visible
    # part of an ingest (docs/performance.md, "SQLite ingest, fourth round").
    return [
        MemoryRecord(
            record.session_id,
            record.event_id,
            record.author,
            record.role,
            record.timestamp,
            record.text,
            record.content,
            record.custom_metadata,
            model,
            vector.components,
            vector.bits,
        )
        for record, vector in zip(records, stored_vectors(vectors), strict=True)
    ]


SearchMode = Literal["keyword", "semantic", "hybrid"]

# A hybrid search ranks the best KEYWORD_CANDIDATES keyword matches with the
# memories nearest in meaning: a first pass over the sign bits keeps
# RESCORED_CANDIDATES, scored exactly from their components and judged by
# app.memory.relevance; app.memory.ranking orders the two (docs/memory.md).
KEYWORD_CANDIDATES = 50
RESCORED_CANDIDATES = 300
# How long a search waits for a remote embedder to embed its question
# before it ranks by keywords alone.
QUESTION_EMBEDDING_SECONDS = 2.0


class MemoryService:
    def __init__(
        self,
        store: MemoryStore,
        limits: Limits | None = None,
        *,
        clock: Callable[[], float] = time.time,
        replica: Replica[MemoryStore] | None = None,
        embedder: Embedder | None = None,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        relevance_margin: float = DEFAULT_RELEVANCE_MARGIN,
        backlog: "EmbeddingBacklog | None" = None,
    ) -> None:
        """Searches go to `replica` when it may answer them (app.sessions.replica).
        `embedder`: what embeds memories (None: keyword search only); with a
        remote one, writes leave their memories to `backlog`."""
        self.store = store
        self.reads = ReadRouting(store, replica)
        self.limits = limits or Limits()
        self.clock = clock
        self.embedder = embedder
        self.relevance = RelevanceRule(min_similarity, relevance_margin)
        self.reference = ReferenceVectors()
        # The sign bits kept of each database searched (the primary, a replica).
        self._kept_bits: dict[int, KeptSignBits] = {}
        self.backlog = backlog

    async def _with_vectors(self, records: list[MemoryRecord]) -> list[MemoryRecord]:
        """The records with their vectors when the embedder runs inline; as
        they are otherwise (the backlog is woken for them)."""
        if self.embedder is None or not records:
            return records
        if self.embedder.inline:
            try:
                vectors = await self.embedder.embed([record.text for record in records])
                return _attach(records, self.embedder.model_id, vectors)
            except EmbedderFailed as error:
                logger.warning("memory embedding failed, left for later: %s", error)
        return records

    def _stored(self) -> None:
        """A write is committed: memories left without a vector are the
        backlog's."""
        if self.backlog is not None and self.embedder is not None and not self.embedder.inline:
            self.backlog.wake()

    async def ingest_session(self, key: SessionKey) -> int:
        """Stores the text of the session's events not ingested yet, leaving
        out (and deleting the memories of) the events a rewind undid;
        returns how many were added. Ingesting twice stores nothing twice."""

        embedder = self.embedder if self.embedder is not None and self.embedder.inline else None
        if embedder is not None:
            await embedder.prepare()

        def with_vectors(records: list[MemoryRecord]) -> list[MemoryRecord]:
            if embedder is None:
                return records
            # Inside the store's transaction, hence synchronous: a batch of
            # short texts embeds in milliseconds (docs/performance.md, "Smaller
            # memory figures behind the code").
            try:
                vectors = embedder.embed_inline([record.text for record in records])
            except EmbedderFailed as error:
                logger.warning("memory embedding failed, left for later: %s", error)
                return records
            return _attach(records, embedder.model_id, vectors)

        ingestion = SessionIngestion(key.session_id, with_vectors)
        added = await self.store.ingest_session(key, ingestion, self.clock())
        if added is None:
            raise SessionNotFound.of(key)
        self._stored()
        return added

    async def add_events(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None,
        events: Sequence[dict[str, Any]],
        rewound_event_ids: Sequence[str] = (),
    ) -> int:
        """Takes the events' texts into memory (ADK's add_events_to_memory);
        returns how many were new. Events without a session share one. The
        session's memories of `rewound_event_ids` (events a rewind undid)
        are deleted first."""
        now = self.clock()
        records = [
            record
            for document in events
            if (record := memory_record(session_id or "", as_taken(document, now))) is not None
        ]
        if rewound_event_ids:
            await self.store.remove_session_memories(
                app_name, user_id, session_id or "", rewound_event_ids
            )
        added = await self.store.add_memories(app_name, user_id, await self._with_vectors(records))
        self._stored()
        return added

    async def add_entries(
        self, app_name: str, user_id: str, entries: Sequence[tuple[dict[str, Any], float | None]]
    ) -> list[str]:
        """Writes memory entries directly (ADK's add_memory), each with its
        time (None: now); returns their ids in order."""
        now = self.clock()
        records = [entry_record(entry, now if at is None else at) for entry, at in entries]
        # The last of several entries sent with one id is the one kept.
        unique = list({record.event_id: record for record in records}.values())
        await self.store.replace_memories(app_name, user_id, await self._with_vectors(unique))
        self._stored()
        return [record.event_id for record in records]

    async def delete_memory(self, app_name: str, user_id: str, memory_id: str) -> None:
        """Deletes one memory (ADK's delete_memory); an unknown id is a no-op."""
        await self.store.forget_memory(app_name, user_id, memory_id)

    async def search(
        self, app_name: str, user_id: str, question: str, limit: int, mode: SearchMode = "hybrid"
    ) -> list[FoundMemory]:
        """The best matches: by keywords, by meaning, or both fused (hybrid),
        each with the side that found it and its score (app.memory.ranking).
        Without an embedder, or when the question cannot be embedded in time,
        hybrid ranks by keywords; semantic is then refused."""
        budget = self.limits.max_response_bytes - RESPONSE_OVERHEAD_BYTES
        question_vector = None if mode == "keyword" else await self._question_vector(mode, question)
        if question_vector is None or self.embedder is None:
            matches = await self.reads.read(
                lambda store: store.search_memories(app_name, user_id, question, limit, budget)
            )
            return [FoundMemory(record, "keyword", share) for record, share in matches]
        embedder, vector = self.embedder, question_vector
        stored = stored_vector(vector)
        keyword_limit = max(KEYWORD_CANDIDATES, limit) if mode == "hybrid" else 0

        async def rank_and_read(store: MemoryStore) -> list[FoundMemory]:
            # One read of one database (a replica or the primary): the rows
            # ranked are the rows read back.
            query = VectorQuery(
                embedder.model_id,
                stored.bits,
                max(RESCORED_CANDIDATES, limit),
                self._kept_bits.setdefault(id(store), KeptSignBits()),
            )
            candidates = await store.memory_candidates(
                app_name, user_id, question, keyword_limit, query
            )
            reference = self.reference.get(embedder)
            scored = by_meaning(
                vector,
                candidates.nearest,
                reference,
                self.relevance,
                limit,
                also=[row for row, _ in candidates.keyword],
            )
            calibrated = reference is not None
            if mode == "semantic":
                ids = semantic_order(scored, self.relevance, calibrated)
            else:
                ids = hybrid_order(candidates.keyword, scored, self.relevance, calibrated)
            read = await store.read_memories(app_name, user_id, ids[:limit], budget)
            how = how_found(
                [row for row, _ in read], candidates.keyword, scored, self.relevance, calibrated
            )
            return [FoundMemory(record, *how[row]) for row, record in read]

        return await self.reads.read(rank_and_read)

    async def list_memories(
        self, app_name: str, user_id: str, before: int | None, limit: int
    ) -> MemoryPage:
        """The user's memories, the last added first, below row `before` when
        given: at most `limit`, and no more than fit in one response (always
        the first)."""
        budget = self.limits.max_response_bytes - RESPONSE_OVERHEAD_BYTES

        async def page(store: MemoryStore) -> MemoryPage:
            ids = await store.list_memory_ids(app_name, user_id, before, limit + 1)
            considered = ids[:limit]
            read = await store.read_memories(app_name, user_id, considered, budget)
            if read and len(read) < len(considered):
                # Cut to fit (or some deleted meanwhile): on from the last one read.
                next_before: int | None = read[-1][0]
            else:
                next_before = considered[-1] if len(ids) > limit else None
            return MemoryPage([record for _, record in read], next_before)

        return await self.reads.read(page)

    async def _question_vector(self, mode: SearchMode, question: str) -> Vectors | None:
        if self.embedder is None:
            if mode == "semantic":
                raise SemanticSearchOff.of()
            return None
        try:
            async with asyncio.timeout(QUESTION_EMBEDDING_SECONDS):  # see app.streams.changes
                vectors = await self.embedder.embed([question])
        except (EmbedderFailed, TimeoutError) as error:
            if mode == "semantic":
                raise EmbedderUnavailable.of() from None
            MEMORY_SEARCH_FALLBACKS.inc()
            logger.warning("question not embedded, ranked by keywords: %s", error or "timeout")
            return None
        vector: Vectors = vectors[0]
        # A question of no known token is similar to nothing.
        return vector if vector.any() else None

    async def forget_user(self, app_name: str, user_id: str) -> None:
        await self.store.forget_user_memories(app_name, user_id)

    async def close(self) -> None:
        await self.reference.close()
