"""OpenAI Agents SDK sessions: session-state's SessionStateSession (through
`session-state serve` on PostgreSQL, over HTTP) against the SDK's own
SQLAlchemySession (in-process, asyncpg, on the same PostgreSQL server, a
database of its own) and RedisSession (the `openai-agents[redis]` extra, on
the local Redis at 127.0.0.1:6379, keys under a prefix of the run's,
deleted afterwards), side by side in one run.

    python -m bench.openai_sessions            # full sizes (about 1.5 minutes)
    python -m bench.openai_sessions --quick    # small sizes (about 10 s)
    python -m bench.openai_sessions --before /tmp/main  # and that checkout's server

With --before, another checkout's server (bench.before_after: a source tree,
e.g. `git archive main | tar -x -C /tmp/main`) runs as a fourth side, on a
database of its own, taking turns with the others.

Workloads: add_items of one user message; add_items of a turn (function call,
its output, the assistant's answer); get_items(limit=20) and get_items() of a
200-item session; pop_item (refilled between rounds); 20 sessions adding at
once (each session's items read back: nothing lost, nothing out of order).
Sequential calls take turns between the sides call by call (the first side
rotating), so a burst of noise on this 2-core machine lands on all; latencies
are pooled over the rounds. Prints a Markdown table and the goals
(docs/performance.md) as met or not met, writes bench/results/<name>.json and .md.
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
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, cast

from agents.extensions.memory.redis_session import RedisSession
from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
from agents.items import TResponseInputItem
from agents.memory import Session
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from bench import RESULTS
from bench.before_after import migrate_from
from bench.client_cpu import _free_port
from bench.process_cpu import Meter, backend_pids, redis_server_pid, with_children
from bench.run import (
    ADMIN_DSN,
    Server,
    create_database,
    drop_database,
    latency_summary,
    migrate,
    sqlalchemy_url,
    timed,
    vacuum,
)
from bench.spread import percent, spread, verdict
from session_state_client import AsyncSessionStateClient
from session_state_client._requests import Call
from session_state_client.openai_agents import SessionStateSession

APP, USER = "bench-openai", "u"
OURS, THEIRS, REDIS = "session-state", "SQLAlchemySession", "RedisSession"
BEFORE = "session-state (before)"
PEERS = (THEIRS, REDIS)
# A database number of the local Redis of this benchmark's own (bench.adk_api
# uses 13), its keys under a prefix of the run's.
REDIS_DB = 14
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
    # The concurrent workload is repeated (fresh sessions each pass) until
    # its timed passes add up to this many seconds a side a round: one pass
    # of 20 x 20 lasts a fraction of a second.
    window_s: float = 0.0


FULL = Sizes(5, 400, 200, 300, 100, 150, 20, 20, 3.0)
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
    meter: Meter | None = None  # the processes its users pay for, besides this one

    def session(self, key: str) -> Session:
        """One long-lived session per workload, as an agent keeps its own."""
        if key not in self.sessions:
            self.sessions[key] = self.make(key)
        return self.sessions[key]


class CountingClient(AsyncSessionStateClient):
    """The async client, counting the requests it sends (pop_item's goal is
    one request per call)."""

    requests = 0

    async def _send(self, call: Call[Any]) -> Any:
        self.requests += 1
        return await super()._send(call)


def our_side(base_url: str, name: str = OURS) -> tuple[Side, CountingClient]:
    # One client shared by every session, as one agent process would share it;
    # no retries, so a failure shows instead of hiding in the latency.
    client = CountingClient(base_url=base_url, max_retries=0, timeout=120)

    def make(session_id: str) -> Session:
        return SessionStateSession(session_id, app_name=APP, user_id=USER, client=client)

    return Side(name, make, client.close), client


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


def redis_side() -> Side:
    import redis.asyncio as redis

    # One client (and its pool) shared by every session, as with the others.
    client = redis.Redis(host="127.0.0.1", port=6379, db=REDIS_DB)
    prefix = f"bench-openai-{uuid.uuid4().hex[:8]}"

    def make(session_id: str) -> Session:
        return RedisSession(session_id, redis_client=client, key_prefix=prefix)

    async def close() -> None:
        async for key in client.scan_iter(match=f"{prefix}:*", count=1000):
            await client.delete(key)
        await client.aclose()

    return Side(REDIS, make, close)


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
        first_side = (index + first) % len(sides)
        order = sides[first_side:] + sides[:first_side]
        for side in order:
            await timed(functools.partial(call, side), latencies[side.name])


async def concurrent_adds(
    side: Side, key: str, sizes: Sizes, latencies: list[float]
) -> tuple[float, int, int, dict[str, float]]:
    """`sizes.sessions` sessions adding at once: timed seconds, how many
    items were lost or out of order (read back afterwards) and the CPU
    seconds of the side's processes while timed."""
    sessions = [side.make(f"concurrent-{key}-{n}") for n in range(sizes.sessions)]
    added: list[list[TResponseInputItem]] = [[user_message()] for _ in sessions]
    for session, items in zip(sessions, added, strict=True):  # made before the clock starts
        await session.add_items(list(items))

    async def writer(session: Session, items: list[TResponseInputItem]) -> None:
        for _ in range(sizes.adds_per_session):
            item = user_message()
            items.append(item)
            await timed(functools.partial(session.add_items, [item]), latencies)

    meter = side.meter or Meter({})
    await meter.start()
    started = time.perf_counter()
    await asyncio.gather(*(writer(s, items) for s, items in zip(sessions, added, strict=True)))
    elapsed = time.perf_counter() - started
    cpu = await meter.stop()
    lost = misordered = 0
    for session, items in zip(sessions, added, strict=True):
        stored = await session.get_items()
        present = [item for item in items if item in stored]
        lost += len(items) - len(present)
        misordered += sum(1 for got, sent in zip(stored, present, strict=False) if got != sent)
    return elapsed, lost, misordered, cpu


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
    def __init__(
        self, sizes: Sizes, sides: list[Side], databases: list[str], client: CountingClient
    ) -> None:
        self.sizes = sizes
        self.sides = sides
        self.databases = databases
        self.client = client
        self.latencies: dict[str, Latencies] = {}
        self.round_p50: dict[str, dict[str, list[float]]] = {}
        self.rates: dict[str, list[float]] = {side.name: [] for side in sides}
        self.lost: dict[str, int] = {side.name: 0 for side in sides}
        self.misordered: dict[str, int] = {side.name: 0 for side in sides}
        self.pops = 0
        self.pop_requests = 0
        self.cpu_ms: dict[str, list[dict[str, float]]] = {}

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

        sent = self.client.requests
        await self._measure("pop_item", sizes.pops, index, pop)
        self.pops += sizes.pops
        self.pop_requests += self.client.requests - sent
        await self._vacuum()

        # Concurrent: one side at a time (at once they would share the CPUs),
        # the first side alternating.
        first_side = index % len(self.sides)
        order = self.sides[first_side:] + self.sides[:first_side]
        workload = f"concurrent_{sizes.sessions}x{sizes.adds_per_session}_add_items"
        for side in order:
            latencies = self.latencies.setdefault(workload, {}).setdefault(side.name, [])
            elapsed, passes, cpu = 0.0, 0, dict[str, float]()
            while not passes or elapsed < sizes.window_s:
                spent, lost, misordered, used = await concurrent_adds(
                    side, f"{index}-{passes}", sizes, latencies
                )
                elapsed, passes = elapsed + spent, passes + 1
                cpu = {group: cpu.get(group, 0.0) + seconds for group, seconds in used.items()}
                self.lost[side.name] += lost
                self.misordered[side.name] += misordered
                await self._vacuum()
            calls = passes * sizes.sessions * sizes.adds_per_session
            rate = calls / elapsed
            self.rates[side.name].append(rate)
            self.cpu_ms.setdefault(side.name, []).append(
                {f"{group}_cpu_ms": seconds / calls * 1000 for group, seconds in cpu.items()}
                | {"total_cpu_ms": sum(cpu.values()) / calls * 1000}
            )
            print(
                f"  {workload:<22} {side.name} {rate:,.0f} add_items/s ({passes} passes),"
                f" CPU ms/call {self.cpu_ms[side.name][-1]}",
                flush=True,
            )

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
                    entry[name]["lost"] = self.lost[name]
                    entry[name]["misordered"] = self.misordered[name]
                    rounds = self.cpu_ms[name]
                    entry[name]["cpu_ms_per_call"] = {
                        key: statistics.median(found.get(key, 0.0) for found in rounds)
                        for key in rounds[0]
                    }
            for peer in (*PEERS, BEFORE):
                if peer not in entry:
                    continue
                entry[f"ours_over_{peer}"] = {
                    key: entry[OURS][key] / entry[peer][key]
                    for key in ("p50_ms", "p99_ms", "add_items_per_s")
                    if key in entry[OURS]
                }
            figures[workload] = entry
        figures["pop_item_requests_per_call"] = self.pop_requests / max(self.pops, 1)
        return figures


