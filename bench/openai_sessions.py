"""OpenAI Agents SDK sessions on PostgreSQL: session-state's SessionStateSession
(through `session-state serve`, over HTTP) against the SDK's own
SQLAlchemySession (in-process, asyncpg), side by side in one run on one
PostgreSQL server, each in a database of its own.

    python -m bench.openai_sessions            # full sizes (about 1.5 minutes)
    python -m bench.openai_sessions --quick    # small sizes (about 10 s)

Workloads: add_items of one user message; add_items of a turn (function call,
its output, the assistant's answer); get_items(limit=20) and get_items() of a
200-item session; pop_item (refilled between rounds); 20 sessions adding at
once. Sequential calls alternate between the sides call by call, so a burst of
noise on this 2-core machine lands on both; latencies are pooled over the
rounds. Prints a Markdown table, writes bench/results/<name>.json and .md.
"""

import argparse
import asyncio
import functools
import itertools
import json
import os
import platform
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any, cast

from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
from agents.items import TResponseInputItem
from agents.memory import Session
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from bench.client_cpu import _free_port
from bench.run import (
    RESULTS,
    Server,
    create_database,
    drop_database,
    latency_summary,
    migrate,
    sqlalchemy_url,
    timed,
    vacuum,
)
from session_state_client import AsyncSessionStateClient
from session_state_client.openai_agents import SessionStateSession

APP, USER = "bench-openai", "u"
OURS, THEIRS = "session-state", "SQLAlchemySession"
# The server's pool (bench.run.Server: 10, no overflow) given to the engine
# too, so neither side has more PostgreSQL connections than the other.
POOL_SIZE = 10


@dataclass(frozen=True)
class Sizes:
    rounds: int
    adds: int  # add_items calls per side per round, for each add workload
    history: int  # items of the session get_items reads
    reads_limited: int  # get_items(limit=20) calls per side per round
    reads_all: int  # get_items() calls per side per round
    pops: int  # pop_item calls per side per round (refilled before each round)
    sessions: int  # concurrent workload: sessions adding at once
    adds_per_session: int


FULL = Sizes(10, 300, 200, 200, 80, 120, 20, 20)
QUICK = Sizes(2, 15, 200, 10, 5, 10, 10, 5)

# -- items, shaped as the SDK stores them ---------------------------------------

_numbers = itertools.count()


def user_message() -> TResponseInputItem:
    number = next(_numbers)
    return cast(
        TResponseInputItem,
        {"role": "user", "content": f"Book a table for two at 19:30, please (request {number})."},
    )


def turn() -> list[TResponseInputItem]:
    """One tool round trip of the model: call, output, the answer."""
    number = next(_numbers)
    call_id = f"call_{number}"
    items = [
        {
            "type": "function_call",
            "id": f"fc_{number}",
            "call_id": call_id,
            "name": "book_table",
            "arguments": json.dumps({"people": 2, "when": "19:30", "request": number}),
            "status": "completed",
        },
        {
            "type": "function_call_output",
            "call_id": call_id,
            "output": json.dumps({"booked": True, "table": number % 40, "when": "19:30"}),
        },
        {
            "type": "message",
            "id": f"msg_{number}",
            "role": "assistant",
            "status": "completed",
            "content": [
                {
                    "type": "output_text",
                    "text": "Done: a table for two at 19:30 is booked under your name.",
                    "annotations": [],
                    "logprobs": [],
                }
            ],
        },
    ]
    return cast(list[TResponseInputItem], items)


# -- the two sides -------------------------------------------------------------


@dataclass
class Side:
    name: str
    make: Callable[[str], Session]
    close: Callable[[], Awaitable[None]]
    sessions: dict[str, Session] = field(default_factory=dict)

    def session(self, key: str) -> Session:
        """One long-lived session per workload, as an agent keeps its own."""
        if key not in self.sessions:
            self.sessions[key] = self.make(key)
        return self.sessions[key]


def our_side(base_url: str) -> Side:
    # One client shared by every session, as one agent process would share it;
    # no retries, so a failure shows instead of hiding in the latency.
    client = AsyncSessionStateClient(base_url=base_url, max_retries=0, timeout=120)

    def make(session_id: str) -> Session:
        return SessionStateSession(session_id, app_name=APP, user_id=USER, client=client)

    return Side(OURS, make, client.close)


async def their_side(database: str) -> Side:
    # One engine shared by every session, as an application would share it.
    engine: AsyncEngine = create_async_engine(
        sqlalchemy_url(database), pool_size=POOL_SIZE, max_overflow=0
    )
    # Tables made once, up front; later sessions skip create_all's checks
    # (create_tables=False is the SDK's advice for production).
    await SQLAlchemySession("setup", engine=engine, create_tables=True).get_items()

    def make(session_id: str) -> Session:
        return SQLAlchemySession(session_id, engine=engine)

    return Side(THEIRS, make, engine.dispose)


