"""LangGraph checkpointers on PostgreSQL: session-state's SessionStateSaver
(through `session-state serve`, over HTTP) against LangGraph's own
AsyncPostgresSaver (psycopg, a pool of the server's size), each in a
database of its own on one PostgreSQL server.

    python -m bench.langgraph                       # 50 threads x 20 steps, then 1 thread
    python -m bench.langgraph --quick               # 5 threads of 5 steps, 1 round, 1 pass
    python -m bench.langgraph --rounds 5 --value-bytes 2048
    python -m bench.langgraph --before /tmp/old     # a third side: that checkout's
                                                    # server and client

The graph is scripted (no LLM): each step appends a message of
`--value-bytes` (default 2 KB: a graph's state carries messages) to a list
channel and counts, so the state a checkpoint holds grows by that much a
step. All threads run at once with `ainvoke` (a pass); a step's latency is
the time between two steps of one thread. Each round, a side gets a new
database, stocked through its own saver with 100 other threads of 10 steps
(`STOCK`; 5 of 2 in the quick form) and VACUUM ANALYZEd, as a saver in use
holds other threads; then it runs an untimed warm-up pass (its connections
and first statements), then passes of new threads until their run times
add up to `--window` seconds (default 10; one pass of one thread lasts tens
of milliseconds, too short to tell two sides apart), and its figures pool
those passes. Each side starts right after a
CHECKPOINT of the cluster, so that none pays for the WAL's full-page images
of a checkpoint that fell in its run and not in the other's. LangGraph stores checkpoints in the
background (durability "async"): a step does not wait for its writes, so
the run also times each aput and aput_writes (a write's latency: how long a
step's checkpoint takes to be stored) and the time from a thread's last
step to the end of its run (the writes still queued). Storage is the tables' size after the run
(pg_total_relation_size, VACUUMed), per step. CPU per step is the server's,
the client's and PostgreSQL's (every process of the cluster, over the side's
run: the other side's database sits idle meanwhile).

Each side runs in a process of its own (the same code path for each: the
client, LangGraph and the event loop in it, nothing shared), and the sides
alternate: a round runs each once, in an order that turns each round, so
that none always runs first or warm. The figures are medians over the
rounds with their spread ((max - min) / median), and a difference smaller
than the spread is called "within noise". Each side's final states are
checked: every thread ended with all its messages, in order.
Writes bench/results/<name>.json and .md.
"""

import argparse
import asyncio
import contextlib
import itertools
import json
import operator
import os
import platform
import random
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, TypedDict

import asyncpg

from bench import RESULTS
from bench.before_after import migrate_from
from bench.client_cpu import _free_port
from bench.process_cpu import cluster_cpu, postmaster_pid
from bench.run import (
    ADMIN_DSN,
    Server,
    checkpoint,
    create_database,
    drop_database,
    dsn,
    head_checkout,
    latency_summary,
    migrate,
    percentile,
    sqlalchemy_url,
    vacuum,
)
from bench.server_choice import Granian

ROOT = Path(__file__).resolve().parent.parent
OURS, THEIRS, BEFORE = "SessionStateSaver", "AsyncPostgresSaver", "SessionStateSaver before"
GRANIAN = "SessionStateSaver on granian"
POOL_SIZE = 10  # bench.run.Server's pool
OUR_TABLES = ("lg_threads", "lg_checkpoints", "lg_channel_values", "lg_writes")
THEIR_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations")
DEFAULT_VALUE_BYTES = 2048
# Each round, a side runs passes (every thread once) until their run times
# add up to this, after a warm-up pass of this many steps a thread.
WINDOW_S = 10.0
WARM_UP_STEPS = 2
# Each side's database is stocked with other threads' checkpoints before it
# is timed (then VACUUM ANALYZEd): a saver in use holds other threads, and
# PostgreSQL plans its statements on an empty database otherwise.
STOCK = (100, 10)  # threads, steps
QUICK_STOCK = (5, 2)


class Chat(TypedDict):
    messages: Annotated[list[str], operator.add]
    count: int


@dataclass(frozen=True)
class Shape:
    threads: int
    steps: int
    value_bytes: int

    @property
    def label(self) -> str:
        return f"{self.threads} threads x {self.steps} steps, {self.value_bytes} B a step"


