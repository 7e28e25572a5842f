"""Compacted reads, on both backends: a session of 1,000 events (ADK-sized
turns of text) with a compaction event every 20, read whole and compacted
(`compacted=true`), through the HTTP API of a started server and through
HttpSessionService, as an ADK Runner reads a session each turn.

    python -m bench.compacted_reads            # 1,000 events, 20 reads of each kind
    python -m bench.compacted_reads --events 5000 --every 50
    python -m bench.compacted_reads --quick    # 200 events, 3 reads

Prints, per backend, the bytes of each read and the median time of a read
(the HTTP answer alone, and ADK's Session built from it), and writes
bench/results/compacted_reads.json. Each compacted read is checked: it holds
every compaction event and the events the newest summary covers or that
came after it, and says in its headers how many it left out.
"""

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench import RESULTS
from bench.run import Server, create_database, drop_database, migrate
from session_state_client.adk import HttpSessionService

APP, USER, SESSION = "bench", "u", "compacted"
BASE_TIME = 1_700_000_000.0
PORT = 18951
# About what an ADK turn of a few sentences takes as JSON.
SENTENCE = "The traveller asked about trains from Lisbon to Porto and the fares on Sunday. "


def turn(index: int) -> dict[str, Any]:
    """An ADK event as HttpSessionService sends it: user and model in turn."""
    author, role = ("user", "user") if index % 2 == 0 else ("planner", "model")
    return {
        "id": f"e{index}",
        "invocationId": f"inv-{index // 2}",
        "author": author,
        "timestamp": BASE_TIME + index,
        "content": {"role": role, "parts": [{"text": f"{index}: " + SENTENCE * 8}]},
        "actions": {
            "stateDelta": {},
            "artifactDelta": {},
            "requestedAuthConfigs": {},
            "requestedToolConfirmations": {},
        },
    }


def summary(first: int, last: int) -> dict[str, Any]:
    """The compaction event ADK's summarizer writes for events first..last."""
    content = {"role": "model", "parts": [{"text": f"Summary of turns {first}-{last}. " * 4}]}
    return {
        "id": f"c{last}",
        "invocationId": f"compaction-{last}",
        "author": "user",
        "timestamp": BASE_TIME + last + 0.5,
        "actions": {
            "compaction": {
                "startTimestamp": BASE_TIME + first,
                "endTimestamp": BASE_TIME + last,
                "compactedContent": content,
            }
        },
    }


def history(count: int, every: int) -> list[dict[str, Any]]:
    events = []
    for index in range(count):
        events.append(turn(index))
        if (index + 1) % every == 0:
            events.append(summary(index + 1 - every, index))
    return events


def seed(client: httpx.Client, events: list[dict[str, Any]]) -> None:
    sessions = f"/apps/{APP}/users/{USER}/sessions"
    client.post(sessions, json={"sessionId": SESSION}).raise_for_status()
    for start in range(0, len(events), 500):
        batch = {"events": events[start : start + 500]}
        client.post(f"{sessions}/{SESSION}/events/batch", json=batch).raise_for_status()


