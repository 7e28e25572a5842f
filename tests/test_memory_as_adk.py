"""Memory written as ADK 2.13's BaseMemoryService writes it, over HTTP on both
backends: events sent (add_events_to_memory), entries written directly
(add_memory), one memory deleted (delete_memory), and blank questions."""

import asyncio
import json

import pytest

USER = "/apps/assistant/users/ann"
MEMORY = f"{USER}/memory"


def _event(event_id: str | None, text: str, **fields):
    event = {
        "author": "user",
        "timestamp": 1_700_000_000.5,
        "content": {"role": "user", "parts": [{"text": text}]},
        **fields,
    }
    if event_id is not None:
        event["id"] = event_id
    return event


async def _add_events(client, events, session_id: str | None = "s1", path: str = MEMORY):
    body = {"events": events} | ({"sessionId": session_id} if session_id else {})
    response = await client.post(f"{path}/events", json=body)
    assert response.status_code == 200, response.text
    return response.json()["memoriesAdded"]


async def _search(client, query: str, path: str = MEMORY):
    response = await client.get(path, params={"query": query})
    assert response.status_code == 200, response.text
    return response.json()["memories"]


async def test_events_are_taken_once_per_session_and_id(client):
    events = [_event("e1", "I booked a flight to Lisbon"), _event("e2", "The hotel is in Alfama")]
    assert await _add_events(client, events) == 2
    assert await _add_events(client, events) == 0
    assert await _add_events(client, [*events, _event("e3", "Dinner at eight")]) == 1
    # The same event id in another session is another memory.
    assert await _add_events(client, events[:1], session_id="s2") == 1
    found = await _search(client, "Lisbon flight")
    assert {memory["customMetadata"].get("sessionId") for memory in found} == {"s1", "s2"}


async def test_a_memory_comes_back_with_its_content_as_sent(client):
    call = {"functionCall": {"name": "book", "args": {"city": "Porto"}}}
    event = _event("e1", "Booking Porto now", invocationId="inv-1")
    event["content"]["parts"].append(call)
    await _add_events(client, [event])
    (memory,) = await _search(client, "Porto")
    assert memory["id"] == "e1"
    assert memory["author"] == "user"
    assert memory["timestamp"] == "2023-11-14T22:13:20.500000+00:00"
    assert memory["content"] == {"role": "user", "parts": [{"text": "Booking Porto now"}, call]}
    assert memory["customMetadata"] == {"sessionId": "s1"}


async def test_events_without_text_or_session_or_id(client):
    no_text = {"author": "model", "content": {"parts": [{"functionCall": {"name": "f"}}]}}
    assert await _add_events(client, [no_text, {"author": "model"}]) == 0
    # No session: the events share one bucket; no id: a hash of the event,
    # so the same event sent twice is one memory.
    anonymous = _event(None, "Remember the blue umbrella")
    assert await _add_events(client, [anonymous], session_id=None) == 1
    assert await _add_events(client, [anonymous], session_id=None) == 0
    (memory,) = await _search(client, "umbrella")
    assert memory["customMetadata"] == {}
    assert len(memory["id"]) == 32


async def test_entries_written_directly_keep_id_metadata_and_time(client):
    response = await client.post(
        f"{MEMORY}/entries",
        json={
            "memories": [
                {
                    "id": "fact-1",
                    "author": "curator",
                    "timestamp": "2024-05-01T10:00:00Z",
                    "content": {"parts": [{"text": "Ann is allergic to peanuts"}]},
                    "customMetadata": {"source": "intake form", "confidence": 0.9},
                },
                {"content": {"role": "user", "parts": [{"text": "Ann prefers aisle seats"}]}},
            ],
            "customMetadata": {"ttl": "30d"},
        },
    )
    assert response.status_code == 200, response.text
    first, second = response.json()["memoryIds"]
    assert first == "fact-1" and len(second) == 32
    (memory,) = await _search(client, "peanuts")
    # How the search found it (beside ADK's fields: tests/test_memory_matched_by.py).
    assert memory.pop("matchedBy") in {"keyword", "both"}
    assert isinstance(memory.pop("score"), float)
    assert memory == {
        "id": "fact-1",
        "author": "curator",
        "timestamp": "2024-05-01T10:00:00+00:00",
        "content": {"parts": [{"text": "Ann is allergic to peanuts"}]},
        "customMetadata": {"source": "intake form", "confidence": 0.9},
    }
    assert (await _search(client, "aisle"))[0]["id"] == second


