"""Ways to tell a paraphrase from an unrelated question with the bundled
model, measured on the labelled set's tuning part only
(tests/memory_evaluation_set.py; the held-out part is never read here).

Each candidate scores a (question, memory) pair; the service's rule
(app.memory.relevance) is the candidate "2nd nearest, max". For each it
prints, on the tuning part:
- hit@1 and hit@3 of the paraphrases when memories are ranked by its score
  (plain cosine: the model's own ranking);
- the highest score of any memory for a question that relates to nothing
  (the unrelated questions, six scripts), and how many paraphrases score
  their fact above it: those a rule on this score can find while answering
  every unrelated question with nothing;
- with the service's floor on the cosine (0.2), paraphrase facts admitted
  and unrelated questions answered at margins 0, -0.02, -0.04 and -0.06.

Candidates: the model's vectors truncated to fewer dimensions (the wheel
holds 256, the most it has: 512 and 1024 would be downloaded); a text's
background as its k-th nearest reference text, or the mean of its k
nearest (as CSLS), combined by max or mean; backgrounds against reference
texts of the same form (questions, statements) or of the other's form;
vectors centred on the reference texts' mean; the question embedded
without punctuation, or without English stop words; and, with no reference
texts, how a memory stands among the user's memories for the question (its
cosine's z-score among them, or its cosine less the best of the others'),
whose scores have a scale of their own (their margin columns mean
nothing: read "facts above it").

    python -m bench.relevance_candidates    # prints, writes bench/results/<name>.json

Figures: docs/performance.md, "Memory recall under the relevance rule".
"""

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import numpy.typing as npt

from bench import RESULTS
from session_state.core.config import DEFAULT_MIN_SIMILARITY
from session_state.memory.embedding import wordllama_vectors
from session_state.memory.reference_texts import REFERENCE_TEXTS
from session_state.memory.search_text import STOP_WORDS
from tests.memory_evaluation_set import TUNING

Matrix = npt.NDArray[np.float32]
MARGINS = (0.0, -0.02, -0.04, -0.06)
_QUESTION_MARKS = ("?", "？", "؟", ";")  # noqa: RUF001 (full-width on purpose)


def _unit(vectors: Matrix) -> Matrix:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: Matrix = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return unit


def _is_question(text: str) -> bool:
    return text.rstrip().endswith(_QUESTION_MARKS)


def _kth(similarity: Matrix, k: int) -> Matrix:
    kth: Matrix = np.sort(similarity, axis=1)[:, -k]
    return kth


def _top_mean(similarity: Matrix, k: int) -> Matrix:
    mean: Matrix = np.sort(similarity, axis=1)[:, -k:].mean(axis=1)
    return mean


@dataclass(frozen=True)
class Texts:
    """A candidate's view of the part: each text as it embeds it."""

    memories: list[str]
    questions: list[str]
    dimensions: int = 256
    centred: bool = False
    question_form: Callable[[str], str] = lambda question: question

    def vectors(self) -> tuple[Matrix, Matrix, Matrix]:
        """Memories, questions, reference texts."""
        reference = wordllama_vectors(REFERENCE_TEXTS)[:, : self.dimensions]
        memories = wordllama_vectors(self.memories)[:, : self.dimensions]
        asked = [self.question_form(question) or question for question in self.questions]
        questions = wordllama_vectors(asked)[:, : self.dimensions]
        if self.centred:
            mean = reference.mean(axis=0)
            reference, memories, questions = (
                reference - mean,
                memories - mean,
                questions - mean,
            )
        return _unit(memories), _unit(questions), _unit(reference)


# A background: (texts' vectors, reference vectors, whether each reference
# text is a question) -> one value per text.
Background = Callable[[Matrix, Matrix, npt.NDArray[np.bool_]], Matrix]


