"""Loading a LangGraph thread whose state is a DeltaChannel (beta in
langgraph 1.2): what a graph pays each time it reads the thread's state
(every run starts so), side by side in one run.

A DeltaChannel's value is rebuilt from the writes of the checkpoint's
ancestors back to the nearest snapshot (one every 100 updates by default),
through the saver's `aget_delta_channel_history`. Sides, each reading the
same shape of thread (TURNS turns of a graph appending one message a turn:
no snapshot yet, so the walk reaches the root):
- `SessionStateSaver`: its history in pages of the thread's checkpoints;
- `SessionStateSaver, one request per ancestor`: LangGraph's base walk
  (a get_tuple per ancestor) on the same saver and thread, as the saver
  read it before;
- `AsyncPostgresSaver`: langgraph-checkpoint-postgres's own fast path
  (psycopg, a pool in this process), on a database of its own.
The server is `session-state serve` on a database of its own. Each round
times READS `aget_state` calls per side, the sides in a rotating order;
p50 and p99 per side, medians over the rounds with their spread, and ours
against each other side round by round (bench.spread).

    python -m bench.delta_history            # 5 rounds, 40 turns, 50 reads
    python -m bench.delta_history --quick    # 2 rounds, 5 turns, 5 reads

Figures: docs/performance.md, "LangGraph's delta channels".
"""

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from bench import RESULTS
from bench.run import Server, create_database, drop_database, dsn, migrate, percentile
from bench.spread import percent, spread, verdict
from session_state_client.langgraph import SessionStateSaver

OURS = "SessionStateSaver"
WALKED = "SessionStateSaver, one request per ancestor"
THEIRS = "AsyncPostgresSaver"
SIDES = (OURS, WALKED, THEIRS)
MESSAGE = "x" * 200
# A port of its own among the benches' servers.
PORT = 18961


def _extend(state: list[Any] | None, writes: Sequence[list[Any]]) -> list[Any]:
    return [*(state or []), *(item for write in writes for item in write)]


class Chat(TypedDict):
    messages: Annotated[list[Any], DeltaChannel(_extend)]


def _graph(saver: BaseCheckpointSaver[Any]) -> Any:
    builder = StateGraph(Chat)
    builder.add_node("reply", lambda state: {"messages": [MESSAGE]})
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


class WalkedSaver(SessionStateSaver):
    """The saver with LangGraph's base walk: one get_tuple per ancestor."""

    async def aget_delta_channel_history(self, *, config: Any, channels: Sequence[str]) -> Any:
        return await BaseCheckpointSaver.aget_delta_channel_history(
            self, config=config, channels=channels
        )


async def _fill(graph: Any, config: dict[str, Any], turns: int) -> int:
    for _ in range(turns):
        await graph.ainvoke({"messages": [MESSAGE]}, config)
    return len((await graph.aget_state(config)).values["messages"])


async def _reads(graph: Any, config: dict[str, Any], reads: int) -> list[float]:
    timings = []
    for _ in range(reads):
        started = time.perf_counter()
        await graph.aget_state(config)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


async def measure(rounds: int, turns: int, reads: int) -> dict[str, Any]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    ours_database = await create_database("bench_delta_ours")
    theirs_database = await create_database("bench_delta_theirs")
    server: Server | None = None
    try:
        migrate(ours_database)
        server = Server(ours_database, port=PORT, workers=1)
        config = {"configurable": {"thread_id": "chat"}}
        async with (
            SessionStateSaver(server.base_url, app_name="bench") as ours,
            WalkedSaver(server.base_url, app_name="bench") as walked,
            AsyncConnectionPool(
                dsn(theirs_database),
                min_size=1,
                max_size=2,
                kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
                open=False,
            ) as pool,
        ):
            theirs = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
            await theirs.setup()
            graphs = {OURS: _graph(ours), WALKED: _graph(walked), THEIRS: _graph(theirs)}
            messages = {name: await _fill(graphs[name], config, turns) for name in (OURS, THEIRS)}
            checkpoints = len([found async for found in ours.alist(config)])
            p50: dict[str, list[float]] = {side: [] for side in SIDES}
            p99: dict[str, list[float]] = {side: [] for side in SIDES}
            for round_number in range(rounds):
                order = SIDES[round_number % 3 :] + SIDES[: round_number % 3]
                for side in order:
                    await _reads(graphs[side], config, 2)  # warm
                    timings = await _reads(graphs[side], config, reads)
                    p50[side].append(statistics.median(timings))
                    p99[side].append(percentile(timings, 0.99))
    finally:
        if server is not None:
            server.stop()
        await drop_database(ours_database)
        await drop_database(theirs_database)
    return {
        "rounds": rounds,
        "turns": turns,
        "reads_per_round": reads,
        "checkpoints_in_the_thread": checkpoints,
        "messages_read": messages,
        "load_average": os.getloadavg()[0],
        "sides": {
            side: {
                "p50_ms": p50[side],
                "p99_ms": p99[side],
                "p50_median_ms": statistics.median(p50[side]),
                "p99_median_ms": statistics.median(p99[side]),
                "p50_spread": spread(p50[side]),
            }
            for side in SIDES
        },
        "ours_against": {
            side: verdict(p50[OURS], p50[side], higher_is_better=False) for side in (WALKED, THEIRS)
        },
    }


def report(found: dict[str, Any]) -> None:
    print(
        f"a thread of {found['turns']} turns ({found['checkpoints_in_the_thread']} checkpoints),"
        f" {found['rounds']} rounds of {found['reads_per_round']} reads a side,"
        f" load average {found['load_average']:.1f}"
    )
    print(f"  {'side':46} {'p50 ms':>8} {'p99 ms':>8} {'spread':>8}")
    for side, figures in found["sides"].items():
        print(
            f"  {side:46} {figures['p50_median_ms']:8.2f} {figures['p99_median_ms']:8.2f}"
            f" {percent(figures['p50_spread']):>8}"
        )
    for side, said in found["ours_against"].items():
        print(f"  ours / {side}, p50: {said}")
    said = "met" if _whole(found) else "NOT met"
    print(f"  Check: every side read the whole history ({found['messages_read']}): {said}")


def _whole(found: dict[str, Any]) -> bool:
    """Every side read every message its thread holds: two a turn."""
    return set(found["messages_read"].values()) == {found["turns"] * 2}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--reads", type=int, default=50)
    parser.add_argument("--name", default="delta_history")
    parser.add_argument("--quick", action="store_true", help="2 rounds, 5 turns, 5 reads")
    arguments = parser.parse_args(argv)
    if arguments.quick:
        arguments.rounds, arguments.turns, arguments.reads = 2, 5, 5
    found = asyncio.run(measure(arguments.rounds, arguments.turns, arguments.reads))
    report(found)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(found, indent=2) + "\n")
    return 0 if _whole(found) else 1


if __name__ == "__main__":
    raise SystemExit(main())
