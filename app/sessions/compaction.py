"""A session's events as ADK's prompt builder uses them once compaction has
summarised some: the events a compaction event covers are left out, the
compaction events and every later event are kept whole.

ADK (`flows/llm_flows/context/_compaction.py`) drops an event whose
timestamp lies in the range of a compaction event it sees (one carrying its
summary, both bounds, and not undone by a rewind). Its other readers of the
history must find what they read, so some covered events stay:

- events whose actions do something (a state or artifact change, a
  transfer, a rewind...): ADK's rewind replays their deltas, its routing
  reads transfers;
- events with an isolation scope or an error code (task agents and aborted
  invocations), and the first event of an invocation a rewind names;
- function calls (and their other responses) answered by an event that is
  kept: ADK puts such calls back in the prompt;
- what the next sliding-window summary reads again to overlap the newest:
  the newest compaction's range, or, when it starts where the one before it
  started (a rolling summary, as the token-threshold compactor writes),
  what it covers past that one's end;
- on request (`keep_invocations`), the newest invocations a summary covers:
  a sliding window whose overlap is larger than its interval starts, while
  the session is young, where the newest summary's range does not show,
  and the caller knows the overlap.

Only events no reader can miss go: ADK builds the same prompts and the same
summaries from what is left (tests/client/test_adk_compacted_reads.py).
"""

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from . import adk_events
from .adk_events import Document, Facts, Interval
from .rewound import first_events, live_indexes


@dataclass(frozen=True)
class CompactedEvents:
    """The events kept (JSON texts joined by commas, as stored), and how
    many were left out, with their bytes."""

    events_json: str
    left_out: int
    bytes_left_out: int


def compacted(events_json: str, keep_invocations: int = 0) -> CompactedEvents:
    """The events of a session read (texts joined by commas) as ADK's prompt
    builder and compactors need them, the newest `keep_invocations`
    invocations a summary covers kept whole."""
    if not events_json:
        return CompactedEvents(events_json, 0, 0)
    events = adk_events.split_events(events_json)
    going = left_out([event.document for event in events], keep_invocations)
    if not going:
        return CompactedEvents(events_json, 0, 0)
    kept = ",".join(event.text for index, event in enumerate(events) if index not in going)
    saved = len(events_json.encode()) - len(kept.encode())
    return CompactedEvents(kept, len(going), saved)


def left_out(documents: Sequence[Document], keep_invocations: int = 0) -> set[int]:
    """The indexes of the events a compacted read leaves out."""
    events = [adk_events.facts(document) for document in documents]
    first_of = first_events([event.invocation for event in events])
    live = live_indexes([event.rewind_target for event in events], first_of)
    # ADK's root compactors write unscoped compaction events without a branch.
    summaries = [
        index for index in sorted(live) if events[index].is_compaction and not events[index].scoped
    ]
    ranges = {
        index: found for index in summaries if (found := events[index].compaction_range) is not None
    }
    if not ranges:
        return set()
    coverage = _Coverage(events, ranges)
    kept_from = _reread_from(events, summaries, ranges)
    kept_after = _newest_covered_invocations_from(events, live, summaries, keep_invocations)
    # Where ADK's rewind skips back to: the first event of each invocation a marker names.
    named = {
        first_of[event.rewind_target]
        for event in events
        if event.rewind_target is not None and event.rewind_target in first_of
    }
    going = {
        index
        for index, event in enumerate(events)
        if not (event.is_compaction or event.acts or event.scoped)
        and event.timestamp < kept_from
        and index < kept_after
        and index not in named
        and coverage.covers(event)
    }
    return going - _calls_kept_for_answers(documents, going)


class _Coverage:
    """The timestamps the compaction ranges cover, merged: those of events
    without a branch cover every event; those of a branch, its events."""

    def __init__(self, events: Sequence[Facts], ranges: dict[int, Interval]) -> None:
        by_branch: dict[str | None, list[Interval]] = {}
        for index, interval in ranges.items():
            by_branch.setdefault(events[index].branch, []).append(interval)
        self.by_branch = {branch: _merged(found) for branch, found in by_branch.items()}
        self.everywhere = self.by_branch.get(None, [])

    def covers(self, event: Facts) -> bool:
        if _inside(self.everywhere, event.timestamp):
            return True
        return event.branch is not None and _inside(
            self.by_branch.get(event.branch, []), event.timestamp
        )


def _merged(intervals: list[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for start, end in sorted(interval for interval in intervals if interval[0] <= interval[1]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _inside(merged: list[Interval], moment: float) -> bool:
    position = bisect.bisect_right(merged, (moment, math.inf)) - 1
    return position >= 0 and merged[position][0] <= moment <= merged[position][1]


def _reread_from(
    events: Sequence[Facts], summaries: list[int], ranges: dict[int, Interval]
) -> float:
    """The time from which events stay for the next sliding-window summary,
    which starts a few invocations back into the newest one's range: the
    newest compaction event (as that compactor picks it: the last with an
    end) and what it covers. A summary starting no later than the one before
    it (a rolling summary replacing it) is re-read only past that one's end.
    Minus infinity (everything stays) for a newest one without a range."""
    newest = next((index for index in reversed(summaries) if events[index].compaction_end), None)
    if newest is None:
        return math.inf
    if newest not in ranges:
        return -math.inf
    start = ranges[newest][0]
    before = [index for index in summaries if index < newest and index in ranges]
    if before and start <= ranges[before[-1]][0]:
        # Events at the previous end are covered by it; the first after it stays.
        return math.nextafter(ranges[before[-1]][1], math.inf)
    return start


def _newest_covered_invocations_from(
    events: Sequence[Facts], live: set[int], summaries: list[int], count: int
) -> int:
    """The index from which every event stays so that the newest `count`
    invocations the newest summary reaches are whole: where ADK's sliding
    window starts its next summary when `count` is its overlap. As that
    compactor counts them: the invocations of live events that are not
    summaries, in order of first appearance, those whose last event is no
    later than the newest summary's end; the window runs from the first
    event of the earliest one counted."""
    if count <= 0:
        return len(events)
    newest = next((index for index in reversed(summaries) if events[index].compaction_end), None)
    if newest is None:
        return len(events)
    end = events[newest].compaction_end
    assert end is not None
    first_index: dict[str, int] = {}
    last_moment: dict[str, float] = {}
    for index in sorted(live):
        event = events[index]
        if event.invocation is None or event.is_compaction:
            continue
        first_index.setdefault(event.invocation, index)
        last_moment[event.invocation] = max(
            last_moment.get(event.invocation, -math.inf), event.timestamp
        )
    reached = [invocation for invocation in first_index if last_moment[invocation] <= end]
    if not reached:
        return len(events)
    return first_index[reached[max(0, len(reached) - count)]]


def _calls_kept_for_answers(documents: Sequence[Document], going: set[int]) -> set[int]:
    """The events among `going` that must stay after all: ADK puts back in the
    prompt the function call an answer kept refers to, with that call's other
    answers; every event calling or answering such an id stays, so ADK pairs
    them as it would have (closed over the calls' other ids)."""
    calls = {index: adk_events.function_call_ids(documents[index]) for index in going}
    if not any(calls.values()):
        return set()
    answers = {index: adk_events.function_response_ids(documents[index]) for index in going}
    wanted: set[str] = set()
    for index, document in enumerate(documents):
        if index not in going:
            wanted |= adk_events.function_response_ids(document)
    staying: set[int] = set()
    while True:
        found = {
            index for index in going - staying if calls[index] & wanted or answers[index] & wanted
        }
        if not found:
            return staying
        staying |= found
        for index in found:
            wanted |= calls[index]