_VOCABULARY = (
    "the agent called a tool and read its answer; the user asked about the "
    "weather in Paris tomorrow, a flight booked for three at noon"
)
_WORDS = random.Random(46).choices(_VOCABULARY.split(" "), k=4096)


def _prose(size: int) -> str:
    """About `size` characters of words, different from one message to the
    next: PostgreSQL compresses a run of one letter to nothing, a message
    far less."""
    start = random.randrange(len(_WORDS))
    text = " ".join(_WORDS[start:] + _WORDS[:start])
    while len(text) < size:
        text += " " + text
    return text[: max(0, size)]


def build(checkpointer: Any, shape: Shape, marks: dict[str, list[float]]) -> Any:
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph import END, START, StateGraph

    def step(state: Chat, config: RunnableConfig) -> dict[str, Any]:
        marks[config["configurable"]["thread_id"]].append(time.perf_counter())
        text = f"step {state['count']:04}: "
        return {
            "messages": [text + _prose(shape.value_bytes - len(text))],
            "count": state["count"] + 1,
        }

    graph = StateGraph(Chat)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges(
        "step", lambda state: END if state["count"] >= shape.steps else "step"
    )
    return graph.compile(checkpointer=checkpointer)


def _lost(final: dict[str, Any], shape: Shape) -> int:
    """How many of a thread's messages its final state lacks (or holds out
    of order): a run that loses a write is no faster for it."""
    messages = final.get("messages", [])
    kept = sum(
        1
        for index, message in enumerate(messages[: shape.steps])
        if isinstance(message, str) and message.startswith(f"step {index:04}: ")
    )
    return shape.steps - kept + max(0, len(messages) - shape.steps)


def _timed_writes(checkpointer: Any, seconds: list[float]) -> None:
    """Each aput and aput_writes of `checkpointer` timed into `seconds`:
    LangGraph runs them in the background (durability "async"), so a step
    does not wait for them; this is how long a step's checkpoint takes to
    be stored once LangGraph hands it over."""
    for name in ("aput", "aput_writes"):
        call = getattr(checkpointer, name)

        async def timed(*arguments: Any, _call: Any = call, **keywords: Any) -> Any:
            started = time.perf_counter()
            try:
                return await _call(*arguments, **keywords)
            finally:
                seconds.append(time.perf_counter() - started)

        setattr(checkpointer, name, timed)


@dataclass
class _Pass:
    """What one pass (every thread's run once) measured."""

    seconds: float
    cpu: float
    gaps: list[float]
    drains: list[float]
    lost: int


async def _one_pass(graph: Any, shape: Shape, marks: dict[str, list[float]]) -> _Pass:
    """Every thread of `shape` run once, at once, each a thread new to the saver."""
    names = [f"thread-{index}-{uuid.uuid4().hex[:8]}" for index in range(shape.threads)]
    for name in names:
        marks[name] = []
    started, cpu = time.perf_counter(), time.process_time()
    finals = await asyncio.gather(
        *(
            graph.ainvoke(
                {"messages": [], "count": 0},
                {"configurable": {"thread_id": name}, "recursion_limit": shape.steps + 10},
            )
            for name in names
        )
    )
    ended = time.perf_counter()
    seconds, cpu = ended - started, time.process_time() - cpu
    times = [marks.pop(name) for name in names]
    # From a thread's last step to the end of its run: the writes LangGraph
    # still had to store (its steps run ahead of them).
    drains = [ended - steps[-1] for steps in times if steps]
    gaps = [later - earlier for steps in times for earlier, later in itertools.pairwise(steps)]
    # Read back from the saver, as a restarted process would.
    stored = [await graph.aget_state({"configurable": {"thread_id": name}}) for name in names]
    lost = sum(_lost(final, shape) for final in finals)
    lost += sum(_lost(dict(state.values), shape) for state in stored)
    return _Pass(seconds, cpu, gaps, drains, lost)


