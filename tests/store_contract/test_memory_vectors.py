"""Store contract: memories waiting for a model's vectors, storing them, and
the two first passes of a search (keyword row ids, nearest by sign bits)
with the rows read back in the order asked."""

import numpy as np

from session_state.memory.domain import VectorQuery
from session_state.memory.embedding import StoredVector, stored_vector
from session_state.stores import Store

from .scenes import APP, LIMIT, memory

MODEL = "contract-model"


def _vector(*signs: float) -> StoredVector:
    return stored_vector(np.array(signs, dtype=np.float32))


TRIES = 3


async def _claim(
    store: Store,
    app_name: str | None,
    user_id: str | None,
    *,
    limit: int = 100,
    now: float = 1000.0,
    until: float = 1000.0,
    model: str = MODEL,
) -> list[tuple[int, str]]:
    """Claims until `until`: by default already expired, so that a row can
    be claimed again at once."""
    return await store.claim_memories_to_embed(
        model, limit, app_name, user_id, now=now, until=until, max_tries=TRIES
    )


async def _ids(store: Store, user_id: str) -> dict[str, int]:
    return {text: row for row, text in await _claim(store, APP, user_id)}


async def _waiting(store: Store, app_name: str | None, user_id: str | None, model: str = MODEL):
    return (await store.count_memories_to_embed(model, app_name, user_id, TRIES)).waiting


async def test_memories_wait_for_the_models_vectors_in_id_order(store: Store):
    await store.add_memories(APP, "ada", [memory("m1", "alpha"), memory("m2", "beta")])
    await store.add_memories(APP, "ada", [memory("m3", "gamma")])
    await store.add_memories(APP, "bob", [memory("b1", "alpha")])

    waiting = await _claim(store, APP, "ada")
    assert [text for _, text in waiting] == ["alpha", "beta", "gamma"]
    assert len(await _claim(store, None, None)) == 4
    assert await _waiting(store, APP, None) == 4
    assert await _waiting(store, APP, "ada") == 3
    assert await _waiting(store, "other-app", None) == 0

    signs = {"alpha": (1.0,) * 8, "beta": (1.0,) * 4 + (-1.0,) * 4, "gamma": (-1.0,) * 8}
    await store.store_embeddings(MODEL, [(row, _vector(*signs[text])) for row, text in waiting])

    assert await _waiting(store, APP, "ada") == 0
    assert await _waiting(store, APP, "bob") == 1
    # Another model's vectors are not this one's: all wait for it.
    assert await _waiting(store, APP, "ada", "other-model") == 3


async def test_a_claimed_memory_is_not_claimed_again_until_its_claim_ends(store: Store):
    await store.add_memories(APP, "ada", [memory(f"m{n}", f"text {n}") for n in range(5)])

    first = await _claim(store, APP, "ada", limit=2, until=2000.0)
    second = await _claim(store, APP, "ada", limit=10, until=2000.0)
    # Each row once, in id order, at most `limit`.
    assert [text for _, text in first] == ["text 0", "text 1"]
    assert [text for _, text in second] == ["text 2", "text 3", "text 4"]
    assert await _claim(store, APP, "ada", now=1999.0) == []
    # Still waiting (claimed is not embedded).
    assert await _waiting(store, APP, "ada") == 5

    # A released claim, or one that ran out, may be taken again.
    await store.release_memories_to_embed([row for row, _ in first])
    assert await _claim(store, APP, "ada", now=1999.0) == first
    assert len(await _claim(store, APP, "ada", now=2000.0)) == 5


async def test_a_text_refused_too_often_is_given_up_on_until_retried(store: Store):
    await store.add_memories(APP, "ada", [memory("m1", "fine"), memory("m2", "refused")])
    rows = await _ids(store, "ada")

    for attempt in range(TRIES):
        await store.refuse_memories_to_embed([rows["refused"]], retry_at=1500.0 + attempt)
        # Not claimed again before its retry time.
        assert [text for _, text in await _claim(store, APP, "ada", now=1400.0)] == ["fine"]
    # Given up on: counted apart, never claimed.
    counted = await store.count_memories_to_embed(MODEL, APP, "ada", TRIES)
    assert (counted.waiting, counted.given_up) == (1, 1)
    assert [text for _, text in await _claim(store, APP, "ada", now=9999.0)] == ["fine"]

    # reindex tries it again; a vector stored clears the refusals.
    assert await store.retry_refused_embeddings(MODEL, APP, "ada") == 1
    assert [text for _, text in await _claim(store, APP, "ada")] == ["fine", "refused"]
    await store.refuse_memories_to_embed([rows["refused"]], retry_at=0.0)
    await store.store_embeddings(MODEL, [(rows["refused"], _vector(1.0, -1.0))])
    counted = await store.count_memories_to_embed(MODEL, APP, "ada", TRIES)
    assert (counted.waiting, counted.given_up) == (1, 0)
    assert await store.retry_refused_embeddings(MODEL, APP, "ada") == 0


