"""Memory that finds by meaning, on both backends, with the local model
(wordllama, the default): a labelled set of paraphrase questions (no content
word shared with their fact), exact-term questions and distractors, in
English and four other languages, ranked by hybrid, keyword-only and
semantic search, beside ADK's InMemoryMemoryService in the same test."""

import asyncio

from google.adk.events import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.sessions import Session
from google.genai import types

from session_state.core.config import Settings
from session_state.memory.embedding import WordLlamaEmbedder, _load_wordllama, embedded_text
from session_state.memory.rules import KEYWORD_HITS_PER_TERM
from tests.conftest import asgi_client
from tests.memory_labelled_set import DISTRACTORS, EXACT_TERMS, FACTS, PARAPHRASES

APP, USER = "semantic", "ada"
MEMORY = f"/apps/{APP}/users/{USER}/memory"


async def _remember_the_set(client) -> None:
    memories = [
        {"id": fact_id, "content": {"role": "user", "parts": [{"text": text}]}}
        for fact_id, text in FACTS.items()
    ] + [
        {"id": f"distractor{index}", "content": {"role": "user", "parts": [{"text": text}]}}
        for index, text in enumerate(DISTRACTORS)
    ]
    written = await client.post(f"{MEMORY}/entries", json={"memories": memories})
    assert written.status_code == 200, written.text


async def _ids(client, query: str, mode: str | None = None, **params) -> list[str]:
    sent = {"query": query, **params} | ({"mode": mode} if mode else {})
    response = await client.get(MEMORY, params=sent)
    assert response.status_code == 200, response.text
    return [memory["id"] for memory in response.json()["memories"]]


def _hits(rankings: dict[str, list[str]], questions) -> tuple[int, int]:
    at_1 = sum(rankings[question][:1] == [fact] for question, fact in questions)
    at_3 = sum(fact in rankings[question][:3] for question, fact in questions)
    return at_1, at_3


async def _adk_rankings(questions) -> dict[str, list[str]]:
    memory = InMemoryMemoryService()
    texts = {**FACTS, **{f"distractor{i}": text for i, text in enumerate(DISTRACTORS)}}
    events = [
        Event(
            id=memory_id,
            author="user",
            invocation_id="inv",
            timestamp=1_700_000_000 + index,
            content=types.Content(role="user", parts=[types.Part(text=text)]),
        )
        for index, (memory_id, text) in enumerate(texts.items())
    ]
    await memory.add_session_to_memory(
        Session(id="s", app_name=APP, user_id=USER, events=events, state={})
    )
    found = {}
    for question, _ in questions:
        result = await memory.search_memory(app_name=APP, user_id=USER, query=question)
        found[question] = [entry.id for entry in result.memories]
    return found


async def test_hybrid_finds_paraphrases_that_keywords_and_adk_miss(client):
    await _remember_the_set(client)
    questions = PARAPHRASES
    rankings = {
        mode: {question: await _ids(client, question, mode) for question, _ in questions}
        for mode in ("hybrid", "keyword", "semantic")
    }
    figures = {mode: _hits(found, questions) for mode, found in rankings.items()}
    figures["adk"] = _hits(await _adk_rankings(questions), questions)
    print(f"paraphrases, (hit@1, hit@3) of {len(questions)}: {figures}")
    hybrid_at_1, hybrid_at_3 = figures["hybrid"]
    assert hybrid_at_3 >= len(questions) - 2, figures
    assert hybrid_at_1 >= len(questions) // 2, figures
    assert hybrid_at_1 > figures["keyword"][0] and hybrid_at_1 > figures["adk"][0], figures
    # Meaning alone misses the paraphrases the model places no nearer than
    # unrelated text: the relevance rule holds them back (test_memory_relevance.py).
    assert figures["semantic"][1] >= len(questions) - 3, figures


async def test_exact_rare_terms_stay_first(client):
    await _remember_the_set(client)
    for mode in ("hybrid", "keyword", "semantic"):
        for question, fact in EXACT_TERMS:
            found = await _ids(client, question, mode)
            assert found[:1] == [fact], (mode, question, found)
    # A rare term inside a question in other words.
    assert (await _ids(client, "when do I leave for Lisbon?"))[:1] == ["flight"]
    assert (await _ids(client, "status of order KX-48213"))[:1] == ["order"]
    # What holds no meaning near any memory finds nothing.
    assert await _ids(client, "zxqv") == []
    assert await _ids(client, "quantum chromodynamics lattice", "semantic") == []


