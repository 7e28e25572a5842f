"""Each memory a search returns says which side found it (`matchedBy`:
keyword, meaning or both) and its score, on both backends over real HTTP,
with encryption on and without an embedder; the order of the results is the
order searches gave before results carried either."""

import json
from pathlib import Path

import httpx
import jsonschema
import pytest

from session_state.core.config import Settings
from tests.conftest import ServerProcess, asgi_client
from tests.memory_labelled_set import DISTRACTORS, EXACT_TERMS, FACTS, PARAPHRASES
from tests.test_encryption_at_rest import _key

USER = "ada"
TEXTS = {
    "dog": "I adopted a golden retriever puppy last spring.",
    "flight": "My flight to Lisbon leaves on the 14th of March.",
    "bank": "Can you remind me to call the bank tomorrow?",
    "weather": "The weather was nice today, I think.",
}
# A paraphrase sharing no word with the memory it finds; a name the memory
# holds; a word the memory holds in another sense.
BY_MEANING = "What kind of dog does the user own?"
BY_BOTH = "Lisbon"
BY_KEYWORD = "river bank fishing spot"

# The ids each search of the labelled set returned on each backend before
# results carried matchedBy and score (commit 3d60eaf), limit 10.
ORDERS = json.loads((Path(__file__).parent / "memory_search_orders.json").read_text())
SPEC = json.loads((Path(__file__).parent.parent / "openapi" / "openapi.json").read_text())


def _memories(texts: dict[str, str]) -> dict[str, list[dict[str, object]]]:
    return {
        "memories": [
            {"id": memory_id, "content": {"role": "user", "parts": [{"text": text}]}}
            for memory_id, text in texts.items()
        ]
    }


