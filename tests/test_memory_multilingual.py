# ruff: noqa: RUF001 (full-width letters and CJK punctuation on purpose)
"""Memory search in every script, with the same answers on both backends:
words for scripts written with spaces (never a part of a word), pairs of
characters for scripts written without them, text normalised (NFKC, case
folding) on both sides."""

import importlib.util
import unicodedata
from pathlib import Path

import pytest

from session_state.memory.search_text import (
    MAX_INDEXED_GRAMS,
    MAX_QUERY_TERMS,
    query_terms,
    search_text,
)

APP, USER = "polyglot", "ada"


async def _remember(client, texts: list[str], session_id: str = "s1") -> None:
    await client.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": session_id})
    for text in texts:
        response = await client.post(
            f"/apps/{APP}/users/{USER}/sessions/{session_id}/events",
            json={"author": "user", "content": {"role": "user", "parts": [{"text": text}]}},
        )
        assert response.status_code == 201, response.text
    response = await client.post(f"/apps/{APP}/users/{USER}/memory", json={"sessionId": session_id})
    assert response.status_code == 200, response.text


async def _search(client, query: str, **params) -> list[str]:
    response = await client.get(
        f"/apps/{APP}/users/{USER}/memory", params={"query": query, **params}
    )
    assert response.status_code == 200, response.text
    return [memory["content"]["parts"][0]["text"] for memory in response.json()["memories"]]


DECOMPOSED_CAFE = unicodedata.normalize("NFD", "Mon Café préféré est à Montréal.")
FACTS = [
    "私の名前は太郎です",
    "私はPythonでADKを使っています",
    "我喜欢机器学习",
    "我有一只猫",
    "김민수는 서울에 살아요",
    "Меня зовут Иван Петров",
    DECOMPOSED_CAFE,
    "ฉันชอบภาษาไทยมาก",
    "The weather was nice today.",
]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("太郎", "私の名前は太郎です"),
        ("名前は太郎", "私の名前は太郎です"),
        ("Python", "私はPythonでADKを使っています"),
        ("adk", "私はPythonでADKを使っています"),
        ("ＰＹＴＨＯＮ", "私はPythonでADKを使っています"),  # full-width letters
        ("机器学习", "我喜欢机器学习"),
        ("김민수", "김민수는 서울에 살아요"),
        ("서울에서", "김민수는 서울에 살아요"),
        ("иван", "Меня зовут Иван Петров"),
        ("ИВАН", "Меня зовут Иван Петров"),
        ("Café", DECOMPOSED_CAFE),  # composed query, decomposed memory
        (unicodedata.normalize("NFD", "PRÉFÉRÉ"), DECOMPOSED_CAFE),
        ("ภาษาไทย", "ฉันชอบภาษาไทยมาก"),
    ],
)
async def test_each_script_finds_its_memory(client, query, expected):
    await _remember(client, FACTS)
    assert (await _search(client, query))[:1] == [expected]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("猫", ["我有一只猫"]),  # the last character of its run
        ("机", ["我喜欢机器学习"]),  # inside its run
        ("김", ["김민수는 서울에 살아요"]),
        ("私", ["私の名前は太郎です", "私はPythonでADKを使っています"]),
    ],
)
async def test_a_single_character_query_finds_the_runs_holding_it(client, query, expected):
    await _remember(client, FACTS)
    assert sorted(await _search(client, query)) == sorted(expected)


@pytest.mark.parametrize("query", ["thon", "pyth", "Петр", "caf", "学机", "民金"])
async def test_a_part_of_a_word_or_an_absent_pair_finds_nothing(client, query):
    # A rule of the keyword side: search by meaning may find what is near
    # (学机 holds the characters of 机器学习), so it is asked for alone.
    await _remember(client, [*FACTS, "Python is my favourite language."])
    assert await _search(client, query, mode="keyword") == []


async def test_memories_written_decomposed_and_composed_are_both_found(client):
    composed = "Le café de Zoë"
    await _remember(client, [composed, unicodedata.normalize("NFD", "Un autre café, Zoë")])
    for query in ("café zoë", unicodedata.normalize("NFD", "CAFÉ ZOË")):
        assert sorted(await _search(client, query)) == sorted(
            [composed, unicodedata.normalize("NFD", "Un autre café, Zoë")]
        )


async def test_more_matching_terms_rank_first(client):
    await _remember(
        client,
        [
            "机器学习 is what I study.",
            "I write Python every day.",
            "我用Python做机器学习",
        ],
    )
    found = await _search(client, "Python 机器学习")
    assert found[0] == "我用Python做机器学习"
    assert sorted(found[1:]) == ["I write Python every day.", "机器学习 is what I study."]


async def test_a_long_cjk_question_is_bounded_and_still_answers(client):
    await _remember(client, FACTS)
    question = "我喜欢机器学习" + "天" * 1990
    assert len(question) <= 2000
    assert await _search(client, question, mode="keyword") == ["我喜欢机器学习"]
    # By meaning too, "天" (day) is near other memories; the fact stays first.
    assert (await _search(client, question))[0] == "我喜欢机器学习"


@pytest.mark.parametrize(
    "query",
    ['"太郎', "太郎 OR", "NOT 机器", "'太郎'", "太郎:*", "!机器", "猫*", "(김민수", "-", "&|"],
)
async def test_operator_characters_around_any_script_are_just_text(client, query):
    await _remember(client, FACTS)
    response = await client.get(f"/apps/{APP}/users/{USER}/memory", params={"query": query})
    assert response.status_code == 200, (query, response.text)


def test_the_indexed_form_keeps_words_and_pairs_apart():
    indexed = search_text("私はPythonでADKを使っています")
    assert indexed.words == "python adk"
    assert indexed.grams.split() == [
        "私は", "は", "で", "を使", "使っ", "って", "てい", "いま", "ます", "す"
    ]  # fmt: skip


def test_thai_marks_stay_on_their_consonant():
    assert search_text("ที่นี่").grams.split() == ["ที่นี่", "นี่"]


def test_query_terms_are_distinct_bounded_and_skip_stop_words():
    terms = query_terms("What is the name of my cat? cat CAT 猫")
    assert terms.words == ("name", "cat")
    assert terms.prefixes == ("猫",)
    long = query_terms("".join(chr(0x4E00 + index) for index in range(2000)))
    assert len(long.grams) == MAX_QUERY_TERMS
    assert not query_terms("?! the of -")


def test_the_pairs_indexed_per_memory_are_bounded():
    text = " ".join(
        chr(0x4E00 + index // 300) + chr(0x4E00 + index % 300)
        for index in range(MAX_INDEXED_GRAMS + 500)
    )
    assert len(set(search_text(text).grams.split())) == MAX_INDEXED_GRAMS


def test_the_migration_backfills_with_the_form_the_app_indexes():
    # Migration 0006 holds a frozen copy of search_text. When the app's copy
    # changes, a new migration must rebuild the index (and this test moves to it).
    path = Path(__file__).parent.parent / "migrations/versions/0006_multilingual_search.py"
    spec = importlib.util.spec_from_file_location("migration_0006", path)
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    # ASCII texts take a shorter path (every ASCII character, "_" and digits
    # included): the same form.
    ascii_texts = ["".join(map(chr, range(128))), "snake_case HTTP2 don't 3.14 e-mail\tTab"]
    for text in [*FACTS, *ascii_texts, "ที่นี่ ＡＢＣ Straße", "x" * 3, "一" * 5 + "二三"]:
        indexed = search_text(text)
        assert migration._search_text(text) == {
            "search_words": indexed.words,
            "search_grams": indexed.grams,
        }