async def test_an_entry_written_again_replaces_it(client):
    for text in ("Ann lives in Lyon", "Ann moved to Nantes"):
        entry = {"id": "home", "content": {"parts": [{"text": text}]}}
        response = await client.post(f"{MEMORY}/entries", json={"memories": [entry]})
        assert response.status_code == 200
    assert await _search(client, "Lyon") == []
    assert [m["content"]["parts"][0]["text"] for m in await _search(client, "Nantes")] == [
        "Ann moved to Nantes"
    ]


@pytest.mark.parametrize(
    ("entry", "where"),
    [
        ({"content": {"parts": [{"functionCall": {"name": "f"}}]}}, "content"),
        ({"content": {"parts": [{"text": "x"}]}, "timestamp": "yesterday"}, "timestamp"),
        ({"content": {"parts": [{"text": "x"}]}, "timestamp": "10000-01-01T00:00:00"}, "timestamp"),
        ({"content": {"parts": [{"text": "x"}]}, "id": "x" * 129}, "id"),
        ({"content": "not an object"}, "content"),
        ({}, "content"),
    ],
)
async def test_bad_entries_are_422_and_nothing_is_written(client, entry, where):
    good = {"id": "kept-out", "content": {"parts": [{"text": "ostrich"}]}}
    response = await client.post(f"{MEMORY}/entries", json={"memories": [good, entry]})
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["loc"][:4] == ["body", "memories", 1, where]
    assert await _search(client, "ostrich") == []


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"events": "not a list"},
        {"events": ["not an object"]},
        {"events": [{"id": 7, "content": {"parts": [{"text": "x"}]}}]},
        {"events": [{"timestamp": -1, "content": {"parts": [{"text": "x"}]}}]},
        {"events": [], "sessionId": " padded "},
    ],
)
async def test_bad_event_bodies_are_422(client, body):
    response = await client.post(f"{MEMORY}/events", json=body)
    assert response.status_code == 422, response.text


async def test_a_deleted_memory_does_not_come_back_with_its_session(client):
    events = [_event("e1", "My passport number ends in 42"), _event("e2", "Passport renewed")]
    await _add_events(client, events, session_id="s1")
    await _add_events(client, events[:1], session_id="s2")
    response = await client.delete(f"{MEMORY}/e1")
    assert response.status_code == 204
    # Gone from every session that held it, and not taken again.
    assert [m["id"] for m in await _search(client, "passport")] == ["e2"]
    assert await _add_events(client, events, session_id="s1") == 0
    assert await _add_events(client, events[:1], session_id="s3") == 0
    assert [m["id"] for m in await _search(client, "passport")] == ["e2"]
    # An entry written directly with that id is an explicit write: it is kept.
    entry = {"id": "e1", "content": {"parts": [{"text": "Passport kept at home"}]}}
    await client.post(f"{MEMORY}/entries", json={"memories": [entry]})
    assert sorted(m["id"] for m in await _search(client, "passport")) == ["e1", "e2"]


