"""How a search orders what its two sides found: pure rules, no storage.

- A memory holding every term of the question (a name, a number, a code)
  is an exact match: the keyword ranking stands alone, as ADK's search
  gives it.
- Otherwise the memories holding most of the question's terms (more than
  half: "XJ-4471-B parcel" holds a code the model cannot place) come first,
  in keyword order; then every other memory found, by its relevance by
  meaning (app.memory.relevance) plus KEYWORD_SHARE_WEIGHT times the share
  of the question's terms it holds. Every keyword match is returned (ADK's
  search returns any memory holding a word of the question); a memory
  found by meaning alone only when the relevance rule admits it.

Each result then says which side found it and its score (how_found).

Reciprocal rank fusion, used before, gave a memory holding one common word
of the question ("kind" in "what kind of dog") the weight of the memory
nearest in meaning, and lost paraphrases the model alone ranks first
(docs/performance.md, "Memory relevance and recall").
"""

import math
from collections.abc import Sequence

from .domain import MatchedBy
from .relevance import ByMeaning, RelevanceRule

# A nudge, not a ranking: a memory sharing one word of a question of three
# gains 0.017 of relevance. Larger weights put word-sharing distractors
# ("Car parks in the city centre are expensive" for "what car does the user
# have?") before the memory meant, on the labelled set's tuning part.
KEYWORD_SHARE_WEIGHT = 0.05

KeywordHits = Sequence[tuple[int, float]]


def holds_every_term(keyword: KeywordHits) -> bool:
    return bool(keyword) and keyword[0][1] >= 1.0


def semantic_order(scored: Sequence[ByMeaning], rule: RelevanceRule, calibrated: bool) -> list[int]:
    """Row ids found by meaning alone, most relevant first."""
    return [found.row for found in scored if rule.admits(found, calibrated)]


def hybrid_order(
    keyword: KeywordHits, scored: Sequence[ByMeaning], rule: RelevanceRule, calibrated: bool
) -> list[int]:
    """Row ids of both sides in one order (see the module's rules)."""
    if holds_every_term(keyword):
        return [row for row, _ in keyword]
    relevance = {found.row: found.relevance for found in scored}
    share = dict(keyword)
    pool = list(
        dict.fromkeys(
            [row for row, _ in keyword]
            + [found.row for found in scored if rule.admits(found, calibrated)]
        )
    )
    position = {row: index for index, row in enumerate(pool)}

    def order(row: int) -> tuple[bool, float, int]:
        held = share.get(row, 0.0)
        if held > 0.5:
            return (False, 0.0, position[row])
        # A keyword match the first pass by meaning did not keep is farther
        # in meaning than every memory it kept: after them, in keyword order.
        found = relevance.get(row, -math.inf)
        return (True, -(found + KEYWORD_SHARE_WEIGHT * held), position[row])

    return sorted(pool, key=order)


def how_found(
    rows: Sequence[int],
    keyword: KeywordHits,
    scored: Sequence[ByMeaning],
    rule: RelevanceRule,
    calibrated: bool,
) -> dict[int, tuple[MatchedBy, float]]:
    """Which side found each of `rows` (results of one of the orders above)
    and its score: a memory the relevance rule admits was found by meaning
    (by both when it is also a keyword match) and scores its relevance; any
    other is a keyword match and scores the share of the question's terms it
    holds. Describes the order, never changes it."""
    share = dict(keyword)
    admitted = {found.row: found.relevance for found in scored if rule.admits(found, calibrated)}
    found: dict[int, tuple[MatchedBy, float]] = {}
    for row in rows:
        if row in admitted:
            found[row] = ("both" if row in share else "meaning", admitted[row])
        else:
            found[row] = ("keyword", share[row])
    return found
