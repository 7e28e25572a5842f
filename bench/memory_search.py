# ruff: noqa: RUF001 (CJK text holds full-width punctuation on purpose)
"""Memory ingest and search on both backends, for one or two checkouts of the
server: N memories of one user (English, with Japanese, Chinese, Korean and
Russian mixed in) stored in batches of 500, then 100 questions, each timed,
at each size of --sizes (default 1,000 and 10,000; 100,000 on request).

Two corpora (--vocabulary): `zipf` (the default) draws words from the 5,000
most frequent words of the embedder's tokenizer with Zipf frequencies (the
n-th word 1/n as often as the first), as words occur in real text: a common
question word hits many memories, a rare one a few. `small` draws them from
50 words (each question word then matches about a third of the memories:
the keyword side's worst case).

    git archive HEAD | tar -x -C /tmp/before      # the code to compare with
    python -m bench.memory_search --before /tmp/before --sizes 1000,10000,100000
    python -m bench.memory_search --quick    # 500 memories, HEAD as the checkout before

A checkout with search by meaning (app/memory/embedding.py) embeds each batch with
its default embedder before storing it (as its write path does), and its
searches are timed in each mode (keyword, hybrid, semantic) through its
MemoryService; an older one is timed through its store's keyword search.
Prints p50/p99 and writes bench/results/memory_search.json. Each checkout is
measured in a process of its own (its `app` on PYTHONPATH), without HTTP, on
a fresh database migrated by its own migrations.
"""

import argparse
import asyncio
import contextlib
import functools
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ADMIN_DSN = os.environ.get(
    "SESSION_STATE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
SIZES = (1_000, 10_000)
BATCH = 500
QUERIES = 100

_ENGLISH_TEXT = (
    "travel passport flight seat aisle doctor clinic allergy peanuts marathon running cat "
    "bread sourdough garden tomatoes rent landlord wifi password fridge sister porto "
    "seville meeting project deadline python database index search memory weather music "
    "guitar piano coffee tea breakfast dinner recipe train ticket hotel museum beach "
    "mountain"
)
ENGLISH = tuple(_ENGLISH_TEXT.split())
_FILLER_TEXT = "i think the was and my it is on a we have been with that for"
FILLER = tuple(_FILLER_TEXT.split())
OTHER = [
    "私の名前は{}です。東京で働いています。",
    "我喜欢{}，每天都学习机器学习。",
    "김민수는 {}에 살아요.",
    "Меня зовут {} и я живу в Москве.",
]
NAMES = ["太郎", "花子", "上海", "서울", "부산", "Иван", "Ольга", "小白"]


ZIPF_WORDS = 5_000


@functools.cache
def _zipf_vocabulary() -> tuple[list[str], list[float]]:
    """Lower-case words of four letters or more, most frequent first, from
    the tokenizer bundled with wordllama (a BPE vocabulary, whose token ids
    follow frequency); cumulative Zipf weights for rng.choices."""
    import wordllama

    config = Path(wordllama.__file__).parent / "tokenizers" / "l2_supercat_tokenizer_config.json"
    vocabulary = json.loads(config.read_text())["model"]["vocab"]
    words = [
        token[1:]
        for token, _ in sorted(vocabulary.items(), key=lambda item: item[1])
        if token.startswith("\u2581")
        and len(token) > 4
        and token[1:].isascii()
        and token[1:].isalpha()
        and token[1:].islower()
    ][:ZIPF_WORDS]
    weights = itertools.accumulate(1 / rank for rank in range(1, len(words) + 1))
    return words, list(weights)


def _draw(rng: random.Random, vocabulary: str, count: int) -> list[str]:
    if vocabulary == "small":
        return rng.choices(ENGLISH, k=count)
    words, weights = _zipf_vocabulary()
    return rng.choices(words, cum_weights=weights, k=count)


def corpus(rng: random.Random, size: int, vocabulary: str) -> list[str]:
    texts = []
    for index in range(size):
        if index % 10 < 7:
            words = _draw(rng, vocabulary, 4) + rng.choices(FILLER, k=8)
            rng.shuffle(words)
            texts.append(" ".join(words).capitalize() + ".")
        else:
            texts.append(rng.choice(OTHER).format(rng.choice(NAMES)))
    return texts


def questions(rng: random.Random, vocabulary: str) -> list[str]:
    found = []
    for index in range(QUERIES):
        if index % 4 == 3:
            found.append(rng.choice(["太郎はどこ？", "机器学习", "김민수", "Иван", "猫"]))
        else:
            found.append(f"what about my {' '.join(_draw(rng, vocabulary, 3))}?")
    return found


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] * 1000


