"""The values of a search by meaning that the memory service and the
memory stores pass each other."""

from dataclasses import dataclass

from .first_pass import KeptSignBits


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
