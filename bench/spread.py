"""How steady a side's figure is over alternating rounds, and whether a
difference between two sides is larger than that.

The spread is the range over the median: (max - min) / median of the
rounds' figures, the widest any two rounds disagreed. A difference between
two sides' medians smaller than the larger of their spreads is printed as
"within noise": another run could order them the other way.
"""

import statistics


def spread(values: list[float]) -> float:
    """(max - min) / median; 0 for fewer than two rounds."""
    if len(values) < 2:
        return 0.0
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle else 0.0


def verdict(ours: list[float], theirs: list[float], higher_is_better: bool = True) -> str:
    """`1.31x` or `0.92x (within noise)`: ours over theirs by median, and
    whether the difference is inside the rounds' spread."""
    ours_median, theirs_median = statistics.median(ours), statistics.median(theirs)
    ratio = ours_median / theirs_median
    noise = max(spread(ours), spread(theirs))
    shown = f"{ratio:.2f}x"
    if abs(ours_median - theirs_median) / theirs_median < noise:
        return f"{shown} (within noise)"
    better = ratio > 1 if higher_is_better else ratio < 1
    return f"{shown} ({'ahead' if better else 'behind'})"


def percent(value: float) -> str:
    return f"{value * 100:.1f}%"