@dataclass(frozen=True)
class Candidate:
    name: str
    texts: Callable[[list[str], list[str]], Texts]
    # None: plain cosine.
    background: tuple[int, str, str] | None = (2, "kth", "max")
    # "all" reference texts, "same" form as the text, or the "other" text's form
    form: str = "all"
    # Instead of reference texts, how the memory stands among the user's
    # memories for the question: "z" (its cosine's z-score among them) or
    # "next" (its cosine less the best of the others').
    among_memories: str | None = None


def _background(vectors: Matrix, reference: Matrix, k: int, how: str) -> Matrix:
    similarity = vectors @ reference.T
    return _kth(similarity, k) if how == "kth" else _top_mean(similarity, k)


def _among_memories(cosine: Matrix, how: str) -> Matrix:
    if how == "z":
        mean = cosine.mean(axis=1, keepdims=True)
        deviation = cosine.std(axis=1, keepdims=True)
        z: Matrix = ((cosine - mean) / deviation).astype(np.float32)
        return z
    # Each memory against the best of the others: the best one against the
    # second, every other against the best.
    ordered = np.sort(cosine, axis=1)
    best, second = ordered[:, -1:], ordered[:, -2:-1]
    next_best: Matrix = (cosine - np.where(cosine >= best, second, best)).astype(np.float32)
    return next_best


def scores(candidate: Candidate, texts: Texts) -> tuple[Matrix, Matrix]:
    """(cosine, score) of every question (rows) with every memory."""
    memories, questions, reference = texts.vectors()
    cosine: Matrix = questions @ memories.T
    if candidate.among_memories is not None:
        return cosine, _among_memories(cosine, candidate.among_memories)
    if candidate.background is None:
        return cosine, cosine
    k, how, combine = candidate.background
    asks = np.array([_is_question(text) for text in REFERENCE_TEXTS])
    if candidate.form == "all":
        question_side = _background(questions, reference, k, how)[:, None]
        memory_side = _background(memories, reference, k, how)[None, :]
    else:
        # Each side's background against the reference texts of one form.
        of = {
            form: (
                _background(questions, reference[asks == form], k, how),
                _background(memories, reference[asks == form], k, how),
            )
            for form in (True, False)
        }
        question_is = np.array([_is_question(text) for text in texts.questions])[:, None]
        memory_is = np.array([_is_question(text) for text in texts.memories])[None, :]
        same = candidate.form == "same"
        question_form, memory_form = (question_is, memory_is) if same else (memory_is, question_is)
        question_side = np.where(question_form, of[True][0][:, None], of[False][0][:, None])
        memory_side = np.where(memory_form, of[True][1][None, :], of[False][1][None, :])
    background = (
        np.maximum(question_side, memory_side)
        if combine == "max"
        else (question_side + memory_side) / 2
    )
    relevance: Matrix = (cosine - background).astype(np.float32)
    return cosine, relevance


@dataclass(frozen=True)
class Separation:
    hit_at_1: int
    hit_at_3: int
    paraphrases: int
    # the highest score of a memory for an unrelated question
    highest_unrelated: float
    # paraphrases whose fact scores above it
    above_every_unrelated: int
    # margin -> (paraphrase facts admitted, unrelated questions answered)
    at_margin: dict[str, tuple[int, int]]


def separation(candidate: Candidate) -> Separation:
    ids = list(TUNING.memories)
    paraphrases = [question for question, _ in TUNING.paraphrases]
    unrelated = [question for question, _ in TUNING.unrelated]
    texts = candidate.texts([TUNING.memories[memory] for memory in ids], paraphrases + unrelated)
    cosine, score = scores(candidate, texts)
    facts = np.array([ids.index(fact) for _, fact in TUNING.paraphrases])
    rows = np.arange(len(paraphrases))
    fact_score = score[rows, facts]
    rank = (score[: len(paraphrases)] > fact_score[:, None]).sum(axis=1)
    unrelated_score = score[len(paraphrases) :]
    highest = float(unrelated_score.max())
    at_margin = {}
    for margin in MARGINS:
        admitted = (cosine >= DEFAULT_MIN_SIMILARITY) & (score >= margin)
        at_margin[f"{margin:+.2f}"] = (
            int(admitted[rows, facts].sum()),
            int(admitted[len(paraphrases) :].any(axis=1).sum()),
        )
    return Separation(
        hit_at_1=int((rank == 0).sum()),
        hit_at_3=int((rank < 3).sum()),
        paraphrases=len(paraphrases),
        highest_unrelated=round(highest, 3),
        above_every_unrelated=int((fact_score > highest).sum()),
        at_margin=at_margin,
    )


