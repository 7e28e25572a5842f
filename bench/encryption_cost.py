"""What encryption at rest costs, through ADK's API: the same server with
SESSION_STATE_ENCRYPTION_KEYS unset and set, each round on a fresh
PostgreSQL database, alternating which goes first, running bench.adk_api's
workload (ADK `Event`s through the client's HttpSessionService, every delta
touching session, `user:`, `app:` and `temp:` keys and one shared `app:`
key), then reading the sessions back (checked: nothing lost).

    python -m bench.encryption_cost              # 50 x 40, 4 alternating rounds
    python -m bench.encryption_cost --quick      # 4 x 10, one round

Prints, per side, the medians of events/s, p50 and p99 latency and the
server's CPU per append (user + system, from /proc), and the on/off ratio;
writes bench/results/<name>.json.
"""

import argparse
import asyncio
import base64
import contextlib
import os
import statistics
import sys
from collections.abc import Iterator
from typing import Any

from bench.adk_api import WARM_UP, AdkApi, Shape, workload
from bench.run import (
    Server,
    create_database,
    drop_database,
    migrate,
    vacuum,
    write_results,
)

FULL = Shape(50, 40)
QUICK = Shape(4, 10)
SIDES = ("off", "on")


@contextlib.contextmanager
def _environment(encrypted: bool) -> Iterator[None]:
    """The server process inherits this process's environment (bench.run.Server)."""
    saved = os.environ.get("SESSION_STATE_ENCRYPTION_KEYS")
    if encrypted:
        key = base64.b64encode(os.urandom(32)).decode()
        os.environ["SESSION_STATE_ENCRYPTION_KEYS"] = f'{{"bench": "{key}"}}'
    else:
        os.environ.pop("SESSION_STATE_ENCRYPTION_KEYS", None)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("SESSION_STATE_ENCRYPTION_KEYS", None)
        else:
            os.environ["SESSION_STATE_ENCRYPTION_KEYS"] = saved


async def measure(side: str, round_index: int, shape: Shape, port: int) -> dict[str, float]:
    from session_state_client.adk import HttpSessionService

    database = await create_database(f"bench_encryption_{side}")
    migrate(database)
    with _environment(side == "on"):
        server = Server(database, port=port, workers=1)
    service = HttpSessionService(base_url=server.base_url)
    target = AdkApi(f"encryption {side}", service, service.close)
    try:
        await workload(target, f"warm-{round_index}", WARM_UP)
        await vacuum(database)
        cpu_before = server.cpu_seconds()
        figures = await workload(target, f"r{round_index}", shape)
        appends = shape.sessions * shape.events
        # The reads back (the checks) fall after the timed window but before
        # this line: counted per append, they are the same on both sides.
        figures["server_cpu_ms_per_append"] = (server.cpu_seconds() - cpu_before) / appends * 1000
        return figures
    finally:
        await target.close()
        server.stop()
        await drop_database(database)


async def run(shape: Shape, rounds: int, port: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    for index in range(rounds):
        order = SIDES if index % 2 == 0 else tuple(reversed(SIDES))
        for side in order:
            figures = await measure(side, index, shape, port)
            runs[side].append(figures)
            shown = ", ".join(f"{key}={value:,.2f}" for key, value in figures.items())
            print(f"round {index + 1}/{rounds} encryption {side}: {shown}", flush=True)
    keys = ("events_per_s", "p50_ms", "p99_ms", "server_cpu_ms_per_append")
    medians = {
        side: {key: statistics.median(figures[key] for figures in runs[side]) for key in keys}
        for side in SIDES
    }
    lost = sum(
        figures["lost_events"] + figures["lost_keys"] + figures["misordered_sessions"]
        for side in SIDES
        for figures in runs[side]
    )
    return {
        "shape": f"{shape.sessions}x{shape.events}",
        "rounds": rounds,
        "runs": runs,
        "medians": medians,
        "on_over_off": {key: medians["on"][key] / medians["off"][key] for key in keys},
        "nothing_lost": lost == 0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="4 x 10, one round")
    parser.add_argument("--rounds", type=int, help="default 4 (--quick: 1)")
    parser.add_argument("--port", type=int, default=18760)
    parser.add_argument("--name", default=None)
    arguments = parser.parse_args(argv)
    shape = QUICK if arguments.quick else FULL
    rounds = arguments.rounds or (1 if arguments.quick else 4)
    results = asyncio.run(run(shape, rounds, arguments.port))
    name = arguments.name or ("encryption_cost_quick" if arguments.quick else "encryption_cost")
    write_results(name, results)
    for key, ratio in results["on_over_off"].items():
        off, on = results["medians"]["off"][key], results["medians"]["on"][key]
        print(f"{key:26} off {off:10.3f}  on {on:10.3f}  on/off {ratio:.3f}")
    print(f"nothing lost: {'met' if results['nothing_lost'] else 'NOT MET'}")
    return 0 if results["nothing_lost"] else 1


if __name__ == "__main__":
    sys.exit(main())