async def test_each_vector_is_stored_with_its_model_and_others_are_never_ranked(client, settings):
    await _remember_the_set(client)
    question = "What kind of dog does the user own?"
    assert (await _ids(client, question, "semantic"))[:1] == ["dog"]
    # Another embedder's vectors (same length) are not compared with ours.
    other = settings.model_copy(update={"sweep_interval_seconds": 0})
    async with asgi_client(other) as second:
        state = second._transport.app.state  # type: ignore[attr-defined]
        backlog = state.memory_backlog
        # The background task's first pass is over (it found nothing waiting).
        for _ in range(200):
            if backlog.status.waiting is not None:
                break
            await asyncio.sleep(0.01)
        assert backlog.status.waiting == 0
        second_app_memory = state.memory
        second_app_memory.embedder.model_id = "wordllama/another-model"
        try:
            assert await _ids(second, question, "semantic") == []
            # Keyword search still finds by words meanwhile.
            assert await _ids(second, "Lisbon", "hybrid") == ["flight"]
            assert await backlog.count_waiting() == len(FACTS) + len(DISTRACTORS)
            assert await backlog.embed_waiting() == len(FACTS) + len(DISTRACTORS)
            assert await backlog.count_waiting() == 0
            assert (await _ids(second, question, "semantic"))[:1] == ["dog"]
        finally:
            second_app_memory.embedder.model_id = WordLlamaEmbedder.model_id


async def test_a_deleted_or_forgotten_memory_is_not_found_by_meaning(client):
    await _remember_the_set(client)
    question = "What kind of dog does the user own?"
    assert (await _ids(client, question))[:1] == ["dog"]
    assert (await client.delete(f"{MEMORY}/dog")).status_code == 204
    assert "dog" not in await _ids(client, question)
    assert "dog" not in await _ids(client, question, "semantic")
    assert (await client.delete(MEMORY)).status_code == 204
    assert await _ids(client, question, "semantic") == []


async def test_ingested_sessions_and_added_events_are_embedded(client):
    created = await client.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": "s1"})
    assert created.status_code == 201
    appended = await client.post(
        f"/apps/{APP}/users/{USER}/sessions/s1/events",
        json={"author": "user", "content": {"parts": [{"text": FACTS["dog"]}]}},
    )
    assert appended.status_code == 201
    assert (await client.post(MEMORY, json={"sessionId": "s1"})).json()["memoriesAdded"] == 1
    events = [{"id": "e2", "author": "user", "content": {"parts": [{"text": FACTS["coffee"]}]}}]
    added = await client.post(f"{MEMORY}/events", json={"sessionId": "s2", "events": events})
    assert added.json() == {"memoriesAdded": 1}
    assert await _ids(client, "What kind of dog does the user own?", "semantic") != []
    assert await _ids(client, "How much coffee does the user have a day?", "semantic") == ["e2"]
    ready = await client.get("/readyz")
    assert ready.json()["memoryEmbedding"]["embedder"] == WordLlamaEmbedder.model_id


async def test_an_unknown_mode_is_refused(client):
    for mode in ("fuzzy", "", "HYBRID"):
        response = await client.get(MEMORY, params={"query": "dog", "mode": mode})
        assert response.status_code == 422, response.text
        assert "mode" in response.text


async def test_without_an_embedder_hybrid_is_keyword_and_semantic_is_refused(database_url):
    settings = Settings(database_url=database_url, memory_embedder="none")
    async with asgi_client(settings) as client:
        await _remember_the_set(client)
        assert await _ids(client, "Lisbon") == ["flight"]
        assert await _ids(client, "What kind of dog does the user own?") == []
        refused = await client.get(MEMORY, params={"query": "dog", "mode": "semantic"})
        assert refused.status_code == 400
        assert refused.json()["code"] == "semantic_search_off"
        assert "memoryEmbedding" not in (await client.get("/readyz")).json()


async def test_a_long_question_and_a_long_memory_are_embedded_in_bounded_time(client):
    text = "golden retriever " * 60_000  # 1 MB: only its opening is embedded
    written = await client.post(
        f"{MEMORY}/entries",
        json={"memories": [{"id": "long", "content": {"parts": [{"text": text}]}}]},
    )
    assert written.status_code == 200, written.text
    question = "puppy dog " * 199
    assert await _ids(client, question, "semantic") == ["long"]