async def test_vectors_of_rows_deleted_meanwhile_are_skipped(store: Store):
    await store.add_memories(APP, "ada", [memory("m1", "alpha"), memory("m2", "beta")])
    rows = await _ids(store, "ada")
    await store.forget_memory(APP, "ada", "m1")

    await store.store_embeddings(MODEL, [(row, _vector(1.0, -1.0)) for row in rows.values()])

    assert await _waiting(store, APP, "ada") == 0
    assert await _claim(store, APP, "ada") == []


async def test_candidates_are_the_keyword_matches_and_the_nearest_of_the_same_model(
    store: Store,
):
    texts = {"m1": "alpha train", "m2": "beta bus", "m3": "gamma train bus", "m4": "delta"}
    await store.add_memories(APP, "ada", [memory(event, text) for event, text in texts.items()])
    await store.add_memories(APP, "bob", [memory("b1", "alpha train")])
    rows = await _ids(store, "ada")
    signs = {
        "alpha train": (1.0,) * 8,
        "beta bus": (1.0,) * 4 + (-1.0,) * 4,
        "gamma train bus": (-1.0,) * 8,
    }
    embedded = [(rows[text], _vector(*sign)) for text, sign in signs.items()]
    await store.store_embeddings(MODEL, embedded)
    await store.store_embeddings("other-model", [(rows["delta"], _vector(*(1.0,) * 8))])
    bob = await _ids(store, "bob")
    await store.store_embeddings(MODEL, [(bob["alpha train"], _vector(*(1.0,) * 8))])

    question = _vector(*(1.0,) * 7, -1.0)  # bits 11111110: alpha 1 away, beta 3, gamma 7
    found = await store.memory_candidates(
        APP, "ada", "train bus", 10, VectorQuery(MODEL, question.bits, keep=2)
    )

    # Every term first: "gamma train bus" holds both.
    assert found.keyword[0] == (rows["gamma train bus"], True)
    assert {row for row, _ in found.keyword} == {
        rows["gamma train bus"],
        rows["alpha train"],
        rows["beta bus"],
    }
    # Of this user and this model only, the two nearest, with their components.
    stored = dict(embedded)
    assert {row for row, _ in found.nearest} == {rows["alpha train"], rows["beta bus"]}
    for row, components in found.nearest:
        assert components == stored[row].components

    keyword_only = await store.memory_candidates(APP, "ada", "train", 1, None)
    assert len(keyword_only.keyword) == 1 and keyword_only.nearest == []


async def test_memories_are_read_back_by_row_id_in_the_order_asked(store: Store):
    await store.add_memories(APP, "ada", [memory("m1", "alpha"), memory("m2", "beta")])
    await store.add_memories(APP, "bob", [memory("b1", "bob's")])
    ada, bob = await _ids(store, "ada"), await _ids(store, "bob")
    order = [ada["beta"], bob["bob's"], ada["alpha"]]

    # Another user's rows are never read.
    assert [m.text for _, m in await store.read_memories(APP, "ada", order, LIMIT)] == [
        "beta",
        "alpha",
    ]
    # The budget cuts the list, but the first always comes.
    assert [m.text for _, m in await store.read_memories(APP, "ada", order, 1)] == ["beta"]
    await store.forget_memory(APP, "ada", "m2")
    assert [m.text for _, m in await store.read_memories(APP, "ada", order, LIMIT)] == ["alpha"]


async def test_a_users_memory_ids_are_listed_newest_first_in_pages(store: Store):
    await store.add_memories(APP, "ada", [memory(f"m{n}", f"fact {n}") for n in range(5)])
    await store.add_memories(APP, "bob", [memory("b1", "bob's")])
    ada = await _ids(store, "ada")
    newest_first = [ada[f"fact {n}"] for n in reversed(range(5))]

    assert await store.list_memory_ids(APP, "ada", None, 10) == newest_first
    first = await store.list_memory_ids(APP, "ada", None, 2)
    assert first == newest_first[:2]
    assert await store.list_memory_ids(APP, "ada", first[-1], 10) == newest_first[2:]
    assert await store.list_memory_ids(APP, "ada", min(newest_first), 10) == []
    assert await store.list_memory_ids(APP, "nobody", None, 10) == []
    await store.forget_memory(APP, "ada", "m4")
    assert await store.list_memory_ids(APP, "ada", None, 1) == [ada["fact 3"]]
