"""Every benchmark's quick run, one after the other, each in a process of its
own: small sizes and one repetition, but every side of each comparison and
every check (nothing lost, every goal printed as met or not met). A smoke
run: the figures mean little at these sizes.

    python -m bench.quick                      # all of them (CI)
    python -m bench.quick --only fork,labels   # some

Each writes its figures to bench/results/ci/ (BENCH_RESULTS; not committed,
so the committed full runs stay as they are), and its output to
bench/results/ci/<benchmark>.log. Prints one line per benchmark (seconds,
ok or FAILED, the CPU its processes used, the load average as it started,
its goals and checks), and exits non-zero if any failed.
"""

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench import RESULTS

ROOT = Path(__file__).resolve().parent.parent

# Each benchmark module and the arguments of its quick run, in the order run.
BENCHMARKS: dict[str, tuple[str, ...]] = {
    "run": ("--quick",),  # bench.adk_api's workloads run inside it
    "openai_sessions": ("--quick",),
    "langgraph": ("--quick",),
    "adk_client_cpu": ("--quick",),
    "adk_threads": ("--quick",),
    "adk_before_after": ("--quick",),  # against HEAD (git archive)
    "before_after": ("--quick",),  # against HEAD
    "append_coalescing": ("--quick",),  # with HEAD's coalescer as before
    "append_plans": ("--quick",),
    "capacity": ("--quick",),
    "client_cpu": ("--quick",),  # HEAD's client as the baseline
    "pool_choice": ("--quick",),
    "server_choice": ("--quick",),  # uvicorn against granian, the same app
    "fork": ("--quick",),
    "compacted_reads": ("--quick",),
    "encryption_cost": ("--quick",),
    "import_speed": ("--quick",),
    "labels": ("--quick",),
    "app_checkpoints": ("--quick",),  # LangGraph's list(None) beside a thread's list
    "memory_search": ("--quick",),  # against HEAD
    "memory_relevance": ("--quick",),  # against HEAD
    "relevance_candidates": ("--quick",),  # the labelled set's tuning part only
    "embedder_candidates": ("--quick",),  # those not installed are skipped, named
    "streams": ("--quick",),
    "inspector_open": ("--quick",),  # Debian's chromium
    "replica_reads": ("--quick",),
    "failover": ("--quick",),
    "token_checks": ("--quick",),
    "machine_noise": ("--quick",),
    "delta_history": ("--quick",),  # LangGraph's DeltaChannel, against AsyncPostgresSaver
}
# Benchmarks whose quick run is another's part: module -> the one running it.
INSIDE = {"adk_api": "run"}
# Modules under bench/ that are no benchmark.
HELPERS = {
    "__init__": "the package",
    "events": "the events and deltas every target gets",
    "process_cpu": "CPU per process over a timed window",
    "quick": "this runner",
    "report": "bench.run's table and chart",
    "seed": "bulk seeding with SQL",
    "inspector_screenshots": "docs/images/inspector-*.png, taken for the docs",
    "spread": "rounds' spread and 'within noise'",
    "targets": "bench.run's targets",
}
# Output lines shown under a benchmark's summary line.
SHOWN = (" met", "NOT met", "Goal", "Check")


def left_out(name: str) -> str | None:
    """Why this benchmark cannot run on this machine, or None."""
    if name == "failover":
        from tests.ha_cluster import missing_tools

        return missing_tools()
    return None


def _children_cpu() -> float:
    """User + system CPU of the finished benchmarks and what they waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_one(name: str, arguments: tuple[str, ...], results: Path, timeout: float) -> bool:
    log = results / f"{name}.log"
    env = {**os.environ, "BENCH_RESULTS": str(results)}
    command = [sys.executable, "-m", f"bench.{name}", *arguments]
    started, load, cpu = time.perf_counter(), os.getloadavg()[0], _children_cpu()
    with log.open("w") as output:
        try:
            code = subprocess.run(
                command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, timeout=timeout
            ).returncode
        except subprocess.TimeoutExpired:
            code = None
    seconds, cpu = time.perf_counter() - started, _children_cpu() - cpu
    text = log.read_text(errors="replace")
    if code == 0:
        outcome = "ok"
    elif code is None:
        outcome = f"FAILED (over {timeout:.0f} s)"
    else:
        outcome = f"FAILED (exit {code})"
    # The load average as it started, and the CPU its processes used (not
    # PostgreSQL's): on a shared machine the seconds vary with the load.
    print(
        f"{name:20} {seconds:7.1f} s  {outcome:20} (CPU {cpu:5.1f} s, load {load:4.1f})",
        flush=True,
    )
    for line in text.splitlines():
        if any(word in line for word in SHOWN):
            print(f"    {line.strip()}")
    if code != 0:
        print("    " + "\n    ".join(text.splitlines()[-30:]))
        print(f"    (all of it in {log.relative_to(ROOT) if log.is_relative_to(ROOT) else log})")
    sys.stdout.flush()
    return code == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", help="these benchmarks, by commas")
    parser.add_argument(
        "--results",
        type=Path,
        default=RESULTS / "ci",
        help="where the figures and logs go (default bench/results/ci)",
    )
    parser.add_argument("--timeout", type=float, default=600, help="seconds per benchmark")
    arguments = parser.parse_args(argv)
    names = arguments.only.split(",") if arguments.only else list(BENCHMARKS)
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        parser.error(f"no quick run for {', '.join(unknown)} (known: {', '.join(BENCHMARKS)})")
    results = arguments.results.resolve()
    results.mkdir(parents=True, exist_ok=True)
    for name, runner in INSIDE.items():
        print(f"{name:20} runs inside bench.{runner}")
    failed, started = [], time.perf_counter()
    for name in names:
        reason = left_out(name)
        if reason is not None:
            print(f"{name:20}    left out: {reason}", flush=True)
            continue
        if not run_one(name, BENCHMARKS[name], results, arguments.timeout):
            failed.append(name)
    total = time.perf_counter() - started
    verdict = f"{len(failed)} FAILED: {', '.join(failed)}" if failed else "all ok"
    print(f"{len(names)} benchmarks in {total:.0f} s, {verdict}; figures in {results}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