def _plain(memories: list[str], questions: list[str]) -> Texts:
    return Texts(memories, questions)


def _dimensions(count: int) -> Callable[[list[str], list[str]], Texts]:
    return lambda memories, questions: Texts(memories, questions, dimensions=count)


def _centred(memories: list[str], questions: list[str]) -> Texts:
    return Texts(memories, questions, centred=True)


def _words(question: str) -> list[str]:
    return re.findall(r"\w+(?:'\w+)?", question)


def _without_punctuation(memories: list[str], questions: list[str]) -> Texts:
    return Texts(memories, questions, question_form=lambda text: " ".join(_words(text)))


def _without_stop_words(memories: list[str], questions: list[str]) -> Texts:
    def form(text: str) -> str:
        return " ".join(word for word in _words(text) if word.lower() not in STOP_WORDS)

    return Texts(memories, questions, question_form=form)


CANDIDATES = (
    Candidate("plain cosine (the model's ranking)", _plain, background=None),
    Candidate("2nd nearest, max (the service's rule)", _plain),
    Candidate("1st nearest, max", _plain, background=(1, "kth", "max")),
    Candidate("3rd nearest, max", _plain, background=(3, "kth", "max")),
    Candidate("5th nearest, max", _plain, background=(5, "kth", "max")),
    Candidate("2nd nearest, mean of both sides", _plain, background=(2, "kth", "mean")),
    Candidate("mean of 3 nearest, mean (CSLS)", _plain, background=(3, "mean", "mean")),
    Candidate("mean of 10 nearest, mean (CSLS)", _plain, background=(10, "mean", "mean")),
    Candidate("2nd nearest of the same form, max", _plain, form="same"),
    Candidate("2nd nearest of the other's form, max", _plain, form="other"),
    Candidate("centred on the reference mean, 2nd, max", _centred),
    Candidate("128 dimensions, 2nd, max", _dimensions(128)),
    Candidate("64 dimensions, 2nd, max", _dimensions(64)),
    Candidate("question without punctuation, 2nd, max", _without_punctuation),
    Candidate("question without stop words, 2nd, max", _without_stop_words),
    Candidate("z-score among the user's memories", _plain, among_memories="z"),
    Candidate("less the user's next best memory", _plain, among_memories="next"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="relevance_candidates")
    parser.add_argument("--quick", action="store_true", help="the same run (it takes seconds)")
    arguments = parser.parse_args(argv)
    report = {candidate.name: separation(candidate) for candidate in CANDIDATES}
    print(f"tuning part: {len(TUNING.paraphrases)} paraphrases, {len(TUNING.unrelated)} unrelated")
    print(
        f"  {'candidate':44} hit@1 hit@3  highest unrelated  facts above it  "
        + "  ".join(f"margin {margin}" for margin in report[CANDIDATES[1].name].at_margin)
    )
    for name, found in report.items():
        margins = "  ".join(
            f"{facts:2} / {answered:2} answered" for facts, answered in found.at_margin.values()
        )
        print(
            f"  {name:44} {found.hit_at_1:5} {found.hit_at_3:5}  {found.highest_unrelated:+17.3f}"
            f"  {found.above_every_unrelated:14}  {margins}"
        )
    rule = report[CANDIDATES[1].name]
    best = max(found.above_every_unrelated for found in report.values())
    print(
        "  Check: no candidate separates more paraphrases from every unrelated question "
        f"than the service's rule ({rule.above_every_unrelated}): "
        f"{'met' if best <= rule.above_every_unrelated else 'NOT met'}"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(
        json.dumps({name: asdict(found) for name, found in report.items()}, indent=2) + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