async def run_side(
    checkpointer: Any, shape: Shape, window_s: float, timing: Callable[[], None] = lambda: None
) -> dict[str, float]:
    """The side's figures over passes whose run times add up to `window_s`
    (at least one), after an untimed warm-up pass: one pass of one thread
    lasts a few dozen milliseconds, too short to tell two sides apart.
    `timing` is called when the timed passes start."""
    marks: dict[str, list[float]] = {}
    # Every connection the side opens, and its first statements, before timing.
    warm_up = Shape(shape.threads, WARM_UP_STEPS, shape.value_bytes)
    await _one_pass(build(checkpointer, warm_up, marks), warm_up, marks)
    graph = build(checkpointer, shape, marks)
    timing()
    writes: list[float] = []
    _timed_writes(checkpointer, writes)
    passes: list[_Pass] = []
    while not passes or sum(done.seconds for done in passes) < window_s:
        passes.append(await _one_pass(graph, shape, marks))
    steps = shape.threads * shape.steps * len(passes)
    gaps = [gap for done in passes for gap in done.gaps]
    return {
        "steps_per_second": steps / sum(done.seconds for done in passes),
        **latency_summary(gaps),
        "write_p50_ms": percentile(writes, 0.5) * 1000,
        "write_p99_ms": percentile(writes, 0.99) * 1000,
        "drain_p50_ms": percentile([d for done in passes for d in done.drains], 0.5) * 1000,
        "client_cpu_ms_per_step": sum(done.cpu for done in passes) * 1000 / steps,
        # aput and aput_writes calls (LangGraph's), against requests sent.
        "calls_per_step": len(writes) / steps,
        "passes": len(passes),
        # Steps stored in all, the warm-up's too: the server's CPU and the
        # tables' size are divided by it.
        "stored_steps": steps + shape.threads * WARM_UP_STEPS,
        "lost": sum(done.lost for done in passes),
    }


def _counted_requests(saver: Any) -> list[int]:
    """How many requests the saver's async transport sends (a one-item
    list, counted as they go): a step's puts and writes grouped into one
    request show here."""
    sent = [0]
    transport = saver._server._async
    send = transport.send

    async def counting(*arguments: Any) -> Any:
        sent[0] += 1
        return await send(*arguments)

    transport.send = counting
    return sent


async def _ours(base_url: str, shape: Shape, window_s: float) -> dict[str, float]:
    from session_state_client.langgraph import SessionStateSaver

    async with SessionStateSaver(base_url, app_name="bench") as saver:
        sent = _counted_requests(saver)

        def count_from_now() -> None:  # the warm-up's requests are not counted
            sent[0] = 0

        figures = await run_side(saver, shape, window_s, timing=count_from_now)
        figures["requests_per_step"] = sent[0] / (figures["passes"] * shape.threads * shape.steps)
        return figures


async def _theirs(database: str, shape: Shape, window_s: float) -> dict[str, float]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    async with AsyncConnectionPool(
        dsn(database),
        max_size=POOL_SIZE,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=False,
    ) as pool:
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        await saver.setup()
        return await run_side(saver, shape, window_s)


def side_main(arguments: argparse.Namespace) -> int:
    """One side in this process (the parent's child): prints its figures."""
    shape = Shape(arguments.threads, arguments.steps, arguments.value_bytes)
    if arguments.side == "theirs":
        figures = asyncio.run(_theirs(arguments.target, shape, arguments.window))
    else:
        figures = asyncio.run(_ours(arguments.target, shape, arguments.window))
    print(json.dumps(figures))
    return 0


def _child(
    side: str, target: str, shape: Shape, window_s: float, client: Path | None
) -> dict[str, float]:
    """One side's figures, measured by a process of its own; `client`: the
    checkout whose client it imports (None: this one's)."""
    env = dict(os.environ)
    if client is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(client / "client"), str(ROOT)])
    command = [
        sys.executable,
        "-m",
        "bench.langgraph",
        "--side",
        side,
        "--target",
        target,
        "--threads",
        str(shape.threads),
        "--steps",
        str(shape.steps),
        "--value-bytes",
        str(shape.value_bytes),
        "--window",
        str(window_s),
    ]
    output = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if output.returncode:
        raise RuntimeError(f"the {side} side failed:\n{output.stderr[-4000:]}")
    figures: dict[str, float] = json.loads(output.stdout.strip().splitlines()[-1])
    return figures


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


def _process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process and its waited-for children."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(field) for field in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _server_cpu(server: Server | Granian) -> float:
    """CPU seconds of the server's processes so far (granian's worker is a
    child of its main process)."""
    pids = [server.process.pid]
    children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
    if children.exists():
        pids += [int(pid) for pid in children.read_text().split()]
    return sum(_process_cpu(pid) for pid in pids)


