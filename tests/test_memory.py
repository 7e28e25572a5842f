"""Long-term memory over HTTP, on both backends: ingest, search, forget."""

import pytest

APP = "assistant"


async def _session_with(client, user: str, session_id: str, texts: list[str], app: str = APP):
    created = await client.post(
        f"/apps/{app}/users/{user}/sessions", json={"sessionId": session_id}
    )
    assert created.status_code == 201
    for text in texts:
        response = await client.post(
            f"/apps/{app}/users/{user}/sessions/{session_id}/events",
            json={"author": "user", "content": {"role": "user", "parts": [{"text": text}]}},
        )
        assert response.status_code == 201


async def _ingest(client, user: str, session_id: str, app: str = APP):
    return await client.post(f"/apps/{app}/users/{user}/memory", json={"sessionId": session_id})


async def _search(client, user: str, query: str, app: str = APP, **params):
    response = await client.get(
        f"/apps/{app}/users/{user}/memory", params={"query": query, **params}
    )
    assert response.status_code == 200, response.text
    return [memory["content"]["parts"][0]["text"] for memory in response.json()["memories"]]


async def test_ingesting_twice_stores_nothing_twice(client):
    await _session_with(client, "ada", "s1", ["My favourite colour is teal."])
    first = await _ingest(client, "ada", "s1")
    assert first.json() == {"sessionId": "s1", "memoriesAdded": 1}
    again = await _ingest(client, "ada", "s1")
    assert again.json()["memoriesAdded"] == 0
    assert await _search(client, "ada", "favourite colour") == ["My favourite colour is teal."]


async def test_ingesting_again_after_more_events_adds_only_the_new_ones(client):
    await _session_with(client, "ada", "s1", ["The cat is called Miso."])
    await _ingest(client, "ada", "s1")
    await client.post(
        f"/apps/{APP}/users/ada/sessions/s1/events",
        json={"author": "user", "content": {"parts": [{"text": "The cat hates thunder."}]}},
    )
    added = await _ingest(client, "ada", "s1")
    assert added.json()["memoriesAdded"] == 1
    assert sorted(await _search(client, "ada", "cat")) == [
        "The cat hates thunder.",
        "The cat is called Miso.",
    ]


async def test_events_without_text_are_not_memories(client):
    created = await client.post(f"/apps/{APP}/users/ada/sessions", json={"sessionId": "quiet"})
    assert created.status_code == 201
    stored = await client.post(
        f"/apps/{APP}/users/ada/sessions/quiet/events",
        json={"author": "agent", "actions": {"stateDelta": {"k": 1}}},
    )
    assert stored.status_code == 201
    assert (await _ingest(client, "ada", "quiet")).json() == {
        "sessionId": "quiet",
        "memoriesAdded": 0,
    }


async def test_search_returns_adk_memory_entries_best_match_first(client):
    await _session_with(
        client,
        "ada",
        "s1",
        ["I was born in Lisbon in 1990.", "Lisbon has trams; I was born near the river."],
    )
    await _ingest(client, "ada", "s1")
    response = await client.get(
        f"/apps/{APP}/users/ada/memory", params={"query": "where was I born, Lisbon?"}
    )
    memories = response.json()["memories"]
    assert len(memories) == 2
    entry = memories[0]
    assert set(entry) == {
        "id",
        "author",
        "timestamp",
        "content",
        "customMetadata",
        "matchedBy",
        "score",
    }
    assert entry["author"] == "user"
    assert entry["content"]["role"] == "user"
    assert entry["customMetadata"] == {"sessionId": "s1"}
    assert entry["timestamp"].endswith("+00:00")


async def test_memories_never_cross_users_or_apps(client):
    await _session_with(client, "ada", "s1", ["The vault code is 4711."])
    await _ingest(client, "ada", "s1")
    assert await _search(client, "bob", "vault code") == []
    assert await _search(client, "ada", "vault code", app="other-app") == []
    assert await _search(client, "ada", "vault code") == ["The vault code is 4711."]


