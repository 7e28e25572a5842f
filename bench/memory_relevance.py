"""Memory search quality on the labelled evaluation set
(tests/memory_evaluation_set.py, a tuning part and a held-out part): hit@1
and hit@3 of the paraphrase questions, exact terms found first, and the
unrelated questions (six scripts) answered with nothing, for

- the service, one or two checkouts, on SQLite and PostgreSQL, through REST
  (hybrid, semantic) and HttpMemoryService (ADK's search_memory, memories
  written as ADK events);
- the bundled model alone, ranking by plain cosine in numpy, with no floor
  and held to the service's relevance rule;
- ADK's InMemoryMemoryService;
- and, step by step, where the service's ranking differs from the model's:
  int8 components, the sign-bit first pass keeping 300, ranking by
  relevance, the relevance rule.

`--filler N` stores N memories of bench.memory_search's corpus (word salad
in English, templated Japanese, Chinese, Korean and Russian sentences)
before each part's, so the first pass and the rule work among many.

    python -m bench.memory_relevance --before <checkout> --filler 10000
    python -m bench.memory_relevance --quick    # HEAD as the checkout before
    python -m bench.memory_relevance --parts tuning \
        --setting SESSION_STATE_MEMORY_RELEVANCE_MARGIN=-0.04   # a candidate

`--parts tuning` leaves the held-out part out (while choosing a setting);
`--setting NAME=VALUE` starts every server with it.

Prints the figures and writes bench/results/<name>.json (default
memory_relevance). The held-out part is never used to choose a constant
(docs/performance.md, "Memory relevance and recall").
"""

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from google.adk.memory import InMemoryMemoryService

from bench import RESULTS
from bench.memory_search import ADMIN_DSN, admin_sql, corpus, importable_checkout
from session_state.memory.embedding import components_of, nearest_rows, stored_vectors
from session_state.memory.embedding import wordllama_vectors as embed
from session_state.memory.reference_texts import REFERENCE_TEXTS
from session_state.memory.relevance import backgrounds
from session_state_client.adk import HttpMemoryService
from tests.conftest import ServerProcess
from tests.memory_evaluation import Figures, entries, evaluate, events, figures_of, questions
from tests.memory_evaluation_set import PARTS, EvaluationPart

ROOT = Path(__file__).resolve().parent.parent
USER = "ada"
FILLER_BATCH = 500
RESCORED = 300
MIN_SIMILARITY, MARGIN = 0.2, 0.0


def filler_texts(count: int) -> list[str]:
    return corpus(random.Random(7), count, "zipf") if count else []


# -- the service, through a started server ------------------------------------


@contextlib.contextmanager
def started(
    source: Path, backend: str, settings: dict[str, str] | None = None
) -> Iterator[ServerProcess]:
    """`session-state serve` of the checkout at `source` on a fresh database,
    with `settings` (SESSION_STATE_* names) in its environment."""
    with tempfile.TemporaryDirectory() as folder:
        packages = importable_checkout(source, Path(folder))
        env = {**(settings or {}), "PYTHONPATH": f"{packages}{os.pathsep}{source}"}
        database = (
            f"{os.environ.get('BENCH_DATABASE_PREFIX', 'bench')}_relevance_{uuid.uuid4().hex[:8]}"
        )
        if backend == "sqlite":
            url = f"sqlite+aiosqlite:///{folder}/memory.db"
        else:
            asyncio.run(admin_sql(f'CREATE DATABASE "{database}"'))
            base = ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
            url = f"{base}/{database}"
        try:
            subprocess.run(
                [sys.executable, "-m", "session_state.cli", "migrate"],
                env={**os.environ, **env, "SESSION_STATE_DATABASE_URL": url},
                cwd=source,
                check=True,
                capture_output=True,
            )
            server = ServerProcess(url, log=Path(folder) / "server.log", **env).start()
            try:
                yield server
            finally:
                server.stop()
        finally:
            if backend == "postgresql":
                asyncio.run(admin_sql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))


async def _fill(http: httpx.AsyncClient, app: str, texts: list[str]) -> None:
    for start in range(0, len(texts), FILLER_BATCH):
        memories = [
            {"id": f"filler{start + index}", "content": {"parts": [{"text": text}]}}
            for index, text in enumerate(texts[start : start + FILLER_BATCH])
        ]
        written = await http.post(
            f"/apps/{app}/users/{USER}/memory/entries", json={"memories": memories}
        )
        written.raise_for_status()


