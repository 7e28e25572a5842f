"""Which events of a session a rewind undid, as ADK's `_apply_rewinds` finds
them: walking back from the newest, a rewind marker skips every event back
to the first of the invocation it names (itself included). ADK's prompt
builder, its compactors and its memory services (2.15) read only the events
left."""

from collections.abc import Mapping, Sequence


def first_events(invocations: Sequence[str | None]) -> dict[str, int]:
    """The index of each invocation's first event."""
    first_of: dict[str, int] = {}
    for index, invocation in enumerate(invocations):
        if invocation:
            first_of.setdefault(invocation, index)
    return first_of


def live_indexes(rewind_targets: Sequence[str | None], first_of: Mapping[str, int]) -> set[int]:
    """The indexes of the events no rewind undid; `rewind_targets` holds,
    for each event, the invocation it rewinds to before (None: not a
    rewind marker)."""
    live: set[int] = set()
    index = len(rewind_targets) - 1
    while index >= 0:
        target = rewind_targets[index]
        if target is None:
            live.add(index)
        else:
            start = first_of.get(target)
            if start is not None and start < index:
                index = start
        index -= 1
    return live
