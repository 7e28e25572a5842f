"""Scoring a memory search on the labelled evaluation set
(tests/memory_evaluation_set.py), the same way for every searcher: the
service through REST or HttpMemoryService, the bundled model ranking by
plain cosine in numpy, ADK's InMemoryMemoryService. Used by
tests/test_memory_relevance.py and bench/memory_relevance.py."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np
from google.adk.events import Event
from google.genai import types

from session_state.core.config import DEFAULT_MIN_SIMILARITY, DEFAULT_RELEVANCE_MARGIN
from session_state.memory.embedding import wordllama_vectors
from session_state.memory.reference_texts import REFERENCE_TEXTS
from session_state.memory.relevance import backgrounds
from tests.memory_evaluation_set import EvaluationPart

# A search: question -> memory ids found, best first.
Search = Callable[[str], Awaitable[list[str]]]


@dataclass(frozen=True)
class Figures:
    paraphrases: int
    paraphrase_hit_at_1: int
    paraphrase_hit_at_3: int
    exact_terms: int
    exact_hit_at_1: int
    unrelated: int
    # unrelated questions answered with nothing
    unrelated_empty: int

    def line(self) -> str:
        return (
            f"paraphrase hit@1 {self.paraphrase_hit_at_1:2}/{self.paraphrases} "
            f"hit@3 {self.paraphrase_hit_at_3:2}/{self.paraphrases}, "
            f"exact first {self.exact_hit_at_1:2}/{self.exact_terms}, "
            f"unrelated answered with nothing {self.unrelated_empty:2}/{self.unrelated}"
        )


def figures_of(part: EvaluationPart, found: dict[str, list[str]]) -> Figures:
    return Figures(
        paraphrases=len(part.paraphrases),
        paraphrase_hit_at_1=sum(
            found[question][:1] == [fact] for question, fact in part.paraphrases
        ),
        paraphrase_hit_at_3=sum(fact in found[question][:3] for question, fact in part.paraphrases),
        exact_terms=len(part.exact_terms),
        exact_hit_at_1=sum(found[question][:1] == [fact] for question, fact in part.exact_terms),
        unrelated=len(part.unrelated),
        unrelated_empty=sum(not found[question] for question, _ in part.unrelated),
    )


def questions(part: EvaluationPart) -> list[str]:
    return [question for question, _ in (*part.paraphrases, *part.exact_terms, *part.unrelated)]


async def evaluate(part: EvaluationPart, search: Search) -> tuple[Figures, dict[str, list[str]]]:
    found = {question: await search(question) for question in questions(part)}
    return figures_of(part, found), found


def entries(part: EvaluationPart) -> list[dict[str, object]]:
    """The part's memories as the REST API's entries, one second apart."""
    return [
        {
            "id": memory_id,
            "content": {"role": "user", "parts": [{"text": text}]},
            "timestamp": f"2026-01-01T00:00:{index:02d}Z",
        }
        for index, (memory_id, text) in enumerate(part.memories.items())
    ]


def events(part: EvaluationPart) -> list[Event]:
    """The part's memories as ADK events (what add_events_to_memory takes)."""
    return [
        Event(
            id=memory_id,
            invocation_id="evaluation",
            author="user",
            timestamp=1_767_225_600.0 + index,
            content=types.Content(role="user", parts=[types.Part(text=text)]),
        )
        for index, (memory_id, text) in enumerate(part.memories.items())
    ]


def plain_cosine(
    part: EvaluationPart, *, relevance_rule: bool = False, limit: int = 10
) -> dict[str, list[str]]:
    """The bundled model alone: each question's memories by plain cosine
    similarity (numpy), the best `limit`. With `relevance_rule`, only the
    memories the service's default rule would admit (the same floor and
    margin against the same reference texts), so that it too answers
    unrelated questions with nothing."""
    ids = list(part.memories)
    memories = wordllama_vectors([part.memories[memory_id] for memory_id in ids])
    asked = questions(part)
    vectors = wordllama_vectors(asked)
    similarity = vectors @ memories.T
    reference = wordllama_vectors(REFERENCE_TEXTS)
    memory_background = backgrounds(memories, reference)
    question_background = backgrounds(vectors, reference)
    found = {}
    for row, question in enumerate(asked):
        order = np.argsort(-similarity[row], kind="stable")
        if relevance_rule:
            relevance = similarity[row] - np.maximum(memory_background, question_background[row])
            order = [
                column
                for column in order
                if similarity[row, column] >= DEFAULT_MIN_SIMILARITY
                and relevance[column] >= DEFAULT_RELEVANCE_MARGIN
            ]
        found[question] = [ids[column] for column in order[:limit]]
    return found
