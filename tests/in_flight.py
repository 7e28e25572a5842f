"""Evidence that a scenario test's requests really ran at once: each request
is timed around the real HTTP call, and the test asserts the intervals
overlapped (a test that passes with its requests serialized proves nothing
about the race it names)."""

import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


@dataclass
class InFlight:
    """The requests timed so far, each as (start, end, target)."""

    intervals: list[tuple[float, float, str]] = field(default_factory=list)

    async def time(self, request: Awaitable[T], target: str = "") -> T:
        """Awaits `request`, noting when it was in flight; `target` names the
        server (or role) it went to."""
        start = time.monotonic()
        try:
            return await request
        finally:
            self.intervals.append((start, time.monotonic(), target))

    def most_at_once(self) -> int:
        """The most requests in flight at one moment."""
        edges = sorted(
            [(start, 1) for start, _, _ in self.intervals]
            + [(end, -1) for _, end, _ in self.intervals]
        )
        now = most = 0
        for _, step in edges:  # an end sorts before a start at the same moment
            now += step
            most = max(most, now)
        return most

    def overlapped_across(self, first: str, second: str) -> bool:
        """Whether a request to `first` was in flight while one to `second` was."""
        ones = [(start, end) for start, end, target in self.intervals if target == first]
        others = [(start, end) for start, end, target in self.intervals if target == second]
        return any(a < d and c < b for a, b in ones for c, d in others)

    def clear(self) -> None:
        self.intervals.clear()