# -- workloads -----------------------------------------------------------------

Latencies = dict[str, list[float]]


async def alternating(
    sides: list[Side],
    calls: int,
    first: int,
    call: Callable[[Side], Awaitable[Any]],
    latencies: Latencies,
) -> None:
    """`calls` calls on each side, taking turns call by call; which side goes
    first alternates too, so neither is always the one after a pause."""
    for index in range(calls):
        order = sides if (index + first) % 2 == 0 else sides[::-1]
        for side in order:
            await timed(functools.partial(call, side), latencies[side.name])


async def concurrent_adds(
    side: Side, round_index: int, sizes: Sizes, latencies: list[float]
) -> float:
    """`sizes.sessions` sessions adding at once; events per second."""
    sessions = [side.make(f"concurrent-{round_index}-{n}") for n in range(sizes.sessions)]
    for session in sessions:  # they exist before the clock starts
        await session.add_items([user_message()])

    async def writer(session: Session) -> None:
        for _ in range(sizes.adds_per_session):
            items = [user_message()]
            await timed(functools.partial(session.add_items, items), latencies)

    started = time.perf_counter()
    await asyncio.gather(*(writer(session) for session in sessions))
    elapsed = time.perf_counter() - started
    for session in sessions:  # nothing lost
        stored = len(await session.get_items())
        assert stored == sizes.adds_per_session + 1, (side.name, stored)
    return sizes.sessions * sizes.adds_per_session / elapsed


def history_items(count: int) -> list[TResponseInputItem]:
    """`count` items: a user message, then a turn, over and over."""
    items: list[TResponseInputItem] = []
    while len(items) < count:
        items += [user_message(), *turn()]
    return items[:count]


async def add_all(side: Side, key: str, items: list[TResponseInputItem]) -> None:
    """The items added four at a time, as a conversation grows."""
    for start in range(0, len(items), 4):
        await side.session(key).add_items(items[start : start + 4])


class Run:
    def __init__(self, sizes: Sizes, sides: list[Side], databases: list[str]) -> None:
        self.sizes = sizes
        self.sides = sides
        self.databases = databases
        self.latencies: dict[str, Latencies] = {}
        self.round_p50: dict[str, dict[str, list[float]]] = {}
        self.rates: dict[str, list[float]] = {side.name: [] for side in sides}

    async def _vacuum(self) -> None:
        # Autovacuum is off on this cluster: dead rows of updated session rows
        # are cleared between workloads, for both sides alike.
        for database in self.databases:
            await vacuum(database)

    async def _measure(
        self, workload: str, calls: int, first: int, call: Callable[[Side], Awaitable[Any]]
    ) -> None:
        this_round: Latencies = {side.name: [] for side in self.sides}
        await alternating(self.sides, calls, first, call, this_round)
        for side in self.sides:
            self.latencies.setdefault(workload, {}).setdefault(side.name, []).extend(
                this_round[side.name]
            )
            p50 = statistics.median(this_round[side.name]) * 1000
            self.round_p50.setdefault(workload, {}).setdefault(side.name, []).append(p50)
        shown = ", ".join(
            f"{name} p50 {self.round_p50[workload][name][-1]:.2f} ms" for name in this_round
        )
        print(f"  {workload:<22} {shown}", flush=True)

    async def setup(self) -> None:
        sizes = self.sizes
        for side in self.sides:
            # The add and pop sessions exist before any timed call.
            await side.session("add-one").add_items([user_message()])
            await side.session("add-turn").add_items(turn())
            # Never popped: the session never empties.
            await add_all(side, "pop", history_items(5))
        # The same history on both sides, read back as it was added.
        history = history_items(sizes.history)
        for side in self.sides:
            await add_all(side, "history", history)
            assert await side.session("history").get_items() == history, side.name
        # Warm up both: connections, prepared statements, code paths.
        for side in self.sides:
            for _ in range(5):
                await side.session("history").get_items(limit=20)
                await side.session("history").get_items()
                await side.session("add-one").add_items([user_message()])
                await side.session("add-turn").add_items(turn())
        await self._vacuum()

    async def round(self, index: int) -> None:
        sizes = self.sizes
        print(f"round {index + 1}/{sizes.rounds}", flush=True)
        await self._measure(
            "add_items_1_message",
            sizes.adds,
            index,
            lambda side: side.session("add-one").add_items([user_message()]),
        )
        await self._measure(
            "add_items_turn_3_items",
            sizes.adds,
            index,
            lambda side: side.session("add-turn").add_items(turn()),
        )
        await self._vacuum()

        async def read(side: Side, limit: int | None, expected: int) -> None:
            items = await side.session("history").get_items(limit=limit)
            assert len(items) == expected, (side.name, len(items))

        await self._measure(
            f"get_items_20_of_{sizes.history}",
            sizes.reads_limited,
            index,
            lambda side: read(side, 20, 20),
        )
        await self._measure(
            f"get_items_all_{sizes.history}",
            sizes.reads_all,
            index,
            lambda side: read(side, None, sizes.history),
        )

        # Refilled (untimed), then popped back down: each pop must return the
        # newest item left.
        refills = {side.name: history_items(sizes.pops) for side in self.sides}
        for side in self.sides:
            await add_all(side, "pop", refills[side.name])

        async def pop(side: Side) -> None:
            item = await side.session("pop").pop_item()
            assert item == refills[side.name].pop(), side.name

        await self._measure("pop_item", sizes.pops, index, pop)
        await self._vacuum()

        # Concurrent: one side at a time (at once they would share the CPUs),
        # the first side alternating.
        order = self.sides if index % 2 == 0 else self.sides[::-1]
        workload = f"concurrent_{sizes.sessions}x{sizes.adds_per_session}_add_items"
        for side in order:
            latencies = self.latencies.setdefault(workload, {}).setdefault(side.name, [])
            rate = await concurrent_adds(side, index, sizes, latencies)
            self.rates[side.name].append(rate)
            print(f"  {workload:<22} {side.name} {rate:,.0f} add_items/s", flush=True)
            await self._vacuum()

    def figures(self) -> dict[str, Any]:
        """Pooled p50/p99 per workload and side, with ours / SQLAlchemy."""
        figures: dict[str, Any] = {}
        for workload, by_side in self.latencies.items():
            entry: dict[str, Any] = {}
            for name, latencies in by_side.items():
                entry[name] = {**latency_summary(latencies), "calls": len(latencies)}
                if workload in self.round_p50:
                    entry[name]["round_p50_ms"] = [
                        round(value, 3) for value in self.round_p50[workload][name]
                    ]
                if workload.startswith("concurrent"):
                    rates = self.rates[name]
                    entry[name]["add_items_per_s"] = statistics.median(rates)
                    entry[name]["round_add_items_per_s"] = [round(rate, 1) for rate in rates]
            entry["ours_over_sqlalchemy"] = {
                key: entry[OURS][key] / entry[THEIRS][key]
                for key in ("p50_ms", "p99_ms", "add_items_per_s")
                if key in entry[OURS]
            }
            figures[workload] = entry
        return figures


