"""How many events one page or one erasure transaction takes: the same
choice on both stores, made in Python from the sizes or counts they read."""

from collections.abc import Sequence
from typing import TypeVar

from ..core.errors import ResponseTooLarge

T = TypeVar("T")

# Sessions considered per erasure transaction.
ERASE_CANDIDATES = 100


def events_within(
    sizes: list[tuple[int, int]], limit: int, max_bytes: int
) -> tuple[list[int], bool]:
    """Of up to `limit` + 1 events' (seq, size) in page order, the seqs of a
    page of at most `limit` events and `max_bytes`, and whether more follow.
    ResponseTooLarge if the first event alone is larger (both stores)."""
    more = len(sizes) > limit
    chosen: list[int] = []
    total = 0
    for seq, size in sizes[:limit]:
        total += size
        if total > max_bytes:
            if not chosen:
                raise ResponseTooLarge(
                    f"event {seq} alone is {size} bytes, above the {max_bytes} bytes a "
                    "response may carry (SESSION_STATE_MAX_RESPONSE_BYTES)"
                )
            more = True
            break
        chosen.append(seq)
    return chosen, more


def events_batch(candidates: Sequence[tuple[T, int]], batch_events: int) -> list[T]:
    """Of (session, event count) in erasure order, the sessions of one
    transaction: as many as hold at most `batch_events` events in all, and
    always the first (a bigger session is erased alone, whole)."""
    chosen: list[T] = []
    total = 0
    for session, count in candidates:
        total += count
        if chosen and total > batch_events:
            break
        chosen.append(session)
    return chosen
