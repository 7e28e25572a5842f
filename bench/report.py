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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = results["summary"]
    targets = [ADK, OURS, FLOOR]
    colours = {ADK: "#9e9e9e", OURS: "#1f77b4", FLOOR: "#2ca02c"}
    throughput = ["concurrent_appends", "concurrent_appends_hot_key", "sequential_appends"]
    reads = [name for name in summary if name.startswith("get_")]
    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    width = 0.27
    for offset, target in enumerate(targets):
        values = [_figure(summary, name, target, "events_per_s") or 0 for name in throughput]
        positions = [index + (offset - 1) * width for index in range(len(throughput))]
        left.bar(positions, values, width, label=target, color=colours[target])
        values = [_figure(summary, name, target, "p50_ms") or 0 for name in reads]
        positions = [index + (offset - 1) * width for index in range(len(reads))]
        right.bar(positions, values, width, label=target, color=colours[target])
    left.set_xticks(range(len(throughput)), [name.replace("_", "\n") for name in throughput])
    left.set_ylabel("events/s (higher is better)")
    left.set_title("Appends")
    left.legend()
    right.set_xticks(
        range(len(reads)), [name.replace("get_", "").replace("_", "\n") for name in reads]
    )
    right.set_ylabel("p50 ms (lower is better)")
    right.set_yscale("log")
    right.set_title("get_session")
    figure.suptitle(f"session-state benchmarks, {results['meta']['date']}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