def _search(server: ServerProcess, app: str, query: str, mode: str) -> list[dict[str, object]]:
    response = httpx.get(
        f"{server.base_url}/apps/{app}/users/{USER}/memory",
        params={"query": query, "mode": mode, "limit": 10},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    memories: list[dict[str, object]] = response.json()["memories"]
    return memories


def _found(memories: list[dict[str, object]]) -> list[tuple[object, object]]:
    return [(memory["id"], memory["matchedBy"]) for memory in memories]


@pytest.fixture
def remembered(server: ServerProcess, request: pytest.FixtureRequest) -> str:
    """An app of this test's own in the server's database, with TEXTS."""
    app = f"matched-{request.node.callspec.id}-{request.node.originalname}"[:100]
    memory = f"{server.base_url}/apps/{app}/users/{USER}/memory"
    httpx.delete(memory, timeout=30).raise_for_status()
    httpx.post(f"{memory}/entries", json=_memories(TEXTS), timeout=30).raise_for_status()
    return app


def test_a_paraphrase_with_no_shared_word_is_found_by_meaning(server, remembered):
    assert _found(_search(server, remembered, BY_MEANING, "hybrid")) == [("dog", "meaning")]


def test_a_name_the_memory_holds_is_found_by_both(server, remembered):
    assert _found(_search(server, remembered, BY_BOTH, "hybrid")) == [("flight", "both")]


def test_a_word_held_in_another_sense_is_found_by_keyword_alone(server, remembered):
    assert _found(_search(server, remembered, BY_KEYWORD, "hybrid")) == [("bank", "keyword")]


def test_one_hybrid_search_shows_each_side(server, remembered):
    found = _search(server, remembered, "dog breed, Lisbon and the river bank", "hybrid")
    assert _found(found) == [("flight", "both"), ("dog", "meaning"), ("bank", "keyword")]


def test_a_search_answers_as_the_committed_spec_says(server, remembered):
    found = _search(server, remembered, "dog breed, Lisbon and the river bank", "hybrid")
    schema = {"$ref": "#/components/schemas/SearchMemoryResponse", **SPEC}
    jsonschema.Draft202012Validator(schema).validate({"memories": found})
    invalid = {"memories": [{**found[0], "matchedBy": "hybrid"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(invalid)


def test_a_keyword_score_is_the_share_of_the_question_terms_held(server, remembered):
    # "river bank fishing spot": four terms, the memory holds "bank".
    (bank,) = _search(server, remembered, BY_KEYWORD, "keyword")
    assert (bank["matchedBy"], bank["score"]) == ("keyword", 0.25)
    (flight,) = _search(server, remembered, BY_BOTH, "keyword")
    assert (flight["matchedBy"], flight["score"]) == ("keyword", 1.0)


def test_each_mode_answers_with_its_side_and_a_score(server, remembered):
    for mode, sides in (
        ("hybrid", {"keyword", "meaning", "both"}),
        ("keyword", {"keyword"}),
        ("semantic", {"meaning"}),
    ):
        seen = set()
        for query in (BY_MEANING, BY_BOTH, BY_KEYWORD):
            for memory in _search(server, remembered, query, mode):
                assert memory["matchedBy"] in sides, (mode, query, memory)
                assert isinstance(memory["score"], float | int), memory
                assert -1.0 <= memory["score"] <= 1.0, memory
                seen.add(memory["matchedBy"])
        assert seen == sides, mode


def test_a_score_by_meaning_is_the_same_in_hybrid_and_semantic(server, remembered):
    (hybrid,) = _search(server, remembered, BY_BOTH, "hybrid")
    (semantic,) = _search(server, remembered, BY_BOTH, "semantic")
    assert hybrid["score"] == pytest.approx(semantic["score"], abs=1e-5)
    assert 0.0 < semantic["score"] <= 1.0


def test_the_order_of_results_is_unchanged(server, request):
    app = f"orders-{request.node.callspec.id}"
    memory = f"{server.base_url}/apps/{app}/users/{USER}/memory"
    httpx.delete(memory, timeout=30).raise_for_status()
    texts = FACTS | {f"distractor{index}": text for index, text in enumerate(DISTRACTORS)}
    httpx.post(f"{memory}/entries", json=_memories(texts), timeout=30).raise_for_status()
    questions = [question for question, _ in PARAPHRASES + EXACT_TERMS]
    questions += ["weather tomorrow", "what kind of car"]
    expected = ORDERS[request.node.callspec.id]
    found = {
        f"{mode}|{question}": [result["id"] for result in _search(server, app, question, mode)]
        for question in questions
        for mode in ("hybrid", "keyword", "semantic")
    }
    assert found == expected


@pytest.mark.parametrize("memory_search", ["full", "vectors-only", "off"])
async def test_with_encryption_on_each_result_says_how_it_was_found(database_url, memory_search):
    settings = Settings(
        database_url=database_url,
        db_timeout_seconds=30,
        encryption_keys={"k1": _key()},
        memory_search_when_encrypted=memory_search,
    )
    memory = f"/apps/sealed/users/{USER}/memory"
    async with asgi_client(settings) as client:
        written = await client.post(f"{memory}/entries", json=_memories(TEXTS))
        assert written.status_code == 200, written.text

        async def found(query: str) -> list[tuple[object, object]]:
            response = await client.get(memory, params={"query": query})
            assert response.status_code == 200, response.text
            memories = response.json()["memories"]
            assert all(isinstance(result["score"], float | int) for result in memories)
            return _found(memories)

        searched = [await found(query) for query in (BY_MEANING, BY_BOTH, BY_KEYWORD)]
    # full keeps the keyword index and the vectors; vectors-only the
    # vectors; off neither.
    expected = {
        "full": [[("dog", "meaning")], [("flight", "both")], [("bank", "keyword")]],
        "vectors-only": [[("dog", "meaning")], [("flight", "meaning")], []],
        "off": [[], [], []],
    }[memory_search]
    assert searched == expected


async def test_without_an_embedder_every_result_is_a_keyword_match(database_url):
    settings = Settings(database_url=database_url, db_timeout_seconds=30, memory_embedder="none")
    memory = f"/apps/plain/users/{USER}/memory"
    async with asgi_client(settings) as client:
        written = await client.post(f"{memory}/entries", json=_memories(TEXTS))
        assert written.status_code == 200, written.text
        response = await client.get(memory, params={"query": BY_BOTH})
    assert response.status_code == 200, response.text
    (flight,) = response.json()["memories"]
    assert (flight["id"], flight["matchedBy"], flight["score"]) == ("flight", "keyword", 1.0)