def goals(figures: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """Issue 28's goals for OpenAI Agents SDK users: (goal, measured, met)."""
    found: list[tuple[str, str, bool]] = []
    for workload, entry in figures.items():
        if not isinstance(entry, dict) or workload.startswith("concurrent"):
            continue
        ours, theirs = entry[OURS]["p50_ms"], entry[THEIRS]["p50_ms"]
        found.append(
            (
                f"{workload} p50 no slower than SQLAlchemySession",
                f"{ours:.2f} vs {theirs:.2f} ms ({ours / theirs:.2f}x);"
                f" RedisSession {entry[REDIS]['p50_ms']:.2f} ms",
                ours <= theirs,
            )
        )
    per_call = figures["pop_item_requests_per_call"]
    found.append(("pop_item in one request", f"{per_call:.2f} requests per call", per_call <= 1))
    for workload, entry in figures.items():
        if not workload.startswith("concurrent"):
            continue
        ours, redis_rate = entry[OURS]["add_items_per_s"], entry[REDIS]["add_items_per_s"]
        broken = {name: entry[name]["lost"] + entry[name]["misordered"] for name in (OURS, *PEERS)}
        found.append(
            (
                f"{workload}: throughput at least RedisSession's, nothing lost or reordered",
                f"{ours:,.0f} vs {redis_rate:,.0f} add_items/s ({ours / redis_rate:.2f}x),"
                f" SQLAlchemySession {entry[THEIRS]['add_items_per_s']:,.0f};"
                f" lost or misordered: {broken[OURS]} ours, {broken[THEIRS]} SQLAlchemy,"
                f" {broken[REDIS]} Redis",
                ours >= redis_rate and broken[OURS] == 0,
            )
        )
    return found


async def attach_meters(sides: list[Side], server: Server, databases: list[str]) -> None:
    """What each side's users pay for besides the application: our server
    and its database's backends, SQLAlchemy's database's backends, the
    redis-server (bench.process_cpu)."""
    redis_pid = await redis_server_pid()

    async def server_pids() -> list[int]:
        return with_children(server.process.pid)

    async def redis_pids() -> list[int]:
        return [redis_pid]

    def backends(database: str) -> Callable[[], Awaitable[list[int]]]:
        return lambda: backend_pids(ADMIN_DSN, database)

    groups: dict[str, dict[str, Callable[[], Awaitable[list[int]]]]] = {
        OURS: {"server": server_pids, "postgresql": backends(databases[0])},
        THEIRS: {"postgresql": backends(databases[1])},
        REDIS: {"redis_server": redis_pids},
    }
    for side in sides:
        if side.name in groups:
            side.meter = Meter(groups[side.name])


def steadiness(figures: dict[str, Any]) -> list[tuple[str, str, float, float, str]]:
    """(workload, side, median over the rounds, spread, ours against it) of
    each workload's per-round figure: p50 ms of sequential calls, add_items/s
    of the concurrent one."""
    rows: list[tuple[str, str, float, float, str]] = []
    for workload, entry in figures.items():
        if not isinstance(entry, dict):
            continue
        concurrent = workload.startswith("concurrent")
        key = "round_add_items_per_s" if concurrent else "round_p50_ms"
        ours = entry[OURS][key]
        for name in (OURS, *PEERS, BEFORE):
            if name not in entry:
                continue
            rounds = entry[name][key]
            against = "" if name == OURS else verdict(ours, rounds, higher_is_better=concurrent)
            rows.append((workload, name, statistics.median(rounds), spread(rounds), against))
    return rows


def steadiness_table(rows: list[tuple[str, str, float, float, str]]) -> str:
    lines = [
        "Per round: p50 ms (sequential calls), add_items/s (concurrent); medians of the"
        " rounds; spread: (max - min) / median; ours against it: the median of the"
        ' per-round ratios, "within noise" when it differs from 1 by less than their'
        " spread (bench.spread).",
        "",
        "| workload | side | median of rounds | spread | ours against it |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for workload, name, median, found, against in rows:
        lines.append(f"| {workload} | {name} | {median:,.2f} | {percent(found)} | {against} |")
    return "\n".join(lines) + "\n"


async def execute(sizes: Sizes, before: Path | None = None) -> dict[str, Any]:
    databases = [
        await create_database("bench_openai_ours"),
        await create_database("bench_openai_sqlalchemy"),
    ]
    servers: list[Server] = []
    sides: list[Side] = []
    try:
        migrate(databases[0])
        servers.append(Server(databases[0], _free_port(), workers=1))
        ours, client = our_side(servers[0].base_url)
        sides = [ours, await their_side(databases[1]), redis_side()]
        if before is not None:
            databases.append(await create_database("bench_openai_before"))
            migrate_from(before, sqlalchemy_url(databases[-1]))
            servers.append(Server(databases[-1], _free_port(), workers=1, source=before))
            sides.append(our_side(servers[-1].base_url, BEFORE)[0])
        await attach_meters(sides, servers[0], databases)
        run = Run(sizes, sides, databases, client)
        await run.setup()
        for index in range(sizes.rounds):
            await run.round(index)
        return run.figures()
    finally:
        for side in sides:
            await side.close()
        for server in servers:
            server.stop()
        for database in databases:
            await drop_database(database)


# -- the report ----------------------------------------------------------------


def markdown_table(results: dict[str, Any]) -> str:
    meta = results["meta"]
    before = BEFORE in results["figures"].get("pop_item", {})
    lines = [
        f"Run {meta['date']} ({'quick' if meta['quick'] else 'full'}), {meta['cpus']} CPUs,"
        f" load average {meta['load_average']}, {meta['sizes']['rounds']} rounds, server"
        f" workers: 1, PostgreSQL pool {POOL_SIZE} for session-state and SQLAlchemySession."
        " Latency per call, pooled over the rounds; ratio < 1: ours takes less time (for"
        " add_items/s, > 1: ours does more).",
        "",
        f"| workload | figure | {OURS} (HTTP) | SDK {THEIRS} | SDK {REDIS} |"
        " ours / SQLAlchemy | ours / Redis |" + (f" {BEFORE} | ours / before |" if before else ""),
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: |" if before else ""),
    ]
    for workload, entry in results["figures"].items():
        if not isinstance(entry, dict):
            continue
        for key in entry[f"ours_over_{THEIRS}"]:
            digits = 0 if key == "add_items_per_s" else 2
            lines.append(
                f"| {workload} | {key} | {entry[OURS][key]:,.{digits}f}"
                f" | {entry[THEIRS][key]:,.{digits}f} | {entry[REDIS][key]:,.{digits}f}"
                f" | {entry[f'ours_over_{THEIRS}'][key]:.2f}"
                f" | {entry[f'ours_over_{REDIS}'][key]:.2f} |"
                + (
                    f" {entry[BEFORE][key]:,.{digits}f} | {entry[f'ours_over_{BEFORE}'][key]:.2f} |"
                    if before
                    else ""
                )
            )
        if "cpu_ms_per_call" in entry[OURS]:
            # Every process the side needs: the application's and the
            # server's, PostgreSQL's or redis-server's (bench.process_cpu).
            ours, theirs, redis_cpu = (
                entry[name]["cpu_ms_per_call"]["total_cpu_ms"] for name in (OURS, THEIRS, REDIS)
            )
            lines.append(
                f"| {workload} | CPU ms per call, all processes | {ours:.3f} | {theirs:.3f}"
                f" | {redis_cpu:.3f} | {ours / theirs:.2f} | {ours / redis_cpu:.2f} |"
                + (" | |" if before else "")
            )
    lines += ["", "| goal (issue 28) | measured | met |", "| --- | --- | --- |"]
    for goal, measured, met in results["goals"]:
        lines.append(f"| {goal} | {measured} | {'met' if met else 'NOT met'} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (CI)")
    parser.add_argument("--name", default="openai_sessions", help="results file name")
    parser.add_argument("--before", type=Path, help="another checkout's server, as a fourth side")
    arguments = parser.parse_args()
    sizes = QUICK if arguments.quick else FULL
    started = time.time()
    load_before = os.getloadavg()
    figures = asyncio.run(execute(sizes, arguments.before))
    load_after = os.getloadavg()
    results = {
        "meta": {
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            # 1-minute load average before and after (2 CPUs: above 2, other
            # work was waiting for them).
            "load_average": f"{load_before[0]:.1f} -> {load_after[0]:.1f}",
            "quick": arguments.quick,
            "before": None if arguments.before is None else str(arguments.before),
            "sizes": sizes.__dict__,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "openai_agents": version("openai-agents"),
            "sqlalchemy": version("sqlalchemy"),
            "redis": version("redis"),
            "asyncpg": version("asyncpg"),
            "pool_size_each_side": POOL_SIZE,
            "duration_s": round(time.time() - started, 1),
        },
        "figures": figures,
        "goals": goals(figures),
    }
    table = markdown_table(results) + "\n" + steadiness_table(steadiness(figures))
    print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / f"{arguments.name}.md").write_text(table)
    # CI runs the quick form: an item of ours lost or out of order fails it.
    broken = sum(
        entry[OURS]["lost"] + entry[OURS]["misordered"]
        for workload, entry in figures.items()
        if workload.startswith("concurrent")
    )
    print(f"Check: nothing of ours lost or reordered: {'met' if not broken else 'NOT met'}")
    return 0 if not broken else 1


if __name__ == "__main__":
    raise SystemExit(main())