async def service_figures(
    server: ServerProcess, part: EvaluationPart, filler: list[str]
) -> dict[str, Figures]:
    figures: dict[str, Figures] = {}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as http:
        app = f"{part.name}-rest"
        await _fill(http, app, filler)
        written = await http.post(
            f"/apps/{app}/users/{USER}/memory/entries", json={"memories": entries(part)}
        )
        written.raise_for_status()
        for mode in ("hybrid", "semantic"):

            async def search(question: str, mode: str = mode) -> list[str]:
                response = await http.get(
                    f"/apps/{app}/users/{USER}/memory", params={"query": question, "mode": mode}
                )
                response.raise_for_status()
                return [found["id"] for found in response.json()["memories"]]

            figures[f"rest {mode}"], _ = await evaluate(part, search)
        adk_app = f"{part.name}-adk"
        await _fill(http, adk_app, filler)
    service = HttpMemoryService(base_url=server.base_url)
    try:
        figures["HttpMemoryService"] = await _adk_figures(service, adk_app, part)
    finally:
        await service.close()
    return figures


async def _adk_figures(memory: Any, app: str, part: EvaluationPart) -> Figures:
    await memory.add_events_to_memory(app_name=app, user_id=USER, events=events(part))

    async def search(question: str) -> list[str]:
        result = await memory.search_memory(app_name=app, user_id=USER, query=question)
        return [entry.id for entry in result.memories]

    found, _ = await evaluate(part, search)
    return found


# -- the model alone, step by step --------------------------------------------


def model_figures(part: EvaluationPart, filler: list[str]) -> dict[str, Figures]:
    """The bundled model ranking the part's memories (among the filler) by
    plain cosine, then with each of the service's steps added."""
    ids = [f"filler{index}" for index in range(len(filler))] + list(part.memories)
    vectors = embed([*filler, *part.memories.values()])
    asked = questions(part)
    question_vectors = embed(asked)
    stored = stored_vectors(vectors)
    components = components_of([vector.components for vector in stored])
    bits = np.frombuffer(b"".join(vector.bits for vector in stored), dtype=np.uint8).reshape(
        len(stored), -1
    )
    reference = embed(REFERENCE_TEXTS)
    memory_background = backgrounds(components, reference)
    question_background = backgrounds(question_vectors, reference)
    rows = np.arange(len(ids), dtype=np.int64)
    steps: dict[str, dict[str, list[str]]] = {name: {} for name in STEPS}
    for index, question in enumerate(asked):
        vector = question_vectors[index]
        cosine = vectors @ vector
        steps["plain cosine"][question] = _best(ids, cosine, range(len(ids)))
        quantized = components @ vector
        steps["int8 components"][question] = _best(ids, quantized, range(len(ids)))
        kept = nearest_rows(rows, bits, stored_vectors(vector[None, :])[0].bits, RESCORED)
        steps["sign-bit first pass, 300 kept"][question] = _best(ids, quantized, kept)
        relevance = quantized - np.maximum(memory_background, question_background[index])
        steps["ranked by relevance"][question] = _best(ids, relevance, kept)
        admitted = [
            row for row in kept if quantized[row] >= MIN_SIMILARITY and relevance[row] >= MARGIN
        ]
        steps["relevance rule (semantic mode)"][question] = _best(ids, relevance, admitted)
        plain_admitted = [
            row
            for row in range(len(ids))
            if cosine[row] >= MIN_SIMILARITY
            and cosine[row] - max(memory_background[row], question_background[index]) >= MARGIN
        ]
        steps["plain cosine under the rule"][question] = _best(ids, cosine, plain_admitted)
    return {name: figures_of(part, found) for name, found in steps.items()}


STEPS = (
    "plain cosine",
    "int8 components",
    "sign-bit first pass, 300 kept",
    "ranked by relevance",
    "relevance rule (semantic mode)",
    "plain cosine under the rule",
)


def _best(ids: list[str], scores: Any, rows: Any, limit: int = 10) -> list[str]:
    rows = list(rows)
    order = sorted(rows, key=lambda row: (-float(scores[row]), row))
    return [ids[row] for row in order[:limit]]


