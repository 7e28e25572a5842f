"""Hostile bodies for the memory writes (events and entries), on both
backends: each gets a clear 4xx, large bodies are taken in batches, and a
search response stays within its byte budget however large the contents
written are."""

import httpx
import pytest

from session_state.core.config import Settings
from session_state.main import create_app

MEMORY = "/apps/assistant/users/ann/memory"


def _event(text: str, event_id: str | None = None, **fields):
    event = {"author": "user", "content": {"parts": [{"text": text}]}, **fields}
    if event_id is not None:
        event["id"] = event_id
    return event


async def test_an_event_without_id_or_timestamp_sent_twice_is_one_memory(client):
    # Its id is a hash of what was sent, not of the time the server gave it.
    for _ in range(2):
        await client.post(f"{MEMORY}/events", json={"events": [_event("Lighthouses blink.")]})
    found = await client.get(MEMORY, params={"query": "lighthouses"})
    assert len(found.json()["memories"]) == 1


@pytest.mark.parametrize(
    ("event", "where"),
    [
        (_event("x", timestamp="1700000000"), ["timestamp"]),
        (_event("x", timestamp=True), ["timestamp"]),
        (_event("x", timestamp=1e300), ["timestamp"]),
        (_event("x", author=5), ["author"]),
        ({"author": "a", "content": "text"}, ["content"]),
        (_event("a\u0000b"), ["content", "parts", 0, "text"]),
    ],
)
async def test_event_values_memory_cannot_keep_are_422_naming_the_field(client, event, where):
    response = await client.post(f"{MEMORY}/events", json={"events": [_event("fine"), event]})
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["loc"] == ["body", "events", 1, *where]


@pytest.mark.parametrize("suffix", ["events", "entries"])
async def test_malformed_deep_and_huge_bodies_are_4xx(client, suffix):
    path = f"{MEMORY}/{suffix}"
    malformed = await client.post(path, content=b'{"events": [')
    assert malformed.status_code == 400
    deep = await client.post(path, content=b'{"events": ' + b"[" * 5000 + b"]" * 5000 + b"}")
    assert deep.status_code == 422
    huge = await client.post(path, content=b" " * (9 * 1024 * 1024))
    assert huge.status_code == 413
    assert huge.json()["code"] == "payload_too_large"


async def test_thousands_of_events_in_one_body_are_all_taken(client):
    events = [_event(f"Firefly number {index} glows.", f"f{index}") for index in range(3000)]
    body = {"sessionId": "big", "events": events}
    assert (await client.post(f"{MEMORY}/events", json=body)).json() == {"memoriesAdded": 3000}
    assert (await client.post(f"{MEMORY}/events", json=body)).json() == {"memoriesAdded": 0}


async def test_search_counts_whole_contents_against_the_response_budget(database_url):
    # 70,000 bytes less 65,536 of overhead: room for about 4.4 KB of memories.
    settings = Settings(
        database_url=database_url,
        max_event_bytes=1024,
        max_state_bytes=1024,
        max_response_bytes=70_000,
    )
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http,
    ):
        bulky = {"inlineData": {"mimeType": "image/png", "data": "A" * 3000}}
        events = [
            {"id": f"b{index}", "author": "u", "content": {"parts": [{"text": "zebra"}, bulky]}}
            for index in range(3)
        ]
        await http.post(f"{MEMORY}/events", json={"events": events})
        response = await http.get(MEMORY, params={"query": "zebra"})
        assert response.status_code == 200
        assert len(response.json()["memories"]) == 1
