# ruff: noqa: RUF001 (CJK text holds full-width punctuation on purpose)
"""Memory ingest and search on both backends, for one or two checkouts of the
server: 10,000 memories (English, with Japanese, Chinese, Korean and Russian
mixed in) stored in batches of 500, then 100 questions, each timed.

    git archive HEAD | tar -x -C /tmp/before      # the code to compare with
    python -m bench.memory_search --before /tmp/before

Prints medians and writes bench/results/memory_search.json. Each checkout is
measured in a process of its own (its `app` on PYTHONPATH), through its
repository functions (no HTTP), on a fresh database migrated by its own
migrations.
"""

import argparse
import asyncio
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
RESULTS = ROOT / "bench" / "results"
ADMIN_DSN = os.environ.get(
    "SESSION_STATE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
MEMORIES = 10_000
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


def corpus(rng: random.Random) -> list[str]:
    texts = []
    for index in range(MEMORIES):
        if index % 10 < 7:
            words = rng.choices(ENGLISH, k=4) + rng.choices(FILLER, k=8)
            rng.shuffle(words)
            texts.append(" ".join(words).capitalize() + ".")
        else:
            texts.append(rng.choice(OTHER).format(rng.choice(NAMES)))
    return texts


def questions(rng: random.Random) -> list[str]:
    found = []
    for index in range(QUERIES):
        if index % 4 == 3:
            found.append(rng.choice(["太郎はどこ？", "机器学习", "김민수", "Иван", "猫"]))
        else:
            found.append(f"what about my {' '.join(rng.choices(ENGLISH, k=3))}?")
    return found


async def measure(url: str) -> dict[str, float]:
    """Run inside the checkout's process: its app, its migrations."""
    from sqlalchemy.ext.asyncio import create_async_engine

    from session_state.config import Settings
    from session_state.db import migrations
    from session_state.db.stores import open_store
    from session_state.domain import MemoryRecord

    rng = random.Random(11)
    texts = corpus(rng)
    engine = create_async_engine(url)
    try:
        await migrations.upgrade(engine)
    finally:
        await engine.dispose()
    store = await open_store(Settings(database_url=url))
    try:
        batch_times = []
        for start in range(0, MEMORIES, BATCH):
            records = [
                MemoryRecord(
                    session_id=f"s{index // 100}",
                    event_id=f"e{index}",
                    author="user",
                    role="user",
                    timestamp=1_700_000_000 + index,
                    text=texts[index],
                )
                for index in range(start, start + BATCH)
            ]
            began = time.perf_counter()
            await store.add_memories("bench", "ada", records)
            batch_times.append(time.perf_counter() - began)
        search_times, results = [], []
        if url.startswith("postgresql"):
            await _admin_in(url, "ANALYZE memories")
        for question in questions(rng):
            began = time.perf_counter()
            found = await store.search_memories(
                "bench", "ada", question, limit=10, budget=1_000_000
            )
            search_times.append(time.perf_counter() - began)
            results.append(len(found))
    finally:
        await store.close()
    return {
        "ingest_batch_ms_median": statistics.median(batch_times) * 1000,
        "ingest_total_s": sum(batch_times),
        "search_ms_median": statistics.median(search_times) * 1000,
        "search_ms_p95": sorted(search_times)[int(len(search_times) * 0.95)] * 1000,
        "questions_answered": sum(count > 0 for count in results),
    }


async def _admin_in(url: str, sql: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


async def _admin(sql: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(ADMIN_DSN)
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


def run_checkout(source: Path, backend: str) -> dict[str, float]:
    """The figures of one checkout on one backend, measured in a child process."""
    with tempfile.TemporaryDirectory() as folder:
        database = f"bench_memory_{uuid.uuid4().hex[:8]}"
        if backend == "sqlite":
            url = f"sqlite+aiosqlite:///{folder}/memory.db"
        else:
            asyncio.run(_admin(f'CREATE DATABASE "{database}"'))
            base = ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
            url = f"{base}/{database}"
        try:
            child = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--child", url],
                env={**os.environ, "PYTHONPATH": str(source)},
                cwd=source,
                check=True,
                capture_output=True,
                text=True,
            )
        finally:
            if backend == "postgresql":
                asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
    figures: dict[str, float] = json.loads(child.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a checkout to compare with")
    parser.add_argument("--name", default="memory_search")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.child:
        print(json.dumps(asyncio.run(measure(arguments.child))))
        return 0
    checkouts = {"after": ROOT} | ({"before": arguments.before} if arguments.before else {})
    report: dict[str, Any] = {"memories": MEMORIES, "batch": BATCH, "queries": QUERIES}
    for backend in ("sqlite", "postgresql"):
        for label, source in checkouts.items():
            figures = run_checkout(source, backend)
            report.setdefault(backend, {})[label] = figures
            print(
                f"{backend:<10} {label:<6} ingest {figures['ingest_batch_ms_median']:7.1f} ms "
                f"per {BATCH} (total {figures['ingest_total_s']:.2f} s), search median "
                f"{figures['search_ms_median']:6.2f} ms, p95 {figures['search_ms_p95']:6.2f} ms, "
                f"answered {figures['questions_answered']}/{QUERIES}"
            )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
