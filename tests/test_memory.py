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
