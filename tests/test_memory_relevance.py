"""Memory search answers a question about nothing it holds with nothing, in
any script, and finds at least what its own model finds alone: on both
backends through REST, on both parts of the labelled evaluation set
(tests/memory_evaluation_set.py; HttpMemoryService: tests/client/
test_adk_memory_relevance.py).

"The model alone" is the bundled wordllama model ranking every memory by
plain cosine similarity in numpy. It answers every question, unrelated ones
included; held to the service's relevance rule it answers those with
nothing, and loses the paraphrases it cannot tell from unrelated text.
"""

import pytest

from session_state.core.config import DEFAULT_MIN_SIMILARITY
from session_state.memory.embedding import wordllama_vectors
from tests.conftest import asgi_client
from tests.memory_evaluation import entries, evaluate, plain_cosine
from tests.memory_evaluation_set import HELD_OUT, PARTS, EvaluationPart

USER = "ada"
SCRIPTS = {"Latin", "CJK", "Cyrillic", "Hangul", "Arabic", "Devanagari"}

each_part = pytest.mark.parametrize("part", PARTS, ids=lambda part: part.name)


async def _remember(client, part: EvaluationPart) -> str:
    memory = f"/apps/{part.name}/users/{USER}/memory"
    written = await client.post(f"{memory}/entries", json={"memories": entries(part)})
    assert written.status_code == 200, written.text
    return memory


def _searcher(client, memory: str, mode: str):
    async def search(question: str) -> list[str]:
        response = await client.get(memory, params={"query": question, "mode": mode})
        assert response.status_code == 200, response.text
        return [found["id"] for found in response.json()["memories"]]

    return search


@each_part
async def test_unrelated_questions_in_six_scripts_find_nothing(client, part):
    memory = await _remember(client, part)
    assert part.scripts == SCRIPTS
    # The questions share no keyword term with any memory, so anything found
    # is found by meaning; and a floor on the cosine alone would answer some.
    keyword = _searcher(client, memory, "keyword")
    for question, _ in part.unrelated:
        assert await keyword(question) == [], question
    above_the_floor = _unrelated_above_the_floor(part)
    assert above_the_floor >= {"CJK", "Cyrillic", "Arabic", "Devanagari"}, above_the_floor

    for mode in ("hybrid", "semantic"):
        search = _searcher(client, memory, mode)
        for question, script in part.unrelated:
            assert await search(question) == [], (mode, script, question)


def _unrelated_above_the_floor(part: EvaluationPart) -> set[str]:
    """The scripts of the unrelated questions whose nearest memory has a
    cosine at or above the floor."""
    memories = wordllama_vectors(list(part.memories.values()))
    scripts = set()
    for question, script in part.unrelated:
        if float((memories @ wordllama_vectors([question])[0]).max()) >= DEFAULT_MIN_SIMILARITY:
            scripts.add(script)
    return scripts


@each_part
async def test_exact_terms_come_first(client, part):
    memory = await _remember(client, part)
    for mode in ("hybrid", "keyword"):
        search = _searcher(client, memory, mode)
        for question, fact in part.exact_terms:
            found = await search(question)
            assert found[:1] == [fact], (mode, question, found)


@each_part
async def test_held_to_the_relevance_rule_hybrid_finds_what_the_model_finds_under_it(client, part):
    memory = await _remember(client, part)
    hybrid, found = await evaluate(part, _searcher(client, memory, "hybrid"))
    model, _ = await evaluate(part, _async(plain_cosine(part, relevance_rule=True)))
    print(f"{part.name}: hybrid {hybrid.line()}\n  model under the rule {model.line()}")
    assert model.unrelated_empty == model.unrelated  # the rule answers them with nothing
    assert hybrid.unrelated_empty == hybrid.unrelated, found
    assert hybrid.paraphrase_hit_at_3 >= model.paraphrase_hit_at_3, (hybrid, model)
    assert hybrid.paraphrase_hit_at_1 >= model.paraphrase_hit_at_1, (hybrid, model)
    assert hybrid.exact_hit_at_1 == hybrid.exact_terms


@each_part
async def test_ranked_without_the_rule_hybrid_finds_at_least_what_the_model_finds(settings, part):
    """The ranking alone, the relevance rule set aside: the keyword side
    adds to what meaning finds and takes nothing from it."""
    without_rule = settings.model_copy(
        update={"memory_min_similarity": -1.0, "memory_relevance_margin": -1.0}
    )
    async with asgi_client(without_rule) as client:
        memory = await _remember(client, part)
        hybrid, _ = await evaluate(part, _searcher(client, memory, "hybrid"))
    model, _ = await evaluate(part, _async(plain_cosine(part)))
    print(f"{part.name}: hybrid {hybrid.line()}\n  model alone {model.line()}")
    assert hybrid.paraphrase_hit_at_1 >= model.paraphrase_hit_at_1, (hybrid, model)
    # Ranking by relevance rather than cosine puts one held-out paraphrase in
    # a crowded script (Chinese) fourth, which cosine has second: the
    # held-out part is never tuned to, so what it measures stands
    # (docs/performance.md, "Memory relevance and recall").
    lost = 1 if part is HELD_OUT else 0
    assert hybrid.paraphrase_hit_at_3 >= model.paraphrase_hit_at_3 - lost, (hybrid, model)
    assert hybrid.exact_hit_at_1 == hybrid.exact_terms


def _async(found: dict[str, list[str]]):
    async def search(question: str) -> list[str]:
        return found[question]

    return search
