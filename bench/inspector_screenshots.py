"""The inspector's screenshots in docs/images/ (docs/inspector.md and the
README show them): `session-state serve` on a fresh SQLite file, a small
made-up travel agent's data (sessions with labels and a title key, events
with tool calls and state across the scopes, memories, a LangGraph thread),
and Debian's headless Chromium at 1280 x 800. Each PNG is reduced to 64
colours (Pillow, which matplotlib of the bench extra brings): a page of flat
colours loses nothing visible, and the four weigh about 100 KiB, not 300.

    python -m bench.inspector_screenshots [--into docs/images]
"""

import argparse
import base64
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import httpx

from tests.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.conftest import ServerProcess

ROOT = Path(__file__).resolve().parent.parent
APP, USER = "travel", "ada"


def _text(author: str, text: str, invocation: str, delta: dict[str, Any] | None = None) -> Any:
    role = "user" if author == "user" else "model"
    event: dict[str, Any] = {
        "author": author,
        "invocationId": invocation,
        "content": {"role": role, "parts": [{"text": text}]},
    }
    if delta:
        event["actions"] = {"stateDelta": delta}
    return event


def _call(name: str, args: dict[str, Any], invocation: str) -> Any:
    return {
        "author": "planner",
        "invocationId": invocation,
        "content": {"role": "model", "parts": [{"functionCall": {"name": name, "args": args}}]},
    }


def _response(name: str, response: dict[str, Any], invocation: str, delta: Any = None) -> Any:
    event: dict[str, Any] = {
        "author": "planner",
        "invocationId": invocation,
        "content": {
            "role": "user",
            "parts": [{"functionResponse": {"name": name, "response": response}}],
        },
    }
    if delta:
        event["actions"] = {"stateDelta": delta}
    return event


def seed(base: str) -> None:
    sessions = f"{base}/apps/{APP}/users/{USER}/sessions"
    events = [
        _text(
            "user",
            "Find me a train from Lisbon to Porto on Friday morning.",
            "inv-1",
            {"title": "Lisbon → Porto", "user:home": "Lisbon", "app:model": "gemini-2.5-flash"},
        ),
        _call("find_trains", {"from": "Lisbon", "to": "Porto", "day": "Friday"}, "inv-1"),
        _response(
            "find_trains",
            {"trains": [{"id": "AP-121", "leaves": "08:39"}, {"id": "IC-523", "leaves": "09:09"}]},
            "inv-1",
            {"candidates": ["AP-121", "IC-523"]},
        ),
        _text("planner", "Two trains: AP-121 at 08:39 and IC-523 at 09:09.", "inv-1"),
        _text("user", "The first one, window seat please.", "inv-2", {"user:seat": "window"}),
        _call("book_train", {"train": "AP-121", "seat": "window"}, "inv-2"),
        _response(
            "book_train",
            {"booking": "PNR-7Q2X", "carriage": 4, "seat": "41"},
            "inv-2",
            {"booking": {"pnr": "PNR-7Q2X", "train": "AP-121"}, "candidates": None},
        ),
        _text(
            "planner",
            "Booked: AP-121, carriage 4, seat 41 (PNR-7Q2X).",
            "inv-2",
            {"title": "Porto, Friday (booked)", "app:bookings_today": 18},
        ),
    ]
    with httpx.Client(timeout=60) as http:
        made = {"sessionId": "trip-porto", "labels": {"env": "prod", "channel": "web"}}
        http.post(sessions, json=made).raise_for_status()
        http.post(f"{sessions}/trip-porto/events/batch", json={"events": events})
        for index, (title, labels) in enumerate(
            [
                ("Hotel in Madrid", {"env": "prod"}),
                ("Refund question", {"env": "prod", "escalated": "yes"}),
                ("Weekend in Seville", {"env": "dev"}),
            ]
        ):
            body = {"sessionId": f"s-{index}", "state": {"title": title}, "labels": labels}
            http.post(sessions, json=body).raise_for_status()
        http.post(f"{base}/apps/{APP}/users/bo/sessions", json={}).raise_for_status()
        http.post(f"{base}/apps/support/users/cy/sessions", json={}).raise_for_status()
        memory = f"{base}/apps/{APP}/users/{USER}/memory"
        http.post(memory, json={"sessionId": "trip-porto"}).raise_for_status()
        entries = [
            {"id": "pref-seat", "content": {"parts": [{"text": "Ada prefers window seats."}]}},
            {"id": "pref-food", "content": {"parts": [{"text": "Vegetarian, no nuts."}]}},
        ]
        http.post(f"{memory}/entries", json={"memories": entries}).raise_for_status()
        thread = f"{base}/apps/{APP}/threads/support-42/checkpoints"

        def encoded(value: Any) -> str:
            return base64.b64encode(json.dumps(value).encode()).decode()

        for step, checkpoint in enumerate(["cp-1", "cp-2", "cp-3"]):
            messages = [{"role": "user", "content": "Where is my refund?"}][: step + 1]
            body = {
                "checkpoint": {"type": "json", "data": encoded({"v": 4, "step": step})},
                "parentCheckpointId": None if step == 0 else f"cp-{step}",
                "metadata": {"source": "loop", "step": step, "run_id": "run-1"},
                "channelVersions": {"messages": str(step + 1)},
                "newValues": [
                    {
                        "channel": "messages",
                        "version": str(step + 1),
                        "type": "json",
                        "data": encoded(messages),
                    }
                ],
            }
            http.put(f"{thread}/{checkpoint}?checkpointNs=", json=body).raise_for_status()
        write = {"taskId": "agent:7", "taskPath": "~__pregel_pull, agent", "idx": 0}
        writes = [{**write, "channel": "messages", "type": "json", "data": encoded(["Checking"])}]
        http.post(f"{thread}/cp-3/writes?checkpointNs=", json={"writes": writes})
        for other, user in [("billing-7", "bo"), ("triage-3", "cy")]:
            body = {
                "checkpoint": {"type": "json", "data": encoded({"v": 4, "step": 0})},
                "metadata": {"source": "input", "step": -1},
                "channelVersions": {},
                "newValues": [],
                "userId": user,
            }
            other_path = f"{base}/apps/{APP}/threads/{other}/checkpoints/cp-1?checkpointNs="
            http.put(other_path, json=body).raise_for_status()