async def test_a_deleted_memory_is_not_taken_again_from_a_stored_session(client):
    await client.post(f"{USER}/sessions", json={"sessionId": "trip"})
    created = await client.post(
        f"{USER}/sessions/trip/events", json=_event("e1", "Gate B12 at noon")
    )
    assert created.status_code == 201
    await client.post(MEMORY, json={"sessionId": "trip"})
    await client.delete(f"{MEMORY}/e1")
    again = await client.post(MEMORY, json={"sessionId": "trip"})
    assert again.json()["memoriesAdded"] == 0
    assert await _search(client, "gate") == []


async def test_deleting_an_unknown_memory_is_a_no_op(client):
    assert (await client.delete(f"{MEMORY}/never-stored")).status_code == 204
    # And it does not stop a later add of that id.
    assert await _add_events(client, [_event("never-stored", "Kiwi")]) == 1


async def test_a_memory_id_may_hold_any_text(client):
    await _add_events(client, [_event("a/b %41", "Tangerine")])
    assert (await client.delete(f"{MEMORY}/a%2Fb%20%2541")).status_code == 204
    assert await _search(client, "tangerine") == []


async def test_forgetting_the_user_forgets_the_deleted_ids_too(client):
    await _add_events(client, [_event("e1", "Walrus")])
    await client.delete(f"{MEMORY}/e1")
    assert (await client.delete(MEMORY)).status_code == 204
    # A fresh start: the session added again is taken whole.
    assert await _add_events(client, [_event("e1", "Walrus")]) == 1


@pytest.mark.parametrize("query", ["", " ", "\t\n"])
async def test_an_empty_or_blank_question_finds_nothing(client, query):
    await _add_events(client, [_event("e1", "anything at all")])
    assert await _search(client, query) == []


async def test_concurrent_adds_of_the_same_events_store_each_once(client):
    events = [_event(f"e{index}", f"fact number {index} about otters") for index in range(40)]
    answers = await asyncio.gather(
        *(
            client.post(f"{MEMORY}/events", json={"events": events, "sessionId": "s"})
            for _ in range(8)
        )
    )
    assert all(answer.status_code == 200 for answer in answers), [a.text for a in answers]
    assert sum(answer.json()["memoriesAdded"] for answer in answers) == 40
    found = await client.get(MEMORY, params={"query": "otters", "limit": 100})
    assert len(found.json()["memories"]) == 40


async def test_a_delete_racing_a_re_add_never_leaves_the_memory(client):
    """Whichever runs first, the memory existed before both: the delete takes
    it and remembers its id, and the add then skips it."""
    for round_number in range(15):
        event = _event(f"race-{round_number}", f"heron sighting {round_number}")
        await _add_events(client, [event])
        deleted, added = await asyncio.gather(
            client.delete(f"{MEMORY}/race-{round_number}"),
            client.post(f"{MEMORY}/events", json={"events": [event], "sessionId": "s1"}),
        )
        assert deleted.status_code == 204 and added.status_code == 200
        found = await client.get(MEMORY, params={"query": f"heron {round_number}", "limit": 100})
        assert f"race-{round_number}" not in [m["id"] for m in found.json()["memories"]]


@pytest.mark.parametrize("memory_id", ["a\nb", "nul\x00", "\x7f", "x" * 129, "\ud800"])
async def test_a_memory_id_no_path_could_name_is_refused_in_bodies(client, memory_id):
    """A memory is deleted by its id in the path, whose rule (no control
    characters, 1-128 characters) the bodies keep too: an id stored from a
    body but refused in a path could never be deleted."""
    text = {"parts": [{"text": "lynx"}]}
    event = {"id": memory_id, "author": "user", "content": text}
    sent = await client.post(
        f"{MEMORY}/events",
        content=json.dumps({"events": [event]}),
        headers={"Content-Type": "application/json"},
    )
    assert sent.status_code == 422, sent.text
    entry = await client.post(
        f"{MEMORY}/entries",
        content=json.dumps({"memories": [{"id": memory_id, "content": text}]}),
        headers={"Content-Type": "application/json"},
    )
    assert entry.status_code == 422, entry.text
    assert await _search(client, "lynx") == []
