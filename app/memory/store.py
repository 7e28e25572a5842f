"""The storage of long-term memory: memories per (app, user), forgotten ids,
keyword and vector candidates, and the embedding backlog. Implemented by both
backends' stores (app.stores)."""

from collections.abc import Sequence
from typing import Protocol

from ..sessions.domain import EmbeddingBacklogCount, MemoryRecord, SessionKey, StoredEvent
from .domain import MemoryCandidates, VectorQuery
from .embedding import StoredVector


class SessionIngestion(Protocol):
    """What memory takes of a stored session, whose events a store reads
    twice in one transaction: first all of them (`note`), then, batch by
    batch, their memories (`memories_of`)."""

    def note(self, events: Sequence[StoredEvent]) -> None:
        """A batch of the first reading, in order."""
        ...

    def memories_of(self, events: Sequence[StoredEvent]) -> list[MemoryRecord]:
        """What memory keeps of a batch of the second reading."""
        ...

    def undone_event_ids(self) -> list[str]:
        """The memory ids of the events a rewind undid (after the first
        reading): their memories of the session are deleted."""
        ...


class MemoryStore(Protocol):
    # -- memory --------------------------------------------------------------
    # Writes of one user's memory are serialised, so that an add racing a
    # delete_memory cannot bring a deleted id back.

    async def ingest_session(
        self, key: SessionKey, ingestion: SessionIngestion, now: float
    ) -> int | None:
        """Stores the memories of the session's events not stored yet, read
        in bounded batches, and deletes those of the events a rewind undid;
        returns how many were added, None if there is no such session."""
        ...

    async def remove_session_memories(
        self, app_name: str, user_id: str, session_id: str, event_ids: Sequence[str]
    ) -> None:
        """Deletes the session's memories of these events (a rewind undid
        them); unlike delete_memory, the ids may be taken again."""
        ...

    async def add_memories(
        self, app_name: str, user_id: str, records: Sequence[MemoryRecord]
    ) -> int:
        """Stores the memories not stored yet and not forgotten; returns how
        many were added."""
        ...

    async def replace_memories(
        self, app_name: str, user_id: str, records: Sequence[MemoryRecord]
    ) -> None:
        """Stores memories written directly: an id given again replaces its
        memory, and a forgotten id may be written again."""
        ...

    async def forget_memory(self, app_name: str, user_id: str, memory_id: str) -> None:
        """Deletes the memories of that id and remembers it as forgotten; an
        unknown id is a no-op."""
        ...

    async def search_memories(
        self, app_name: str, user_id: str, question: str, limit: int, budget: int
    ) -> list[tuple[MemoryRecord, float]]:
        """The best keyword matches, at most `limit` and about `budget` bytes
        (always the first), each with the share of the question's terms it
        holds (1.0: every term)."""
        ...

    async def forget_user_memories(self, app_name: str, user_id: str) -> None: ...

    # -- search by meaning (app.memory.embedding) -------------------------------------

    async def memory_candidates(
        self,
        app_name: str,
        user_id: str,
        question: str,
        keyword_limit: int,
        query: VectorQuery | None,
    ) -> MemoryCandidates:
        """The best keyword matches' row ids (at most `keyword_limit`) and,
        for a vector query, the memories nearest it; each side reads a
        snapshot of its own (`memory_candidates.py`)."""
        ...

    async def read_memories(
        self, app_name: str, user_id: str, ids: Sequence[int], budget: int
    ) -> list[tuple[int, MemoryRecord]]:
        """The user's memories of these row ids in that order, each with its
        row id, as many as fit in `budget` bytes (always the first); ids gone
        meanwhile are skipped."""
        ...

    async def list_memory_ids(
        self, app_name: str, user_id: str, before: int | None, limit: int
    ) -> list[int]:
        """Row ids of the user's memories, newest (highest) first, below
        `before` when given; at most `limit`."""
        ...

    async def claim_memories_to_embed(
        self,
        model: str,
        limit: int,
        app_name: str | None,
        user_id: str | None,
        *,
        now: float,
        until: float,
        max_tries: int,
    ) -> list[tuple[int, str]]:
        """(row id, text) of at most `limit` memories not embedded by `model`
        (of one app, or one user, when given), refused fewer than `max_tries`
        times, not claimed at `now`, in id order: each claimed until `until`,
        so that no other process takes it meanwhile (one claim per row, also
        when several processes claim at once)."""
        ...

    async def release_memories_to_embed(self, ids: Sequence[int]) -> None:
        """Ends these rows' claims (the embedder failed: others may try)."""
        ...

    async def refuse_memories_to_embed(self, ids: Sequence[int], retry_at: float) -> None:
        """The embedder refused these rows' texts alone: one more refusal
        each, and not claimed again before `retry_at`."""
        ...

    async def retry_refused_embeddings(
        self, model: str, app_name: str | None, user_id: str | None
    ) -> int:
        """Forgets the refusals of the memories waiting for `model`, so that
        they are tried again; returns how many had any."""
        ...

    async def count_memories_to_embed(
        self, model: str, app_name: str | None, user_id: str | None, max_tries: int
    ) -> EmbeddingBacklogCount: ...

    async def store_embeddings(
        self, model: str, vectors: Sequence[tuple[int, StoredVector]]
    ) -> None:
        """Sets these rows' vectors, ending their claims and refusals (rows
        deleted meanwhile are skipped)."""
        ...
