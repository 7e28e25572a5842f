"""The labelled evaluation set through ADK's API: HttpMemoryService against a
started server on each backend, the memories written as ADK events
(add_events_to_memory, so the text an event contributes is what is
embedded), searched with search_memory as ADK's load_memory tool searches.
The same rules as tests/test_memory_relevance.py states over REST; ADK's
InMemoryMemoryService is measured beside it."""

import pytest
from google.adk.memory import InMemoryMemoryService

from session_state_client.adk import HttpMemoryService
from tests.memory_evaluation import evaluate, events, plain_cosine
from tests.memory_evaluation_set import PARTS

USER = "ada"


async def _figures(memory, app: str, part):
    await memory.add_events_to_memory(app_name=app, user_id=USER, events=events(part))

    async def search(question: str) -> list[str]:
        result = await memory.search_memory(app_name=app, user_id=USER, query=question)
        return [entry.id for entry in result.memories]

    return await evaluate(part, search)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("part", PARTS, ids=lambda part: part.name)
async def test_through_http_memory_service_unrelated_questions_find_nothing_and_recall_holds(
    backend, part, app, request
):
    server = request.getfixturevalue(f"{backend}_server")
    service = HttpMemoryService(base_url=server.base_url)
    try:
        ours, found = await _figures(service, app, part)
    finally:
        await service.close()
    adk, _ = await _figures(InMemoryMemoryService(), app, part)
    model, _ = await evaluate(part, _looked_up(plain_cosine(part, relevance_rule=True)))
    print(f"{part.name} {backend}: ours {ours.line()}\n  ADK {adk.line()}\n  model {model.line()}")
    assert ours.unrelated_empty == ours.unrelated, found
    assert ours.exact_hit_at_1 == ours.exact_terms, found
    assert ours.paraphrase_hit_at_3 >= model.paraphrase_hit_at_3, (ours, model)
    assert ours.paraphrase_hit_at_3 > adk.paraphrase_hit_at_3, (ours, adk)


def _looked_up(found: dict[str, list[str]]):
    async def search(question: str) -> list[str]:
        return found[question]

    return search