async def adk_in_memory_figures(part: EvaluationPart, filler: list[str]) -> Figures:
    memory = InMemoryMemoryService()
    if filler:
        from google.adk.events import Event
        from google.genai import types

        await memory.add_events_to_memory(
            app_name="adk",
            user_id=USER,
            events=[
                Event(
                    id=f"filler{index}",
                    author="user",
                    timestamp=1.0,
                    content=types.Content(parts=[types.Part(text=text)]),
                )
                for index, text in enumerate(filler)
            ],
        )
    return await _adk_figures(memory, "adk", part)


# -- the run ------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a checkout to compare with")
    parser.add_argument("--name", default="memory_relevance")
    parser.add_argument("--filler", type=int, default=0, help="memories stored before each part's")
    parser.add_argument(
        "--quick", action="store_true", help="without --before, this repository's HEAD as before"
    )
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument(
        "--parts",
        default=",".join(part.name for part in PARTS),
        help="the labelled set's parts measured (tuning: while choosing a setting)",
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a SESSION_STATE_* setting every server starts with",
    )
    arguments = parser.parse_args(argv)
    parts = [part for part in PARTS if part.name in arguments.parts.split(",")]
    settings = dict(setting.split("=", 1) for setting in arguments.setting)
    filler = filler_texts(arguments.filler)
    # wordllama's import configures logging (INFO): not every request's line.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    report: dict[str, Any] = {"filler": arguments.filler, "settings": settings, "parts": {}}
    with contextlib.ExitStack() as stack:
        if arguments.quick and arguments.before is None:
            from bench.run import head_checkout

            arguments.before = stack.enter_context(head_checkout())
        checkouts = {"after": ROOT} | ({"before": arguments.before} if arguments.before else {})
        for part in parts:
            figures: dict[str, Figures] = {
                f"model: {step}": found for step, found in model_figures(part, filler).items()
            }
            figures["ADK InMemoryMemoryService"] = asyncio.run(adk_in_memory_figures(part, filler))
            report["parts"][part.name] = figures
        for label, source in checkouts.items():
            for backend in filter(None, arguments.backends.split(",")):
                with started(source, backend, settings) as server:
                    for part in parts:
                        for route, found in asyncio.run(
                            service_figures(server, part, filler)
                        ).items():
                            report["parts"][part.name][f"{label} {backend} {route}"] = found
    _print(report)
    RESULTS.mkdir(parents=True, exist_ok=True)
    serialisable = report | {
        "parts": {
            part: {name: found.__dict__ for name, found in figures.items()}
            for part, figures in report["parts"].items()
        }
    }
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(serialisable, indent=2) + "\n")
    return 0


def _print(report: dict[str, Any]) -> None:
    settings = report["settings"] or "default"
    print(f"filler memories per user: {report['filler']}, settings: {settings}")
    for part, figures in report["parts"].items():
        print(f"\n{part} part")
        for name, found in figures.items():
            print(f"  {name:48} {found.line()}")
        after = {name: found for name, found in figures.items() if name.startswith("after ")}
        if not after:
            continue
        model = figures["model: plain cosine"]
        ruled = figures["model: plain cosine under the rule"]
        silent = all(found.unrelated_empty == found.unrelated for found in after.values())
        print(f"  Goal: unrelated questions answered with nothing, every route: {_met(silent)}")
        hybrid = [found for name, found in after.items() if "semantic" not in name]
        print(
            "  Goal: paraphrase hit@3 of hybrid >= the model's under the same rule "
            f"({ruled.paraphrase_hit_at_3}): "
            f"{_met(all(f.paraphrase_hit_at_3 >= ruled.paraphrase_hit_at_3 for f in hybrid))}"
        )
        print(
            f"  Check: paraphrase hit@3 of hybrid >= plain cosine with no floor "
            f"({model.paraphrase_hit_at_3}, answering no unrelated question with nothing): "
            f"{_met(all(f.paraphrase_hit_at_3 >= model.paraphrase_hit_at_3 for f in hybrid))}"
        )
        exact = all(f.exact_hit_at_1 == f.exact_terms for f in hybrid)
        print(f"  Goal: exact terms first (hybrid, every route): {_met(exact)}")


def _met(condition: bool) -> str:
    return "met" if condition else "NOT met"


if __name__ == "__main__":
    sys.exit(main())
