"""A program whose OS threads each run event loops of their own over one
client object (as a sync caller's threads do), run in a process of its own
in Python's development mode: it must end cleanly, report no failure, and
leave no unclosed connection, unawaited coroutine or destroyed task."""

import asyncio
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any


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


def on_threads_and_loops(
    coroutine_for: Callable[[int, int], Coroutine[Any, Any, None]],
    threads: int = 4,
    loops: int = 2,
) -> None:
    """For a program: `threads` OS threads at once, each running `loops`
    event loops one after the other (`asyncio.run`), each loop awaiting
    `coroutine_for(thread, loop)` for at most 60 s."""

    def worker(thread: int) -> None:
        for loop in range(loops):
            asyncio.run(asyncio.wait_for(coroutine_for(thread, loop), 60))

    started = [threading.Thread(target=worker, args=(number,)) for number in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
