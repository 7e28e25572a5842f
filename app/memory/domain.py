"""The values of a search by meaning that the memory service and the
memory stores pass each other."""

from dataclasses import dataclass
from typing import Literal

from ..sessions.domain import MemoryRecord
from .first_pass import KeptSignBits

# Which side of a search found a memory: its keyword side, its side by
# meaning (held to app.memory.relevance), or both.
MatchedBy = Literal["keyword", "meaning", "both"]


@dataclass(frozen=True)
class VectorQuery:
    """A question's vector for a search by meaning: only memories embedded
    by `model` (with bits of the same length) are compared; the `keep`
    nearest by Hamming distance of the sign bits are returned with their
    components, for an exact rescoring. `kept`: the sign bits this process
    keeps of the database searched (app.memory.first_pass)."""

    model: str
    bits: bytes
    keep: int
    kept: KeptSignBits | None = None


@dataclass(frozen=True)
class MemoryCandidates:
    """Row ids of the best keyword matches, best first, each with the share
    of the question's terms it holds (1.0: every term); and the nearest
    memories by sign bits with their int8 components."""

    keyword: list[tuple[int, float]]
    nearest: list[tuple[int, bytes]]


@dataclass(frozen=True)
class MemoryPage:
    """A page of a user's memories, newest first, and where the next page
    starts: below that row id (None: this was the last)."""

    memories: list[MemoryRecord]
    next_before: int | None


@dataclass(frozen=True)
class FoundMemory:
    """A search's result: the memory, which side found it, and its score:
    its relevance by meaning when that side found it, else the share of the
    question's terms it holds (app.memory.ranking.how_found; docs/api.md)."""

    record: MemoryRecord
    matched_by: MatchedBy
    score: float