async def test_limit_caps_the_results(client):
    await _session_with(client, "ada", "s1", [f"Note {index} about apples." for index in range(5)])
    await _ingest(client, "ada", "s1")
    assert len(await _search(client, "ada", "apples", limit=2)) == 2


async def test_forgetting_a_user_removes_all_their_memories_only(client):
    await _session_with(client, "ada", "s1", ["Ada likes jazz."])
    await _session_with(client, "bob", "s1", ["Bob likes jazz."])
    await _ingest(client, "ada", "s1")
    await _ingest(client, "bob", "s1")
    response = await client.delete(f"/apps/{APP}/users/ada/memory")
    assert response.status_code == 204
    assert await _search(client, "ada", "jazz") == []
    assert await _search(client, "bob", "jazz") == ["Bob likes jazz."]


async def test_deleting_a_session_keeps_its_memories_unless_asked(client):
    await _session_with(client, "ada", "kept", ["Kept fact about owls."])
    await _session_with(client, "ada", "dropped", ["Dropped fact about owls."])
    for session_id in ("kept", "dropped"):
        assert (await _ingest(client, "ada", session_id)).json()["memoriesAdded"] == 1
    assert (await client.delete(f"/apps/{APP}/users/ada/sessions/kept")).status_code == 204
    assert (await client.get(f"/apps/{APP}/users/ada/sessions/kept")).status_code == 404
    deleted = await client.delete(
        f"/apps/{APP}/users/ada/sessions/dropped", params={"deleteMemories": "true"}
    )
    assert deleted.status_code == 204
    assert await _search(client, "ada", "owls") == ["Kept fact about owls."]


async def test_ingesting_a_missing_session_is_404(client):
    response = await _ingest(client, "ada", "nope")
    assert response.status_code == 404
    assert response.json()["code"] == "session_not_found"


@pytest.mark.parametrize(
    ("path", "kwargs"),
    [
        ("/apps/a/users/u/memory", {"json": {}}),
        ("/apps/a/users/u/memory", {"json": {"sessionId": " padded "}}),
    ],
)
async def test_bad_ingest_bodies_are_422(client, path, kwargs):
    response = await client.post(path, **kwargs)
    assert response.status_code == 422
    assert response.json()["code"] == "validation_error"


async def test_search_needs_a_query_and_a_sane_limit(client):
    assert (await client.get("/apps/a/users/u/memory")).status_code == 422
    assert (await client.get("/apps/a/users/u/memory?query=x&limit=0")).status_code == 422


async def test_operator_characters_in_a_question_are_just_text(client):
    await _session_with(client, "ada", "s1", ['She said "hello" (twice) - OR NOT?'])
    await _ingest(client, "ada", "s1")
    for question in ['"hello', "hello OR", "NOT (twice", "*", "-", "a:b"]:
        response = await client.get(f"/apps/{APP}/users/ada/memory", params={"query": question})
        assert response.status_code == 200, (question, response.text)


async def _turn(client, session_id: str, invocation: str, text: str, event_id: str):
    response = await client.post(
        f"/apps/{APP}/users/ada/sessions/{session_id}/events",
        json={
            "id": event_id,
            "author": "user",
            "invocationId": invocation,
            "content": {"role": "user", "parts": [{"text": text}]},
        },
    )
    assert response.status_code == 201, response.text


async def _rewound_session(client, session_id: str, *, ingest_before: bool) -> None:
    """Three turns, the second undone by a rewind, then a fourth."""
    await _session_with(client, "ada", session_id, [])
    await _turn(client, session_id, "inv-1", "We flew to Lisbon in May.", "e1")
    await _turn(client, session_id, "inv-2", "Pineapple belongs on pizza.", "e2")
    await _turn(client, session_id, "inv-2", "Anchovies too.", "e3")
    if ingest_before:
        assert (await _ingest(client, "ada", session_id)).json()["memoriesAdded"] == 3
        assert await _search(client, "ada", "pineapple pizza") == ["Pineapple belongs on pizza."]
    rewound = await client.post(
        f"/apps/{APP}/users/ada/sessions/{session_id}/rewind", json={"beforeInvocationId": "inv-2"}
    )
    assert rewound.status_code == 200, rewound.text
    await _turn(client, session_id, "inv-3", "Mango is the best fruit.", "e4")


