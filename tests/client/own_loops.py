"""A program whose OS threads each run event loops of their own over one
client object (as a sync caller's threads do), run in a process of its own
in Python's development mode: it must end cleanly, report no failure, and
leave no unclosed connection, unawaited coroutine or destroyed task."""

import subprocess
import sys


def runs_cleanly(program: str, *arguments: str) -> None:
    """`program` prints "failures: [...]" then "done"."""
    finished = subprocess.run(
        [sys.executable, "-W", "always", "-X", "dev", "-c", program, *arguments],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.splitlines() == ["failures: []", "done"], finished.stdout
    for problem in ("Unclosed", "never awaited", "Task was destroyed", "Traceback"):
        assert problem not in finished.stderr, finished.stderr