def small(png: bytes, path: Path) -> None:
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    reduced = image.quantize(colors=64, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    reduced.save(path, "PNG", optimize=True)


def shoot(base: str, into: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    route = f"{base}/ui/#/apps/{APP}/users/{USER}"
    shots = {
        "inspector-sessions.png": (f"{route}?title=title", "table.list tr[data-session]"),
        "inspector-session.png": (f"{route}/sessions/trip-porto", ".detail h2"),
        "inspector-memory.png": (f"{route}/memory?q=which+seat+does+ada+like", ".memory"),
        "inspector-threads.png": (f"{base}/ui/#/apps/{APP}/threads", "tr[data-thread]"),
        "inspector-langgraph.png": (f"{base}/ui/#/apps/{APP}/threads/support-42", ".checkpoint"),
    }
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        for name, (url, ready) in shots.items():
            page.goto(url)
            page.locator(ready).first.wait_for(timeout=60_000)
            if name == "inspector-session.png":
                # The booking's event: a tool's answer changing state in two scopes.
                page.locator(".row[data-index='6']").click()
                page.locator(".detail h2", has_text="Event 7").wait_for()
            if name == "inspector-langgraph.png":
                page.locator("article.checkpoint summary", has_text="messages").first.click()
            page.wait_for_timeout(300)
            path = into / name
            small(page.screenshot(), path)
            written.append(path)
        # The same session at phone width: one column, the event below.
        phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True)
        phone.goto(f"{route}/sessions/trip-porto")
        phone.locator(".detail h2").wait_for(timeout=60_000)
        path = into / "inspector-phone.png"
        small(phone.screenshot(), path)
        written.append(path)
        browser.close()
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--into", type=Path, default=ROOT / "docs" / "images")
    arguments = parser.parse_args(argv)
    arguments.into.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        server = ServerProcess(f"sqlite+aiosqlite:///{Path(folder) / 'shots.db'}").start()
        try:
            seed(server.base_url)
            for path in shoot(server.base_url, arguments.into):
                print(f"{path} {path.stat().st_size // 1024} KiB")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
