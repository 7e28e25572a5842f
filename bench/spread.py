"""How steady a side's figure is over alternating rounds, and whether a
difference between two sides is larger than that.

A side's spread is the range over the median: (max - min) / median of the
rounds' figures, the widest any two rounds disagreed. On a machine whose
load drifts over minutes (other work sharing two cores), each side's own
spread measures the machine more than the side; the two sides of one round
ran a few seconds apart, under the same load, so their ratio round by round
is steadier. The verdict is on that ratio: its median over the rounds, and
"within noise" when the rounds disagree on which side is ahead (some ratios
above 1, some below: the difference is smaller than the rounds' spread), or
when there is one round.
"""

import statistics


def spread(values: list[float]) -> float:
    """(max - min) / median; 0 for fewer than two rounds."""
    if len(values) < 2:
        return 0.0
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle else 0.0


def ratios(ours: list[float], theirs: list[float]) -> list[float]:
    """Ours over theirs, round by round (both lists in round order)."""
    return [mine / other for mine, other in zip(ours, theirs, strict=True) if other]


def verdict(ours: list[float], theirs: list[float], higher_is_better: bool = True) -> str:
    """`1.31x (ahead; rounds 1.22-1.40x)` or `0.97x (within noise; ...)`:
    the median of the per-round ratios ours / theirs, and whether it stands
    out of their spread."""
    found = ratios(ours, theirs)
    if not found:
        return "-"
    ratio = statistics.median(found)
    shown = f"{ratio:.2f}x"
    rounds = f"rounds {min(found):.2f}-{max(found):.2f}x" if len(found) > 1 else "one round"
    if len(found) < 2 or min(found) <= 1 <= max(found):
        return f"{shown} (within noise; {rounds})"
    better = ratio > 1 if higher_is_better else ratio < 1
    return f"{shown} ({'ahead' if better else 'behind'}; {rounds})"


def percent(value: float) -> str:
    return f"{value * 100:.1f}%"