async def _stocked(
    side: str, target: str, database: str, stock: Shape, source: Path | None
) -> float:
    """Fills the side's database with `stock`'s threads through its own saver
    (one pass, untimed), then VACUUM ANALYZE and a CHECKPOINT; the steps
    stored."""
    figures = _child(side, target, stock, 0.0, source)
    await vacuum(database)
    await checkpoint()
    return figures["stored_steps"]


async def measure(
    side: str, shape: Shape, window_s: float, before: Path | None, stock: Shape
) -> dict[str, float]:
    """One side once (its passes), in a new database stocked with `stock`."""
    database = await create_database("lg_side")
    server: Server | Granian | None = None
    try:
        load = os.getloadavg()[0]
        postmaster = await postmaster_pid(ADMIN_DSN)
        if side == THEIRS:
            stocked = await _stocked("theirs", database, database, stock, None)
            postgres_cpu = cluster_cpu(postmaster)
            figures = _child("theirs", database, shape, window_s, None)
            stored = figures["stored_steps"]
            figures["postgres_cpu_ms_per_step"] = (
                (cluster_cpu(postmaster) - postgres_cpu) * 1000 / stored
            )
            all_steps = stored + stocked
            figures["bytes_per_step"] = await table_bytes(database, THEIR_TABLES) / all_steps
            return {**figures, "load": load}
        source = before if side == BEFORE else None
        if source is None:
            migrate(database)
        else:
            migrate_from(source, sqlalchemy_url(database))
        if side == GRANIAN:
            bodies = {"SESSION_STATE_MAX_BODY_BYTES": str(64 * 1024 * 1024)}
            server = Granian(database, _free_port(), [], bodies)
        else:
            server = Server(database, port=_free_port(), workers=1, source=source)
        stocked = await _stocked("ours", server.base_url, database, stock, source)
        cpu, postgres_cpu = _server_cpu(server), cluster_cpu(postmaster)
        figures = _child("ours", server.base_url, shape, window_s, source)
        stored = figures["stored_steps"]
        figures["server_cpu_ms_per_step"] = (_server_cpu(server) - cpu) * 1000 / stored
        figures["postgres_cpu_ms_per_step"] = (
            (cluster_cpu(postmaster) - postgres_cpu) * 1000 / stored
        )
        all_steps = stored + stocked
        figures["bytes_per_step"] = await table_bytes(database, OUR_TABLES) / all_steps
        return {**figures, "load": load}
    finally:
        if server is not None:
            server.stop()
        await drop_database(database)


