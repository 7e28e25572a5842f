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
  what it covers past that one's end.

Only events no reader can miss go: ADK builds the same prompts and the same
summaries from what is left (tests/client/test_adk_compacted_reads.py), so
long as a sliding window's overlap is not larger than its interval.
"""

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from . import adk_events
from .adk_events import Document

Interval = tuple[float, float]


@dataclass(frozen=True)
class CompactedEvents:
    """The events kept (JSON texts joined by commas, as stored), and how
    many were left out, with their bytes."""

    events_json: str
    left_out: int
    bytes_left_out: int


def compacted(events_json: str) -> CompactedEvents:
    """The events of a session read (texts joined by commas) as ADK's prompt
    builder and compactors need them."""
    if not events_json:
        return CompactedEvents(events_json, 0, 0)
    events = adk_events.split_events(events_json)
    going = left_out([event.document for event in events])
    if not going:
        return CompactedEvents(events_json, 0, 0)
    kept = ",".join(event.text for index, event in enumerate(events) if index not in going)
    saved = len(events_json.encode()) - len(kept.encode())
    return CompactedEvents(kept, len(going), saved)


def live_indexes(documents: Sequence[Document]) -> set[int]:
    """The events no rewind undid, as ADK's `_apply_rewinds` finds them:
    walking back from the newest, a rewind marker skips every event back to
    the first of the invocation it names (itself included)."""
    first_of: dict[str, int] = {}
    for index, document in enumerate(documents):
        invocation = adk_events.invocation_id(document)
        if invocation is not None:
            first_of.setdefault(invocation, index)
    live: set[int] = set()
    index = len(documents) - 1
    while index >= 0:
        target = adk_events.rewind_target(documents[index])
        if target is None:
            live.add(index)
        else:
            start = first_of.get(target)
            if start is not None and start < index:
                index = start
        index -= 1
    return live


def left_out(documents: Sequence[Document]) -> set[int]:
    """The indexes of the events a compacted read leaves out."""
    live = live_indexes(documents)
    # ADK's root compactors write unscoped compaction events without a branch.
    summaries = [
        index
        for index in sorted(live)
        if adk_events.is_compaction(documents[index])
        and adk_events.isolation_scope(documents[index]) is None
    ]
    ranges = {
        index: found
        for index in summaries
        if (found := adk_events.compaction_range(documents[index])) is not None
    }
    if not ranges:
        return set()
    coverage = _Coverage(documents, ranges)
    kept_from = _reread_from(documents, summaries, ranges)
    named = _first_events_rewinds_name(documents)
    going = {
        index
        for index, document in enumerate(documents)
        if index not in named
        and _may_go(document)
        and adk_events.timestamp(document) < kept_from
        and coverage.covers(document)
    }
    return going - _calls_kept_for_answers(documents, going)


def _may_go(document: Document) -> bool:
    return not (
        adk_events.is_compaction(document)
        or adk_events.acts(document)
        or adk_events.isolation_scope(document) is not None
        or adk_events.error_code(document) is not None
    )


class _Coverage:
    """The timestamps the compaction ranges cover, merged: those of events
    without a branch cover every event; those of a branch, its events."""

    def __init__(self, documents: Sequence[Document], ranges: dict[int, Interval]) -> None:
        by_branch: dict[str | None, list[Interval]] = {}
        for index, interval in ranges.items():
            by_branch.setdefault(adk_events.branch(documents[index]), []).append(interval)
        self.by_branch = {branch: _merged(found) for branch, found in by_branch.items()}

    def covers(self, document: Document) -> bool:
        moment = adk_events.timestamp(document)
        branch = adk_events.branch(document)
        return _inside(self.by_branch.get(None, []), moment) or (
            branch is not None and _inside(self.by_branch.get(branch, []), moment)
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
    documents: Sequence[Document], summaries: list[int], ranges: dict[int, Interval]
) -> float:
    """The time from which events stay for the next sliding-window summary,
    which starts a few invocations back into the newest one's range: the
    newest compaction event (as that compactor picks it: the last with an
    end) and what it covers. A summary starting no later than the one before
    it (a rolling summary replacing it) is re-read only past that one's end.
    Minus infinity (everything stays) for a newest one without a range."""
    newest = next(
        (index for index in reversed(summaries) if adk_events.compaction_end(documents[index])),
        None,
    )
    if newest is None:
        return math.inf
    if newest not in ranges:
        return -math.inf
    start = ranges[newest][0]
    before = [index for index in summaries if index < newest and index in ranges]
    if before and start <= ranges[before[-1]][0]:
        return _just_after(ranges[before[-1]][1])
    return start


def _just_after(moment: float) -> float:
    # Events at the previous end are covered by it; the first after it stays.
    return math.nextafter(moment, math.inf)


def _first_events_rewinds_name(documents: Sequence[Document]) -> set[int]:
    """The first event of each invocation a rewind marker names: where ADK's
    rewind skips back to."""
    targets = {target for document in documents if (target := adk_events.rewind_target(document))}
    firsts: dict[str, int] = {}
    for index, document in enumerate(documents):
        invocation = adk_events.invocation_id(document)
        if invocation in targets and invocation not in firsts:
            firsts[invocation] = index
    return set(firsts.values())


def _calls_kept_for_answers(documents: Sequence[Document], going: set[int]) -> set[int]:
    """The events among `going` that must stay after all: ADK puts back in the
    prompt the function call an answer kept refers to, with that call's other
    answers; every event calling or answering such an id stays, so ADK pairs
    them as it would have (closed over the calls' other ids)."""
    calls = {index: adk_events.function_call_ids(documents[index]) for index in going}
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
