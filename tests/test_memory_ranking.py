"""A small labelled set of questions: our search against ADK's in-memory
keyword matching (the reference `InMemoryMemoryService`). The hit rate is the
share of questions whose expected fact is the first result."""

import pytest
from google.adk.events import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.sessions import Session
from google.genai import types

APP, USER = "ranking", "ada"

# (session, text): facts mixed with the small talk real sessions are full of.
CONVERSATIONS = {
    "travel": [
        "Last summer I visited Porto and Seville with my sister.",
        "I think the weather was nice and I liked the food there.",
        "My passport expires in March 2027.",
        "I prefer aisle seats on long flights.",
    ],
    "health": [
        "I am allergic to peanuts and shellfish.",
        "I was running a lot this year, I want to run a marathon.",
        "My doctor is Dr. Okafor at the Riverside clinic.",
        "I think I should sleep more, I am tired all the time.",
    ],
    "home": [
        "Our cat is called Miso and she is twelve years old.",
        "I have been learning to bake sourdough bread on weekends.",
        "The wifi password is on the fridge, I keep forgetting it.",
        "My landlord raised the rent by ten percent in January.",
        "I was thinking that I would like a garden with tomatoes.",
    ],
}

# question -> the fact that answers it
QUESTIONS = {
    "Which cities did I visit?": "Last summer I visited Porto and Seville with my sister.",
    "When does my passport expire?": "My passport expires in March 2027.",
    "What kind of seat do I like on flights?": "I prefer aisle seats on long flights.",
    "What am I allergic to?": "I am allergic to peanuts and shellfish.",
    "Am I training for a marathon?": "I was running a lot this year, I want to run a marathon.",
    "Who is my doctor?": "My doctor is Dr. Okafor at the Riverside clinic.",
    "What is the name of my cat?": "Our cat is called Miso and she is twelve years old.",
    "What bread have I been baking?": ("I have been learning to bake sourdough bread on weekends."),
    "How much did the rent go up?": "My landlord raised the rent by ten percent in January.",
    "What do I want to grow in the garden?": (
        "I was thinking that I would like a garden with tomatoes."
    ),
    "Where is the wifi password?": "The wifi password is on the fridge, I keep forgetting it.",
    "Do I sleep enough?": "I think I should sleep more, I am tired all the time.",
}

MINIMUM_HIT_RATE = 0.75


def _event(index: int, text: str) -> Event:
    return Event(
        id=f"e{index}",
        author="user",
        invocation_id="inv",
        timestamp=1_700_000_000 + index,
        content=types.Content(role="user", parts=[types.Part(text=text)]),
    )


async def _adk_hit_rate() -> float:
    memory = InMemoryMemoryService()
    index = 0
    for session_id, texts in CONVERSATIONS.items():
        events = []
        for text in texts:
            events.append(_event(index, text))
            index += 1
        await memory.add_session_to_memory(
            Session(id=session_id, app_name=APP, user_id=USER, events=events)
        )
    hits = 0
    for question, expected in QUESTIONS.items():
        found = await memory.search_memory(app_name=APP, user_id=USER, query=question)
        texts = [entry.content.parts[0].text for entry in found.memories]
        hits += bool(texts) and texts[0] == expected
    return hits / len(QUESTIONS)


async def _remember_conversations(client) -> None:
    for session_id, texts in CONVERSATIONS.items():
        await client.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": session_id})
        for text in texts:
            await client.post(
                f"/apps/{APP}/users/{USER}/sessions/{session_id}/events",
                json={"author": "user", "content": {"role": "user", "parts": [{"text": text}]}},
            )
        await client.post(f"/apps/{APP}/users/{USER}/memory", json={"sessionId": session_id})


async def _our_hit_rate(client) -> float:
    await _remember_conversations(client)
    hits = 0
    for question, expected in QUESTIONS.items():
        response = await client.get(
            f"/apps/{APP}/users/{USER}/memory", params={"query": question, "limit": 10}
        )
        texts = [memory["content"]["parts"][0]["text"] for memory in response.json()["memories"]]
        hits += bool(texts) and texts[0] == expected
    return hits / len(QUESTIONS)


async def test_full_text_search_ranks_better_than_adk_word_matching(client, request):
    ours = await _our_hit_rate(client)
    adk = await _adk_hit_rate()
    backend = request.node.callspec.params["database_url"]
    print(
        f"\nhit rate at 1 on {len(QUESTIONS)} questions ({backend}): ours {ours:.2f}, ADK {adk:.2f}"
    )
    assert ours >= MINIMUM_HIT_RATE
    assert ours > adk


@pytest.mark.parametrize("question", list(QUESTIONS))
async def test_each_labelled_question_finds_its_fact_in_the_top_three(client, question):
    await _remember_conversations(client)
    response = await client.get(
        f"/apps/{APP}/users/{USER}/memory", params={"query": question, "limit": 3}
    )
    texts = [memory["content"]["parts"][0]["text"] for memory in response.json()["memories"]]
    assert QUESTIONS[question] in texts