async def measure(url: str, size: int, vocabulary: str) -> dict[str, float]:
    """Run inside the checkout's process: its app, its migrations."""
    from sqlalchemy.ext.asyncio import create_async_engine

    import session_state
    from session_state.core.config import Settings
    from session_state.db import migrations
    from session_state.sessions.domain import MemoryRecord
    from session_state.stores import open_store

    # Asked of the checkout's own files: the installed (editable) package
    # would answer any import the checkout lacks. (Search by meaning lives in
    # memory/ since the features became packages.)
    embedder = None
    if (Path(session_state.__file__).parent / "memory" / "embedding.py").exists():
        from session_state.memory import service as memory_service
        from session_state.memory.embedding import WordLlamaEmbedder

        embedder = WordLlamaEmbedder()
        await embedder.prepare()

    rng = random.Random(11)
    texts = corpus(rng, size, vocabulary)
    engine = create_async_engine(url)
    try:
        await migrations.upgrade(engine)
    finally:
        await engine.dispose()
    store = await open_store(Settings(database_url=url))
    figures: dict[str, float] = {}
    try:
        batch_times = []
        for start in range(0, size, BATCH):
            records = [
                MemoryRecord(
                    session_id=f"s{index // 100}",
                    event_id=f"e{index}",
                    author="user",
                    role="user",
                    timestamp=1_700_000_000 + index,
                    text=texts[index],
                )
                for index in range(start, min(size, start + BATCH))
            ]
            began = time.perf_counter()
            if embedder is not None:
                vectors = await embedder.embed([record.text for record in records])
                records = memory_service._attach(records, embedder.model_id, vectors)
            await store.add_memories("bench", "ada", records)
            batch_times.append(time.perf_counter() - began)
        figures["ingest_batch_ms_median"] = statistics.median(batch_times) * 1000
        figures["ingest_total_s"] = sum(batch_times)
        if url.startswith("postgresql"):
            # As autovacuum leaves a table that grew (PostgreSQL 13+ vacuums
            # after inserts too): statistics, and pages marked all-visible,
            # which index-only scans (the first pass by meaning) rely on.
            await _admin_in(url, "VACUUM ANALYZE memories")
        asked = questions(rng, vocabulary)
        if embedder is None:
            modes: dict[str, Any] = {
                "keyword": lambda question: store.search_memories(
                    "bench", "ada", question, limit=10, budget=1_000_000
                )
            }
        else:
            service = memory_service.MemoryService(store, embedder=embedder)
            modes = {
                mode: (
                    lambda question, mode=mode: service.search("bench", "ada", question, 10, mode)
                )
                for mode in ("keyword", "hybrid", "semantic")
            }
        for mode, search in modes.items():
            await search(asked[0])  # warm
            search_times, results = [], []
            for question in asked:
                began = time.perf_counter()
                found = await search(question)
                search_times.append(time.perf_counter() - began)
                results.append(len(found))
            figures[f"{mode}_ms_p50"] = statistics.median(search_times) * 1000
            figures[f"{mode}_ms_p99"] = _percentile(search_times, 0.99)
            figures[f"{mode}_answered"] = sum(count > 0 for count in results)
    finally:
        await store.close()
    return figures