async def execute(sizes: Sizes) -> dict[str, Any]:
    ours_db = await create_database("bench_openai_ours")
    theirs_db = await create_database("bench_openai_sqlalchemy")
    server: Server | None = None
    sides: list[Side] = []
    try:
        migrate(ours_db)
        server = Server(ours_db, _free_port(), workers=1)
        sides = [our_side(server.base_url), await their_side(theirs_db)]
        run = Run(sizes, sides, [ours_db, theirs_db])
        await run.setup()
        for index in range(sizes.rounds):
            await run.round(index)
        return run.figures()
    finally:
        for side in sides:
            await side.close()
        if server is not None:
            server.stop()
        for database in (ours_db, theirs_db):
            await drop_database(database)


# -- the report ----------------------------------------------------------------


def markdown_table(results: dict[str, Any]) -> str:
    meta = results["meta"]
    lines = [
        f"Run {meta['date']} ({'quick' if meta['quick'] else 'full'}), {meta['cpus']} CPUs,"
        f" {meta['sizes']['rounds']} rounds, server workers: 1, PostgreSQL pool"
        f" {POOL_SIZE} on each side. Latency per call, pooled over the rounds;"
        " ratio < 1: ours takes less time (for add_items/s, > 1: ours does more).",
        "",
        f"| workload | figure | {OURS} (HTTP) | SDK {THEIRS} | ours / SQLAlchemy |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for workload, entry in results["figures"].items():
        for key, ratio in entry["ours_over_sqlalchemy"].items():
            digits = 0 if key == "add_items_per_s" else 2
            lines.append(
                f"| {workload} | {key} | {entry[OURS][key]:,.{digits}f}"
                f" | {entry[THEIRS][key]:,.{digits}f} | {ratio:.2f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (CI)")
    parser.add_argument("--name", default="openai_sessions", help="results file name")
    arguments = parser.parse_args()
    sizes = QUICK if arguments.quick else FULL
    started = time.time()
    figures = asyncio.run(execute(sizes))
    results = {
        "meta": {
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "quick": arguments.quick,
            "sizes": sizes.__dict__,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "openai_agents": version("openai-agents"),
            "sqlalchemy": version("sqlalchemy"),
            "asyncpg": version("asyncpg"),
            "pool_size_each_side": POOL_SIZE,
            "duration_s": round(time.time() - started, 1),
        },
        "figures": figures,
    }
    table = markdown_table(results)
    print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / f"{arguments.name}.md").write_text(table)


if __name__ == "__main__":
    main()
