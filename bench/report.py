"""The results as a Markdown table and a PNG chart."""

from pathlib import Path
from typing import Any

ADK, OURS, FLOOR = "adk", "session-state", "asyncpg floor"


def _figure(summary: dict[str, Any], workload: str, target: str, key: str) -> float | None:
    value = summary.get(workload, {}).get(target, {}).get(key)
    return None if value is None else float(value)


def _cell(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _ratio(numerator: float | None, denominator: float | None) -> str:
    if numerator is None or not denominator:
        return "-"
    return f"{numerator / denominator:.2f}x"


def markdown_table(results: dict[str, Any]) -> str:
    summary = results["summary"]
    meta = results["meta"]
    lines = [
        f"Run {meta['date']} ({'quick' if meta['quick'] else 'full'}), "
        f"{meta['cpus']} CPUs, server workers: {meta['server_workers']}; "
        "medians of the repetitions.",
        "",
        "| workload | figure | ADK DatabaseSessionService | session-state (HTTP) | asyncpg floor "
        "| session-state / ADK | session-state / floor |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for workload, by_target in summary.items():
        keys = [key for key in next(iter(by_target.values())) if key != "repetitions"]
        for key in keys:
            adk = _figure(summary, workload, ADK, key)
            ours = _figure(summary, workload, OURS, key)
            floor = _figure(summary, workload, FLOOR, key)
            if key.endswith("_ms"):
                # For latencies the ratio says how many times faster we are.
                versus_adk, versus_floor = _ratio(adk, ours), _ratio(floor, ours)
            elif key == "events_per_s":
                versus_adk, versus_floor = _ratio(ours, adk), _ratio(ours, floor)
            else:
                versus_adk = versus_floor = "-"
            digits = 0 if key in ("events_per_s", "keys_written", "keys_lost", "events_read") else 2
            lines.append(
                f"| {workload} | {key} | {_cell(adk, digits)} | {_cell(ours, digits)} "
                f"| {_cell(floor, digits)} | {versus_adk} | {versus_floor} |"
            )
    return "\n".join(lines) + "\n"


def chart(results: dict[str, Any], path: Path) -> None:
    """Two panels that read on their own: ADK's service against ours (values
    and the ratio on the bars), the asyncpg floor as a reference mark."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = results["summary"]
    meta = results["meta"]
    throughput = ["concurrent_appends", "concurrent_appends_hot_key", "sequential_appends"]
    reads = [name for name in summary if name.startswith("get_")]
    figure, (left, right) = plt.subplots(1, 2, figsize=(14, 5.6))
    _panel(
        left,
        summary,
        throughput,
        "events_per_s",
        title="Appends: events per second (higher is better)",
        unit="events/s",
        higher_is_better=True,
    )
    _panel(
        right,
        summary,
        reads,
        "p50_ms",
        title="get_session: median latency in ms (lower is better)",
        unit="ms",
        higher_is_better=False,
    )
    figure.suptitle(
        "session-state (HTTP) against ADK's DatabaseSessionService, both on PostgreSQL\n"
        f"run {meta['date']}, {meta['cpus']} CPUs, medians of {_repetitions(summary)} "
        "repetitions; the dashed mark is the same work done with bare asyncpg (the floor)",
        fontsize=11,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


_COLOURS = {ADK: "#b0b0b0", OURS: "#1565c0"}
_LABELS = {ADK: "ADK DatabaseSessionService", OURS: "session-state"}


def _panel(
    axes: Any,
    summary: dict[str, Any],
    workloads: list[str],
    key: str,
    *,
    title: str,
    unit: str,
    higher_is_better: bool,
) -> None:
    width = 0.38
    for offset, target in ((-0.5, ADK), (0.5, OURS)):
        values = [_figure(summary, name, target, key) or 0.0 for name in workloads]
        positions = [index + offset * width for index in range(len(workloads))]
        bars = axes.bar(positions, values, width, label=_LABELS[target], color=_COLOURS[target])
        axes.bar_label(bars, labels=[_short(value, unit) for value in values], fontsize=8)
    for index, name in enumerate(workloads):
        floor = _figure(summary, name, FLOOR, key)
        if floor is not None:
            label = "asyncpg floor" if index == 0 else None
            axes.hlines(
                floor, index - width, index + width, colors="#2e7d32", linestyles="--", label=label
            )
        adk, ours = _figure(summary, name, ADK, key), _figure(summary, name, OURS, key)
        if adk and ours:
            ratio = ours / adk if higher_is_better else adk / ours
            axes.annotate(
                f"{ratio:.1f}x faster",
                (index, 0),
                xytext=(0, -28),
                textcoords="offset points",
                ha="center",
                fontweight="bold",
                color=_COLOURS[OURS],
            )
    axes.set_xticks(
        range(len(workloads)),
        [name.replace("get_", "").replace("_", " ") for name in workloads],
        fontsize=8,
    )
    axes.tick_params(axis="x", pad=30)
    axes.set_ylabel(unit)
    axes.set_title(title, fontsize=10)
    axes.set_ylim(top=axes.get_ylim()[1] * 1.2)
    axes.legend(fontsize=8, loc="upper right" if higher_is_better else "upper left")


def _short(value: float, unit: str) -> str:
    if not value:
        return ""
    return f"{value:,.0f}" if value >= 100 else f"{value:.2g}" if value < 1 else f"{value:.1f}"


def _repetitions(summary: dict[str, Any]) -> int:
    counts = [
        by_key.get("repetitions", 0)
        for by_target in summary.values()
        for by_key in by_target.values()
    ]
    return max(counts, default=0)