async def _admin_in(url: str, sql: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


async def admin_sql(sql: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(ADMIN_DSN)
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


def importable_checkout(source: Path, folder: Path) -> Path:
    """A folder holding the checkout as the package it installs as
    (session_state: its app/, with its migrations/ inside), to put first on
    PYTHONPATH: the installed (editable) package is this repository's."""
    package = folder / "packages" / "session_state"
    package.mkdir(parents=True)
    for entry in (source / "app").iterdir():
        (package / entry.name).symlink_to(entry)
    (package / "migrations").symlink_to(source / "migrations")
    return package.parent


def run_checkout(source: Path, backend: str, size: int, vocabulary: str) -> dict[str, float]:
    """The figures of one checkout on one backend, measured in a child process."""
    with tempfile.TemporaryDirectory() as folder:
        packages = importable_checkout(source, Path(folder))
        database = (
            f"{os.environ.get('BENCH_DATABASE_PREFIX', 'bench')}_memory_{uuid.uuid4().hex[:8]}"
        )
        if backend == "sqlite":
            url = f"sqlite+aiosqlite:///{folder}/memory.db"
        else:
            asyncio.run(admin_sql(f'CREATE DATABASE "{database}"'))
            base = ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
            url = f"{base}/{database}"
        try:
            child = subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--child",
                    url,
                    "--size",
                    str(size),
                    "--vocabulary",
                    vocabulary,
                ],
                env={**os.environ, "PYTHONPATH": f"{packages}{os.pathsep}{source}"},
                cwd=source,
                check=True,
                capture_output=True,
                text=True,
            )
        finally:
            if backend == "postgresql":
                asyncio.run(admin_sql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
    figures: dict[str, float] = json.loads(child.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a checkout to compare with")
    parser.add_argument("--name", default="memory_search")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="500 memories; without --before, this repository's HEAD as before",
    )
    parser.add_argument(
        "--sizes",
        help=f"memories of the one user, per run (default {','.join(map(str, SIZES))};"
        " --quick: 500)",
    )
    parser.add_argument(
        "--vocabulary",
        default="zipf",
        help="zipf, small or both: the corpora measured (see above)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.child:
        print(
            json.dumps(asyncio.run(measure(arguments.child, arguments.size, arguments.vocabulary)))
        )
        return 0
    # Here, not at the top: a child runs this file in another checkout's tree.
    from bench import RESULTS
    from bench.run import head_checkout

    default = "500" if arguments.quick else ",".join(map(str, SIZES))
    sizes = [int(size) for size in (arguments.sizes or default).split(",")]
    with contextlib.ExitStack() as stack:
        if arguments.quick and arguments.before is None:
            arguments.before = stack.enter_context(head_checkout())
        report = _run(arguments, sizes)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


def _run(arguments: argparse.Namespace, sizes: list[int]) -> dict[str, Any]:
    checkouts = {"after": ROOT} | ({"before": arguments.before} if arguments.before else {})
    vocabularies = ["zipf", "small"] if arguments.vocabulary == "both" else [arguments.vocabulary]
    report: dict[str, Any] = {"batch": BATCH, "queries": QUERIES}
    for vocabulary, size in itertools.product(vocabularies, sizes):
        for backend in ("sqlite", "postgresql"):
            for label, source in checkouts.items():
                figures = run_checkout(source, backend, size, vocabulary)
                report.setdefault(vocabulary, {}).setdefault(str(size), {}).setdefault(backend, {})[
                    label
                ] = figures
                searches = ", ".join(
                    f"{mode} p50 {figures[f'{mode}_ms_p50']:.2f} "
                    f"p99 {figures[f'{mode}_ms_p99']:.2f}"
                    for mode in ("keyword", "hybrid", "semantic")
                    if f"{mode}_ms_p50" in figures
                )
                print(
                    f"{vocabulary:<5} {size:>7} {backend:<10} {label:<6} ingest "
                    f"{figures['ingest_batch_ms_median']:7.1f} ms per {BATCH}; search ms: "
                    f"{searches}",
                    flush=True,
                )
    return report


if __name__ == "__main__":
    sys.exit(main())
