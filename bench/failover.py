"""The failover scenario, long: tests/test_failover.py (a real Patroni cluster,
two `session-state serve` processes, writers retrying the same event on a
503) with its faults repeated, and the gaps it measures collected.

    python -m bench.failover              # 5 rounds of switchover, crash, rejoin
    python -m bench.failover --rounds 2
    python -m bench.failover --quick      # 1 round

CI runs the same test with one round. Each fault's longest gap without an
acknowledged append and the time until each server acknowledges again are
read off the test's printed lines; the test's own assertions (nothing
acknowledged lost or duplicated, no 5xx but 503) hold in every round, or the
run fails. Writes bench/results/<name>.json.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from bench import RESULTS

ROOT = Path(__file__).parent.parent
# "crash: server 0: longest gap 10.21 s, acknowledging again 10.48 s after the fault; ..."
FAULT_LINE = re.compile(r"^(switchover|crash|rejoin): (.*)$", re.M)
SERVER_PART = re.compile(
    r"server (\d+): longest gap ([\d.]+) s, acknowledging again ([\d.inf]+) s after the fault"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one round")
    parser.add_argument("--rounds", type=int, help="default 5 (--quick: 1)")
    parser.add_argument("--name", default="failover")
    arguments = parser.parse_args()
    arguments.rounds = arguments.rounds or (1 if arguments.quick else 5)
    env = {**os.environ, "CI": "true", "SESSION_STATE_TEST_FAILOVER_ROUNDS": str(arguments.rounds)}
    command = [sys.executable, "-m", "pytest", "-n", "0", "-rP", "-q", "tests/test_failover.py"]
    finished = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    print(finished.stdout[-4000:])
    if finished.returncode != 0:
        sys.exit(f"the failover test failed (exit {finished.returncode}): see above")
    gaps: dict[str, list[float]] = defaultdict(list)
    back: dict[str, list[float]] = defaultdict(list)
    for fault, parts in FAULT_LINE.findall(finished.stdout):
        for _server, gap, again in SERVER_PART.findall(parts):
            gaps[fault].append(float(gap))
            back[fault].append(float(again))
    if not gaps:
        sys.exit("no fault measured: the failover test was skipped (see above)")
    summary = {
        "what": "longest gap without an acknowledged append, and time until a server "
        "acknowledges again, per fault and server, seconds",
        "rounds": arguments.rounds,
        "faults": {
            fault: {
                "gap_median": round(statistics.median(values), 2),
                "gap_max": round(max(values), 2),
                "acknowledging_again_median": round(statistics.median(back[fault]), 2),
                "acknowledging_again_max": round(max(back[fault]), 2),
                "samples": len(values),
            }
            for fault, values in gaps.items()
        },
    }
    print(json.dumps(summary["faults"], indent=2))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