@pytest.mark.parametrize("ingest_before", [False, True])
async def test_ingesting_leaves_out_and_deletes_what_a_rewind_undid(client, ingest_before):
    # As ADK 2.15's memory services: only the events no rewind undid are
    # taken, and a session taken again after a rewind loses what it undid.
    await _rewound_session(client, "trip", ingest_before=ingest_before)
    added = await _ingest(client, "ada", "trip")
    assert added.json()["memoriesAdded"] == (1 if ingest_before else 2)
    assert await _search(client, "ada", "pineapple pizza anchovies") == []
    assert await _search(client, "ada", "Lisbon") == ["We flew to Lisbon in May."]
    assert await _search(client, "ada", "mango fruit") == ["Mango is the best fruit."]


async def test_rewound_event_ids_delete_that_sessions_memories_only_and_can_come_back(client):
    events = f"/apps/{APP}/users/ada/memory/events"

    def said(event_id: str, text: str) -> dict:
        return {"id": event_id, "author": "user", "content": {"parts": [{"text": text}]}}

    for session_id in ("a", "b"):
        taken = await client.post(
            events, json={"sessionId": session_id, "events": [said("e1", f"Kiwis in {session_id}")]}
        )
        assert taken.json() == {"memoriesAdded": 1}
    undone = await client.post(
        events,
        json={"sessionId": "a", "events": [said("e2", "Plums in a")], "rewoundEventIds": ["e1"]},
    )
    assert undone.json() == {"memoriesAdded": 1}
    assert await _search(client, "ada", "kiwis") == ["Kiwis in b"]
    # Deleted, not forgotten: the event may be taken again.
    again = await client.post(events, json={"sessionId": "a", "events": [said("e1", "Kiwis in a")]})
    assert again.json() == {"memoriesAdded": 1}
    assert sorted(await _search(client, "ada", "kiwis")) == ["Kiwis in a", "Kiwis in b"]


@pytest.mark.parametrize("rewound", [[""], ["x" * 200], [1], "e1", [None], ["a\u0000b"]], ids=repr)
async def test_bad_rewound_event_ids_are_422_and_write_nothing(client, rewound):
    events = f"/apps/{APP}/users/ada/memory/events"
    kept = {"id": "k", "author": "user", "content": {"parts": [{"text": "Figs stay"}]}}
    await client.post(events, json={"sessionId": "s", "events": [kept]})
    sent = {"id": "n", "author": "user", "content": {"parts": [{"text": "Figs new"}]}}
    answer = await client.post(
        events, json={"sessionId": "s", "events": [sent], "rewoundEventIds": rewound}
    )
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert await _search(client, "ada", "figs") == ["Figs stay"]


async def test_thought_parts_are_neither_searched_nor_returned(client):
    # As ADK 2.15's memory services: a model's thoughts are not what was said.
    await _session_with(client, "ada", "think", [])
    for event_id, parts in (
        ("t1", [{"text": "Zebras are striped, so", "thought": True}, {"text": "Giraffes win."}]),
        ("t2", [{"text": "Zebras only here", "thought": True}]),
    ):
        response = await client.post(
            f"/apps/{APP}/users/ada/sessions/think/events",
            json={"id": event_id, "author": "model", "content": {"role": "model", "parts": parts}},
        )
        assert response.status_code == 201
    assert (await _ingest(client, "ada", "think")).json()["memoriesAdded"] == 1
    assert await _search(client, "ada", "zebras striped") == []
    found = await client.get(f"/apps/{APP}/users/ada/memory", params={"query": "giraffes"})
    (memory,) = found.json()["memories"]
    assert memory["content"]["parts"] == [{"text": "Giraffes win."}]