def summary(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median, and the spread of throughput and p99 over the
    rounds ((max - min) / median)."""
    found = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    for key in ("steps_per_second", "p99_ms", "p50_ms", "write_p50_ms", "write_p99_ms"):
        values = [run[key] for run in runs]
        middle = statistics.median(values)
        found[f"{key}_spread"] = (max(values) - min(values)) / middle if middle else 0.0
    found["lost"] = sum(run["lost"] for run in runs)
    return found


def verdict(ours: dict[str, float], theirs: dict[str, float], key: str) -> str:
    """ours / theirs for `key`, and "within noise" when the difference is
    smaller than either side's spread."""
    ratio = ours[key] / theirs[key] if theirs[key] else float("inf")
    noise = max(ours[f"{key}_spread"], theirs[f"{key}_spread"])
    return f"{ratio:.2f}x" + (" (within noise)" if abs(ratio - 1) < noise else "")


def paired(mine: list[dict[str, float]], other: list[dict[str, float]], key: str) -> str:
    """The ratio of two sides' `key` within each round, as its median and
    range: on a machine whose load moves between rounds, two sides run a
    few seconds apart are closer to each other than to another round."""
    ratios = sorted(a[key] / b[key] for a, b in zip(mine, other, strict=True) if b[key])
    if not ratios:
        return "-"
    return f"{statistics.median(ratios):.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})"


def paired_lines(sides: dict[str, list[dict[str, float]]]) -> list[str]:
    pairs = [(name, THEIRS) for name in (OURS, BEFORE, GRANIAN) if name in sides]
    pairs += [(OURS, other) for other in (BEFORE, GRANIAN) if other in sides]
    keys = ("steps_per_second", "p99_ms", "write_p50_ms", "write_p99_ms")
    lines = ["", "Within each round, the ratio's median (and range over the rounds):", ""]
    for mine, other in pairs:
        lines.append(
            f"- {mine} / {other}: "
            + ", ".join(f"{key} {paired(sides[mine], sides[other], key)}" for key in keys)
        )
    return lines


def markdown(shape: Shape, sides: dict[str, list[dict[str, float]]], window_s: float) -> str:
    rounds = len(next(iter(sides.values())))
    medians = {name: summary(runs) for name, runs in sides.items()}
    passes = sorted(int(run["passes"]) for runs in sides.values() for run in runs)
    lines = [
        f"{shape.label}, PostgreSQL, {platform.node()} ({os.cpu_count()} cores): medians of "
        f"{rounds} alternating rounds, each side's passes in a round timed for at least "
        f"{window_s:g} s ({passes[0]}-{passes[-1]} passes) after a warm-up pass "
        "(spread: (max - min) / median)",
        "",
        "| saver | steps/s | spread | step p50 ms | step p99 ms | p99 spread | "
        "write p50 ms | write p99 ms | last step to end ms | "
        "server CPU ms/step | client CPU ms/step | PostgreSQL CPU ms/step | calls per step | "
        "requests per step | bytes per step | lost |",
        "| --- |" + " ---: |" * 15,
    ]
    for name, figures in medians.items():
        server_cpu = figures.get("server_cpu_ms_per_step")
        requests = figures.get("requests_per_step")
        lines.append(
            f"| {name} | {figures['steps_per_second']:.0f} | "
            f"{figures['steps_per_second_spread']:.0%} | {figures['p50_ms']:.1f} | "
            f"{figures['p99_ms']:.1f} | {figures['p99_ms_spread']:.0%} | "
            f"{figures['write_p50_ms']:.1f} | {figures['write_p99_ms']:.1f} | "
            f"{figures['drain_p50_ms']:.0f} | "
            f"{'' if server_cpu is None else f'{server_cpu:.2f}'} | "
            f"{figures['client_cpu_ms_per_step']:.2f} | "
            f"{figures.get('postgres_cpu_ms_per_step', 0):.2f} | "
            f"{figures.get('calls_per_step', 0):.2f} | "
            f"{'' if requests is None else f'{requests:.2f}'} | {figures['bytes_per_step']:.0f} | "
            f"{figures['lost']:.0f} |"
        )
    theirs = medians[THEIRS]
    lines.append("")
    for name in (OURS, BEFORE, GRANIAN):
        if name in medians:
            ours = medians[name]
            lines.append(
                f"- {name} / {THEIRS}: steps/s {verdict(ours, theirs, 'steps_per_second')}, "
                f"p99 {verdict(ours, theirs, 'p99_ms')}, p50 {verdict(ours, theirs, 'p50_ms')}, "
                f"write p50 {verdict(ours, theirs, 'write_p50_ms')}, "
                f"write p99 {verdict(ours, theirs, 'write_p99_ms')}"
            )
    for other in (BEFORE, GRANIAN):
        if other in medians:
            ours, theirs_ = medians[OURS], medians[other]
            lines.append(
                f"- {OURS} / {other}: steps/s {verdict(ours, theirs_, 'steps_per_second')}, "
                f"p99 {verdict(ours, theirs_, 'p99_ms')}, p50 {verdict(ours, theirs_, 'p50_ms')}"
            )
    lines += paired_lines(sides)
    lines += ["", "Each round, steps/s and p99 ms, by side:", ""]
    for number in range(rounds):
        lines.append(
            f"- {number + 1}: "
            + "; ".join(
                f"{name} {runs[number]['steps_per_second']:.0f}, {runs[number]['p99_ms']:.0f}"
                for name, runs in sides.items()
            )
        )
    return "\n".join(lines) + "\n"


def goals(shape: Shape, sides: dict[str, list[dict[str, float]]]) -> list[str]:
    """Issue 46's goals for this shape, each met or not."""
    ours, theirs = summary(sides[OURS]), summary(sides[THEIRS])
    found = []
    if shape.threads > 1:
        ratio = ours["steps_per_second"] / theirs["steps_per_second"]
        found.append(
            f"Goal steps/s at least 1.5x {THEIRS}'s ({shape.label}): "
            f"{ratio:.2f}x, {'met' if ratio >= 1.5 else 'NOT met'}"
        )
        found.append(
            f"Goal p99 at or under {THEIRS}'s ({shape.label}): {ours['p99_ms']:.0f} ms against "
            f"{theirs['p99_ms']:.0f}, {'met' if ours['p99_ms'] <= theirs['p99_ms'] else 'NOT met'}"
        )
        found.append(
            f"Goal write p99 at or under {THEIRS}'s ({shape.label}): "
            f"{ours['write_p99_ms']:.0f} ms against {theirs['write_p99_ms']:.0f}, "
            f"{'met' if ours['write_p99_ms'] <= theirs['write_p99_ms'] else 'NOT met'}"
        )
    else:
        found.append(
            f"Goal step latency no worse than {THEIRS}'s ({shape.label}): p50 "
            f"{ours['p50_ms']:.1f} ms against {theirs['p50_ms']:.1f}, "
            f"{'met' if ours['p50_ms'] <= theirs['p50_ms'] else 'NOT met'}"
        )
    lost = sum(summary(runs)["lost"] for runs in sides.values())
    found.append(f"Check: every thread's messages kept: {'met' if not lost else 'NOT met'}")
    return found


async def run_shape(
    shape: Shape, rounds: int, window_s: float, before: Path | None, granian: bool, stock: Shape
) -> dict[str, Any]:
    names = [OURS, THEIRS] + ([BEFORE] if before is not None else [])
    names += [GRANIAN] if granian else []
    sides: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for index in range(rounds):
        # Turned each round: each side runs first, in the middle and last.
        order = names[index % len(names) :] + names[: index % len(names)]
        for name in order:
            print(f"{shape.label}: round {index + 1}/{rounds}: {name}", flush=True)
            sides[name].append(await measure(name, shape, window_s, before, stock))
    return sides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default="langgraph")
    parser.add_argument("--rounds", type=int, default=None, help="default 5 (--quick: 1)")
    parser.add_argument("--threads", type=int, default=None, help="default 50, then 1")
    parser.add_argument("--steps", type=int, default=None, help="default 20 (--quick: 5)")
    parser.add_argument("--value-bytes", type=int, default=DEFAULT_VALUE_BYTES)
    parser.add_argument(
        "--window",
        type=float,
        default=None,
        help=f"timed seconds a side runs passes for, each round (default {WINDOW_S:g}; --quick: 0,"
        " one pass)",
    )
    parser.add_argument(
        "--before", type=Path, default=None, help="a checkout whose server and client run too"
    )
    parser.add_argument("--head", action="store_true", help="--before this repository's HEAD")
    parser.add_argument(
        "--granian", action="store_true", help="a side of our server on granian instead of uvicorn"
    )
    # A side in a process of its own (the parent runs these).
    parser.add_argument("--side", choices=("ours", "theirs"), help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.side is not None:
        return side_main(arguments)
    steps = arguments.steps or (5 if arguments.quick else 20)
    threads = [arguments.threads] if arguments.threads else ([5] if arguments.quick else [50, 1])
    count = arguments.rounds or (1 if arguments.quick else 5)
    window_s = (
        arguments.window if arguments.window is not None else (0.0 if arguments.quick else WINDOW_S)
    )
    stock_threads, stock_steps = QUICK_STOCK if arguments.quick else STOCK
    stock = Shape(stock_threads, stock_steps, arguments.value_bytes)
    document: dict[str, Any] = {
        "langgraph": version("langgraph"),
        "langgraph-checkpoint-postgres": version("langgraph-checkpoint-postgres"),
        "window_s": window_s,
        "stock": {"threads": stock_threads, "steps": stock_steps},
        "shapes": [],
    }
    tables, checks = [], []
    with contextlib.ExitStack() as stack:
        before = arguments.before
        if before is None and arguments.head:
            before = stack.enter_context(head_checkout())
        for count_of_threads in threads:
            shape = Shape(count_of_threads, steps, arguments.value_bytes)
            sides = asyncio.run(run_shape(shape, count, window_s, before, arguments.granian, stock))
            tables.append(markdown(shape, sides, window_s))
            checks += goals(shape, sides)
            document["shapes"].append(
                {
                    "threads": shape.threads,
                    "steps": shape.steps,
                    "value_bytes": shape.value_bytes,
                    "medians": {name: summary(runs) for name, runs in sides.items()},
                    "rounds": sides,
                }
            )
    text = "\n".join(tables) + "\n" + "\n".join(checks) + "\n"
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(document, indent=2) + "\n")
    (RESULTS / f"{arguments.name}.md").write_text(text)
    lost = any("NOT met" in line for line in checks if line.startswith("Check"))
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
