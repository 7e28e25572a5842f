"""LangGraph checkpointers on PostgreSQL: session-state's SessionStateSaver
(through `session-state serve`, over HTTP) against LangGraph's own
AsyncPostgresSaver (in-process, psycopg, a pool of the server's size), each in
a database of its own on one PostgreSQL server.

    python -m bench.langgraph              # 50 threads of a 20-step graph, 3 rounds
    python -m bench.langgraph --quick      # 5 threads of 5 steps, 1 round
    python -m bench.langgraph --rounds 5

The graph is scripted (no LLM): each step appends a message of about 200
bytes to a list channel and counts. All threads run at once with `ainvoke`;
a step's latency is the time between two steps of one thread (the
checkpoint write in between included). Storage is the tables' size after the
run (pg_total_relation_size, VACUUMed), per step. Each round runs both
savers, one after the other, in new databases; the figures are medians over
the rounds, with the machine's load average when each side started (on a
shared machine the load moves between rounds: compare within a round).
Writes bench/results/<name>.json and .md.
"""

import argparse
import asyncio
import itertools
import json
import operator
import os
import platform
import statistics
import time
import uuid
from importlib.metadata import version
from typing import Annotated, Any, TypedDict

import asyncpg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from bench import RESULTS
from bench.client_cpu import _free_port
from bench.run import (
    Server,
    create_database,
    drop_database,
    dsn,
    latency_summary,
    migrate,
    vacuum,
)
from session_state_client.langgraph import SessionStateSaver

OURS, THEIRS = "SessionStateSaver", "AsyncPostgresSaver"
POOL_SIZE = 10  # bench.run.Server's pool
OUR_TABLES = ("lg_threads", "lg_checkpoints", "lg_channel_values", "lg_writes")
THEIR_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations")


class Chat(TypedDict):
    messages: Annotated[list[str], operator.add]
    count: int


def build(checkpointer: BaseCheckpointSaver[Any], steps: int, marks: dict[str, list[float]]) -> Any:
    def step(state: Chat, config: RunnableConfig) -> dict[str, Any]:
        marks[config["configurable"]["thread_id"]].append(time.perf_counter())
        return {"messages": [f"step {state['count']}: " + "x" * 190], "count": state["count"] + 1}

    graph = StateGraph(Chat)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", lambda state: END if state["count"] >= steps else "step")
    return graph.compile(checkpointer=checkpointer)


async def run_side(
    checkpointer: BaseCheckpointSaver[Any], threads: int, steps: int
) -> dict[str, float]:
    marks: dict[str, list[float]] = {}
    graph = build(checkpointer, steps, marks)
    names = [f"thread-{index}-{uuid.uuid4().hex[:6]}" for index in range(threads)]
    for name in names:
        marks[name] = []
    started = time.perf_counter()
    await asyncio.gather(
        *(
            graph.ainvoke(
                {"messages": [], "count": 0},
                {"configurable": {"thread_id": name}, "recursion_limit": steps + 10},
            )
            for name in names
        )
    )
    seconds = time.perf_counter() - started
    gaps = [
        later - earlier for times in marks.values() for earlier, later in itertools.pairwise(times)
    ]
    return {"steps_per_second": threads * steps / seconds, **latency_summary(gaps)}


async def table_bytes(database: str, tables: tuple[str, ...]) -> int:
    await vacuum(database)
    connection = await asyncpg.connect(dsn(database))
    try:
        return int(
            await connection.fetchval(
                "SELECT sum(pg_total_relation_size(t)) FROM unnest($1::regclass[]) AS t",
                list(tables),
            )
        )
    finally:
        await connection.close()


def _load() -> float:
    return os.getloadavg()[0]


async def one_round(threads: int, steps: int) -> dict[str, dict[str, float]]:
    ours_db, theirs_db = await create_database("lg_ours"), await create_database("lg_theirs")
    server = None
    try:
        migrate(ours_db)
        server = Server(ours_db, port=_free_port(), workers=1)
        results: dict[str, dict[str, float]] = {}
        load = _load()
        async with SessionStateSaver(server.base_url, app_name="bench") as ours:
            results[OURS] = {**await run_side(ours, threads, steps), "load": load}
        results[OURS]["bytes_per_step"] = await table_bytes(ours_db, OUR_TABLES) / (threads * steps)
        async with AsyncConnectionPool(
            dsn(theirs_db),
            max_size=POOL_SIZE,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
            open=False,
        ) as pool:
            theirs = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
            await theirs.setup()
            load = _load()
            results[THEIRS] = {**await run_side(theirs, threads, steps), "load": load}
        results[THEIRS]["bytes_per_step"] = await table_bytes(theirs_db, THEIR_TABLES) / (
            threads * steps
        )
        return results
    finally:
        if server is not None:
            server.stop()
        await drop_database(ours_db)
        await drop_database(theirs_db)


def medians(rounds: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {
        name: {
            figure: statistics.median(round_[name][figure] for round_ in rounds)
            for figure in rounds[0][name]
        }
        for name in rounds[0]
    }


def markdown(rounds: list[dict[str, dict[str, float]]], threads: int, steps: int) -> str:
    lines = [
        f"{threads} threads of a {steps}-step graph at once, PostgreSQL, {platform.node()} "
        f"({os.cpu_count()} cores): medians of {len(rounds)} rounds",
        "",
        "| saver | steps/s | step p50 ms | step p99 ms | bytes per step | load average |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, figures in medians(rounds).items():
        lines.append(
            f"| {name} | {figures['steps_per_second']:.0f} | {figures['p50_ms']:.1f} | "
            f"{figures['p99_ms']:.1f} | {figures['bytes_per_step']:.0f} | {figures['load']:.1f} |"
        )
    lines += ["", "Each round, ours / theirs: steps/s, p99 ms, bytes per step, load", ""]
    for number, round_ in enumerate(rounds, 1):
        ours, theirs = round_[OURS], round_[THEIRS]
        lines.append(
            f"- {number}: {ours['steps_per_second']:.0f} / {theirs['steps_per_second']:.0f}, "
            f"{ours['p99_ms']:.0f} / {theirs['p99_ms']:.0f}, "
            f"{ours['bytes_per_step']:.0f} / {theirs['bytes_per_step']:.0f}, "
            f"{ours['load']:.1f} / {theirs['load']:.1f}"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default="langgraph")
    parser.add_argument("--rounds", type=int, default=None, help="default 3 (--quick: 1)")
    arguments = parser.parse_args(argv)
    threads, steps = (5, 5) if arguments.quick else (50, 20)
    count = arguments.rounds or (1 if arguments.quick else 3)
    rounds = [asyncio.run(one_round(threads, steps)) for _ in range(count)]
    table = markdown(rounds, threads, steps)
    print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    document = {
        "threads": threads,
        "steps": steps,
        "langgraph": version("langgraph"),
        "langgraph-checkpoint-postgres": version("langgraph-checkpoint-postgres"),
        "results": medians(rounds),
        "rounds": rounds,
    }
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(document, indent=2) + "\n")
    (RESULTS / f"{arguments.name}.md").write_text(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