def expected_ids(count: int, every: int) -> list[str]:
    """What a compacted read keeps: every summary, and the events from the
    start of the newest summary's range on (the next window re-reads them)."""
    events = history(count, every)
    newest_start = (count // every - 1) * every
    return [
        event["id"]
        for event in events
        if event["id"].startswith("c") or int(event["id"][1:]) >= newest_start
    ]


def http_reads(base_url: str, compacted: bool, reads: int) -> tuple[float, int, httpx.Response]:
    path = f"/apps/{APP}/users/{USER}/sessions/{SESSION}"
    params = {"compacted": "true"} if compacted else {}
    times = []
    with httpx.Client(base_url=base_url, timeout=60) as client:
        client.get(path, params=params).raise_for_status()  # connections and caches warm
        for _ in range(reads):
            started = time.perf_counter()
            answer = client.get(path, params=params)
            times.append(time.perf_counter() - started)
            answer.raise_for_status()
    return statistics.median(times), len(answer.content), answer


async def adk_reads(base_url: str, compacted: bool, reads: int) -> tuple[float, int]:
    service = HttpSessionService(base_url=base_url, compacted_reads=compacted)
    times = []
    try:
        await service.get_session(app_name=APP, user_id=USER, session_id=SESSION)
        for _ in range(reads):
            started = time.perf_counter()
            session = await service.get_session(app_name=APP, user_id=USER, session_id=SESSION)
            times.append(time.perf_counter() - started)
    finally:
        await service.close()
    assert session is not None
    return statistics.median(times), len(session.events)


def measure(base_url: str, count: int, every: int, reads: int) -> dict[str, Any]:
    events = history(count, every)
    with httpx.Client(base_url=base_url, timeout=120) as client:
        seed(client, events)
    figures: dict[str, Any] = {}
    for compacted in (False, True):
        side = "compacted" if compacted else "whole"
        seconds, size, answer = http_reads(base_url, compacted, reads)
        kept = [event["id"] for event in answer.json()["events"]]
        if compacted:
            if kept != expected_ids(count, every):
                raise AssertionError(f"compacted read kept {len(kept)} events: {kept[:5]}...")
            left_out = int(answer.headers["Session-State-Events-Left-Out"])
            if left_out != len(events) - len(kept):
                raise AssertionError(f"left out {left_out}, not {len(events) - len(kept)}")
            figures["events_left_out"] = left_out
            figures["bytes_left_out"] = int(answer.headers["Session-State-Bytes-Left-Out"])
        elif len(kept) != len(events):
            raise AssertionError(f"a whole read gave {len(kept)} of {len(events)} events")
        adk_seconds, adk_events = asyncio.run(adk_reads(base_url, compacted, reads))
        figures[side] = {
            "events": len(kept),
            "bytes": size,
            "http_read_median_ms": seconds * 1000,
            "adk_get_session_median_ms": adk_seconds * 1000,
            "adk_events": adk_events,
        }
    return figures


async def on_postgresql(count: int, every: int, reads: int) -> dict[str, Any]:
    database = await create_database("bench_compacted")
    try:
        migrate(database)
        server = Server(database, PORT, workers=1)
        try:
            return await asyncio.to_thread(measure, server.base_url, count, every, reads)
        finally:
            server.stop()
    finally:
        await drop_database(database)


def on_sqlite(count: int, every: int, reads: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "compacted.db"
        server = Server("", PORT, workers=1, database_url=f"sqlite+aiosqlite:///{path}")
        try:
            return measure(server.base_url, count, every, reads)
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 events, 3 reads of each kind")
    parser.add_argument("--events", type=int, help="default 1,000 (--quick: 200)")
    parser.add_argument("--every", type=int, default=20, help="a compaction every n events")
    parser.add_argument("--reads", type=int, help="default 20 (--quick: 3)")
    parser.add_argument("--name", default="compacted_reads")
    arguments = parser.parse_args()
    count = arguments.events or (200 if arguments.quick else 1_000)
    reads = arguments.reads or (3 if arguments.quick else 20)
    results: dict[str, Any] = {"events": count, "every": arguments.every, "reads": reads}
    results["postgresql"] = asyncio.run(on_postgresql(count, arguments.every, reads))
    results["sqlite"] = on_sqlite(count, arguments.every, reads)
    for backend in ("postgresql", "sqlite"):
        figures = results[backend]
        for side in ("whole", "compacted"):
            side_figures = figures[side]
            print(
                f"{backend:>10} {side:>9}: {side_figures['events']:>5} events,"
                f" {side_figures['bytes']:>9,} bytes,"
                f" HTTP read {side_figures['http_read_median_ms']:.1f} ms,"
                f" ADK get_session {side_figures['adk_get_session_median_ms']:.1f} ms"
            )
        print(
            f"{backend:>10}: left out {figures['events_left_out']} events,"
            f" {figures['bytes_left_out']:,} bytes"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
