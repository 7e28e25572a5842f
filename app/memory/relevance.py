"""Whether a memory found by meaning is relevant to the question, for any
embedder, in any script.

An embedder places texts of one script, and short texts, near each other
whatever they say: with the local model two unrelated Arabic sentences
score a higher cosine than many an English question and the memory that
answers it. No one floor on the cosine tells them apart. What does is how near each of the two
is to text about nothing in particular: the embedder's own vectors of
REFERENCE_TEXTS (app.memory.reference_texts), embedded once per process
and model. A text's *background* is its similarity to the reference text
it is REFERENCE_RANK-th nearest; the memory's *relevance* is

    cosine(question, memory) - max(background(question), background(memory))

and it is found by meaning only when that is at least the margin
(SESSION_STATE_MEMORY_RELEVANCE_MARGIN, 0 by default: the two are nearer
each other than either is to all but one of the reference texts) and its
cosine at least SESSION_STATE_MEMORY_MIN_SIMILARITY. Design and figures:
docs/memory.md, "Relevance"; docs/performance.md, "Memory relevance and
recall".
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .embedding import Embedder, EmbedderFailed, Vectors, components_of
from .reference_texts import REFERENCE_TEXTS

logger = logging.getLogger("session_state")

# The reference text whose similarity is a text's background: the second
# nearest, so that one reference text that happens to share a memory's topic
# does not make the memory's background high.
REFERENCE_RANK = 2
# A remote embedder that could not embed the reference texts is asked again
# after this long; meanwhile only the floor on the cosine applies.
REFERENCE_RETRY_SECONDS = 60.0


def backgrounds(vectors: Vectors, reference: Vectors) -> npt.NDArray[np.float32]:
    """Each row's similarity to its REFERENCE_RANK-th nearest reference text."""
    similarity = vectors @ reference.T
    rank = min(REFERENCE_RANK, reference.shape[0])
    nearest: npt.NDArray[np.float32] = np.partition(similarity, -rank, axis=1)[:, -rank]
    return nearest


@dataclass(frozen=True)
class ByMeaning:
    """A memory (row id) the question's vector was compared with."""

    row: int
    similarity: float  # cosine
    relevance: float  # cosine less the higher background


@dataclass(frozen=True)
class RelevanceRule:
    """What a memory found by meaning alone must reach."""

    min_similarity: float
    margin: float

    def admits(self, found: ByMeaning, calibrated: bool) -> bool:
        if found.similarity < self.min_similarity:
            return False
        return not calibrated or found.relevance >= self.margin


# Rows scored against the reference texts at a time: products this small
# run on one thread (OpenBLAS splits larger ones across threads, which on a
# busy machine costs far more than it saves).
SCORED_AT_ONCE = 8


def by_meaning(
    question: Vectors,
    nearest: Sequence[tuple[int, bytes]],
    reference: Vectors | None,
    rule: RelevanceRule,
    wanted: int,
    also: Collection[int] = (),
) -> list[ByMeaning]:
    """Rows of `nearest` (row id, stored components) scored against the
    question, most relevant first (ties by row id): the rows of `also`, and
    the most relevant until `wanted` the rule admits are found and no other
    can come before them (a row's relevance is at most its cosine less the
    question's background). Without reference vectors (a remote embedder
    that has not embedded them yet) relevance is the cosine, for every row."""
    if not nearest:
        return []
    rows = [row for row, _ in nearest]
    components = components_of([stored for _, stored in nearest])
    similarity = components @ question
    if reference is None:
        return _sorted(rows, similarity, similarity, range(len(rows)))
    question_background = float(backgrounds(question[None, :], reference)[0])
    relevance = np.full(len(rows), np.nan, dtype=np.float32)

    def score(positions: npt.NDArray[np.intp]) -> None:
        memory_background = backgrounds(components[positions], reference)
        relevance[positions] = similarity[positions] - np.maximum(
            memory_background, question_background
        )

    asked = {row for row in also}
    named = np.array([index for index, row in enumerate(rows) if row in asked], dtype=np.intp)
    for start in range(0, len(named), SCORED_AT_ONCE):
        score(named[start : start + SCORED_AT_ONCE])
    bound = similarity - question_background
    order = np.argsort(-bound, kind="stable")
    admitted: list[float] = []
    for start in range(0, len(order), SCORED_AT_ONCE):
        chunk = order[start : start + SCORED_AT_ONCE]
        highest = float(bound[chunk[0]])
        if highest < rule.margin or (
            len(admitted) >= wanted and sorted(admitted)[-wanted] >= highest
        ):
            break
        score(chunk[np.isnan(relevance[chunk])])
        admitted += [
            float(relevance[index])
            for index in chunk
            if similarity[index] >= rule.min_similarity and relevance[index] >= rule.margin
        ]
    return _sorted(rows, similarity, relevance, np.flatnonzero(~np.isnan(relevance)))


def _sorted(
    rows: list[int], similarity: Vectors, relevance: Vectors, positions: Iterable[int]
) -> list[ByMeaning]:
    scored = [
        ByMeaning(rows[index], float(similarity[index]), float(relevance[index]))
        for index in positions
    ]
    scored.sort(key=lambda found: (-found.relevance, found.row))
    return scored


class ReferenceVectors:
    """The embedder's vectors of REFERENCE_TEXTS, made once per model id:
    inline (the local model: some milliseconds), or in a task of their own
    (a remote embedder: searches meanwhile do without)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._vectors: dict[str, Vectors] = {}
        self._task: asyncio.Task[None] | None = None
        self._retry_at = 0.0

    def get(self, embedder: Embedder) -> Vectors | None:
        """The vectors of the embedder's current model, or None while they
        are not made (then starting to make them)."""
        found = self._vectors.get(embedder.model_id)
        if found is not None:
            return found
        if embedder.inline:
            try:
                vectors = embedder.embed_inline(REFERENCE_TEXTS)
            except EmbedderFailed as error:
                logger.warning("reference texts not embedded: %s", error)
                return None
            self._vectors[embedder.model_id] = vectors
            return vectors
        if (self._task is None or self._task.done()) and self.clock() >= self._retry_at:
            self._task = asyncio.create_task(self._embed(embedder, embedder.model_id))
        return None

    async def _embed(self, embedder: Embedder, model_id: str) -> None:
        try:
            vectors = await embedder.embed(REFERENCE_TEXTS)
        except EmbedderFailed as error:
            self._retry_at = self.clock() + REFERENCE_RETRY_SECONDS
            logger.warning(
                "reference texts not embedded, relevance falls back to the floor: %s", error
            )
            return
        self._vectors[model_id] = vectors

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
