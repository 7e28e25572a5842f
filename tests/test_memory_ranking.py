# ruff: noqa: RUF001 (full-width letters and CJK punctuation on purpose)
"""Small labelled sets of questions, one in English and one in other scripts:
our search against ADK's in-memory keyword matching (the reference
`InMemoryMemoryService`). The hit rate is the share of questions whose
expected fact is the first result."""

import unicodedata

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

# Japanese, Chinese, Korean, Russian, mixed scripts, and text written
# decomposed (NFD) and composed (NFC), mixed with small talk.
CAFE_DECOMPOSED = unicodedata.normalize("NFD", "Mon café préféré est le Café Olimpico à Montréal.")
MULTILINGUAL_CONVERSATIONS = {
    "japanese": [
        "私の名前は太郎です。",
        "東京の会社でエンジニアとして働いています。",
        "私はPythonでADKを使っています。",
        "週末は京都で紅葉を見るのが好きです。",
        "今日はとても疲れました。",
    ],
    "chinese": [
        "我喜欢机器学习，特别是深度学习。",
        "我的猫叫小白，它三岁了。",
        "我住在上海，每天坐地铁上班。",
        "明天可能会下雨。",
    ],
    "korean": [
        "김민수는 서울에 살아요.",
        "저는 매운 음식을 좋아해요.",
        "다음 달에 부산으로 여행을 가요.",
        "오늘 날씨가 좋네요.",
    ],
    "russian": [
        "Меня зовут Иван Петров.",
        "Я работаю врачом в Новосибирске.",
        "Моя сестра Ольга живёт в Москве.",
        "Сегодня было холодно.",
    ],
    "mixed": [
        CAFE_DECOMPOSED,
        "My colleague 田中さん writes Rust at work.",
        "Ich wohne in Köln und fahre gern Fahrrad.",
    ],
}
MULTILINGUAL_QUESTIONS = {
    "私の名前は何ですか？": "私の名前は太郎です。",
    "どこで働いていますか？": "東京の会社でエンジニアとして働いています。",
    "ADKは何で使っていますか？": "私はPythonでADKを使っています。",
    "週末は何をするのが好きですか？": "週末は京都で紅葉を見るのが好きです。",
    "我的猫叫什么名字？": "我的猫叫小白，它三岁了。",
    "我喜欢什么？": "我喜欢机器学习，特别是深度学习。",
    "我住在哪个城市？": "我住在上海，每天坐地铁上班。",
    "김민수는 어디에 살아요?": "김민수는 서울에 살아요.",
    "어떤 음식을 좋아해요?": "저는 매운 음식을 좋아해요.",
    "다음 달에 어디로 여행을 가요?": "다음 달에 부산으로 여행을 가요.",
    "Как меня зовут?": "Меня зовут Иван Петров.",
    "Где живёт моя сестра ОЛЬГА?": "Моя сестра Ольга живёт в Москве.",
    "Кем я работаю?": "Я работаю врачом в Новосибирске.",
    "Quel est mon café préféré ?": CAFE_DECOMPOSED,
    "What does 田中 write?": "My colleague 田中さん writes Rust at work.",
    unicodedata.normalize("NFD", "Wohne ich in Köln?"): (
        "Ich wohne in Köln und fahre gern Fahrrad."
    ),
}

LABELLED_SETS = {
    "english": (CONVERSATIONS, QUESTIONS),
    "multilingual": (MULTILINGUAL_CONVERSATIONS, MULTILINGUAL_QUESTIONS),
}
ALL_QUESTIONS = [
    (name, question) for name, (_, questions) in LABELLED_SETS.items() for question in questions
]

MINIMUM_HIT_RATE = 0.75


def _event(index: int, text: str) -> Event:
    return Event(
        id=f"e{index}",
        author="user",
        invocation_id="inv",
        timestamp=1_700_000_000 + index,
        content=types.Content(role="user", parts=[types.Part(text=text)]),
    )


async def _adk_hit_rate(conversations, questions) -> float:
    memory = InMemoryMemoryService()
    index = 0
    for session_id, texts in conversations.items():
        events = []
        for text in texts:
            events.append(_event(index, text))
            index += 1
        await memory.add_session_to_memory(
            Session(id=session_id, app_name=APP, user_id=USER, events=events)
        )
    hits = 0
    for question, expected in questions.items():
        found = await memory.search_memory(app_name=APP, user_id=USER, query=question)
        texts = [entry.content.parts[0].text for entry in found.memories]
        hits += bool(texts) and texts[0] == expected
    return hits / len(questions)


async def _remember_conversations(client, conversations) -> None:
    for session_id, texts in conversations.items():
        await client.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": session_id})
        for text in texts:
            await client.post(
                f"/apps/{APP}/users/{USER}/sessions/{session_id}/events",
                json={"author": "user", "content": {"role": "user", "parts": [{"text": text}]}},
            )
        await client.post(f"/apps/{APP}/users/{USER}/memory", json={"sessionId": session_id})


async def _our_hit_rate(client, conversations, questions) -> float:
    await _remember_conversations(client, conversations)
    hits = 0
    for question, expected in questions.items():
        response = await client.get(
            f"/apps/{APP}/users/{USER}/memory", params={"query": question, "limit": 10}
        )
        texts = [memory["content"]["parts"][0]["text"] for memory in response.json()["memories"]]
        hits += bool(texts) and texts[0] == expected
    return hits / len(questions)


@pytest.mark.parametrize("labelled_set", list(LABELLED_SETS))
async def test_full_text_search_ranks_better_than_adk_word_matching(client, request, labelled_set):
    conversations, questions = LABELLED_SETS[labelled_set]
    ours = await _our_hit_rate(client, conversations, questions)
    adk = await _adk_hit_rate(conversations, questions)
    backend = request.node.callspec.params["database_url"]
    print(
        f"\nhit rate at 1 on {len(questions)} {labelled_set} questions ({backend}): "
        f"ours {ours:.2f}, ADK {adk:.2f}"
    )
    assert ours >= MINIMUM_HIT_RATE
    assert ours > adk


@pytest.mark.parametrize(("labelled_set", "question"), ALL_QUESTIONS)
async def test_each_labelled_question_finds_its_fact_in_the_top_three(
    client, labelled_set, question
):
    conversations, questions = LABELLED_SETS[labelled_set]
    await _remember_conversations(client, conversations)
    response = await client.get(
        f"/apps/{APP}/users/{USER}/memory", params={"query": question, "limit": 3}
    )
    texts = [memory["content"]["parts"][0]["text"] for memory in response.json()["memories"]]
    assert questions[question] in texts