def test_texts_are_tokenized_word_by_word_as_the_model_tokenizes_them_whole():
    # app.memory.embedding tokenizes each word once and remembers it: the ids must
    # be those of the model's own tokenizer, for every kind of text.
    model = _load_wordllama()
    texts = [
        *FACTS.values(),
        *DISTRACTORS,
        *(question for question, _ in PARAPHRASES + EXACT_TERMS),
        "two  spaces,   three, and a trailing one ",
        "  leading spaces",
        " ",
        "",
        "tab\tnew\nline",
        "emoji 🎉🎉 and a non-breaking\u00a0space",
        "私の名前は太郎です。 東京で働いています",
        "Меня зовут Иван",
        "\u2581already\u2581marked\u2581\u2581",
        "word " * 3_000,  # more tokens than are embedded
        "日本語" * 3_000,
    ]
    texts = [embedded_text(text) for text in texts]
    own = [
        encoding.ids for encoding in model.tokenizer.encode_batch(texts, add_special_tokens=False)
    ]
    assert model.tokens.ids(texts) == own
    assert model.tokens.ids(texts) == own  # from what it remembered


async def test_a_rare_term_comes_first_among_more_common_hits_than_a_term_ranks(client):
    # Each term ranks the user's KEYWORD_HITS_PER_TERM memories stored last
    # that hold it: the first "coffee" memories stored are past it, but the one that
    # also names Lisbon is found by its rare term, and first.
    memories = [
        {
            "id": f"coffee{index}",
            "content": {"parts": [{"text": f"Coffee number {index} this week."}]},
            "timestamp": f"2026-01-01T00:{index // 60:02d}:{index % 60:02d}Z",
        }
        for index in range(KEYWORD_HITS_PER_TERM + 20)
    ]
    memories[0]["content"] = {"parts": [{"text": "Coffee in Lisbon with Clara."}]}
    written = await client.post(f"{MEMORY}/entries", json={"memories": memories})
    assert written.status_code == 200, written.text
    for mode in ("keyword", "hybrid"):
        assert (await _ids(client, "coffee Lisbon", mode))[:1] == ["coffee0"]
    newest = await _ids(client, "coffee", "keyword", limit=3)
    assert newest == [f"coffee{KEYWORD_HITS_PER_TERM + 19 - index}" for index in range(3)]


CODE_MEMORIES = {
    # The code is a few words of a long memory about something else: its
    # meaning is the garden's, and a question of the code alone is nearer
    # in meaning to the short memories of look-alike codes (one word each,
    # so that they share no keyword with it).
    "courier": "We spent Saturday in the garden planting tomatoes, basil and two rows of "
    "beans; the neighbours brought lemonade and we talked about the summer holidays until "
    "late. The courier left the box labelled XJ-4471-B by the shed.",
    "stock": "Part number XJ4417C is out of stock at the warehouse.",
    "shipped": "Order reference XK4471D was shipped to the depot.",
    "router": "The serial on the router is JX7144B.",
    "printer": "Ticket QP1180A about the printer is closed.",
}


async def test_the_default_search_finds_by_keywords_what_meaning_cannot_place(client):
    """An identifier only the keyword side places: the default (hybrid)
    search has its memory first, whether the memory holds every word of the
    question (the keyword ranking stands) or not (the two rankings fused)."""
    memories = [
        {"id": memory_id, "content": {"role": "user", "parts": [{"text": text}]}}
        for memory_id, text in CODE_MEMORIES.items()
    ]
    written = await client.post(f"{MEMORY}/entries", json={"memories": memories})
    assert written.status_code == 200, written.text
    holds_every_word = ["XJ-4471-B", "where is XJ-4471-B"]  # "where is": stop words
    fused = ["XJ-4471-B parcel", "the XJ-4471-B package"]
    for question in holds_every_word + fused:
        # Meaning alone ranks a look-alike code first: only keywords find it.
        assert (await _ids(client, question, "semantic"))[:1] != ["courier"], question
        assert (await _ids(client, question, "keyword"))[:1] == ["courier"], question
        found = await _ids(client, question)
        assert found[:1] == ["courier"], (question, found)
        assert await _ids(client, question, "hybrid") == found
        # The path taken: the keyword ranking alone, or fused with meaning's.
        assert ("stock" in found) == (question in fused), (question, found)
