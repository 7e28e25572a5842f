"""Store contract: memories waiting for a model's vectors, storing them, and
the two first passes of a search (keyword row ids, nearest by sign bits)
with the rows read back in the order asked."""

import numpy as np

from session_state.db.store import Store
from session_state.domain import VectorQuery
from session_state.embedding import StoredVector, stored_vector

from .scenes import APP, LIMIT, memory

MODEL = "contract-model"


def _vector(*signs: float) -> StoredVector:
    return stored_vector(np.array(signs, dtype=np.float32))


async def _ids(store: Store, user_id: str) -> dict[str, int]:
    waiting = await store.memories_to_embed(MODEL, 0, 100, APP, user_id)
    return {text: row for row, text in waiting}


async def test_memories_wait_for_the_models_vectors_in_id_order(store: Store):
    await store.add_memories(APP, "ada", [memory("m1", "alpha"), memory("m2", "beta")])
    await store.add_memories(APP, "ada", [memory("m3", "gamma")])
    await store.add_memories(APP, "bob", [memory("b1", "alpha")])

    waiting = await store.memories_to_embed(MODEL, 0, 100, APP, "ada")
    assert [text for _, text in waiting] == ["alpha", "beta", "gamma"]
    # Resumable: after a row id, and at most `limit`.
    later = await store.memories_to_embed(MODEL, waiting[0][0], 1, APP, "ada")
    assert later == [waiting[1]]
    assert len(await store.memories_to_embed(MODEL, 0, 100, None, None)) == 4
    assert await store.count_memories_to_embed(MODEL, APP, None) == 4
    assert await store.count_memories_to_embed(MODEL, APP, "ada") == 3
    assert await store.count_memories_to_embed(MODEL, "other-app", None) == 0

    signs = {"alpha": (1.0,) * 8, "beta": (1.0,) * 4 + (-1.0,) * 4, "gamma": (-1.0,) * 8}
    await store.store_embeddings(MODEL, [(row, _vector(*signs[text])) for row, text in waiting])

    assert await store.count_memories_to_embed(MODEL, APP, "ada") == 0
    assert await store.count_memories_to_embed(MODEL, APP, "bob") == 1
    # Another model's vectors are not this one's: all wait for it.
    assert await store.count_memories_to_embed("other-model", APP, "ada") == 3


async def test_vectors_of_rows_deleted_meanwhile_are_skipped(store: Store):
    await store.add_memories(APP, "ada", [memory("m1", "alpha"), memory("m2", "beta")])
    rows = await _ids(store, "ada")
    await store.forget_memory(APP, "ada", "m1")

    await store.store_embeddings(MODEL, [(row, _vector(1.0, -1.0)) for row in rows.values()])

    assert await store.count_memories_to_embed(MODEL, APP, "ada") == 0
    assert await store.memories_to_embed(MODEL, 0, 100, APP, "ada") == []


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
    assert [m.text for m in await store.read_memories(APP, "ada", order, LIMIT)] == [
        "beta",
        "alpha",
    ]
    # The budget cuts the list, but the first always comes.
    assert [m.text for m in await store.read_memories(APP, "ada", order, 1)] == ["beta"]
    await store.forget_memory(APP, "ada", "m2")
    assert [m.text for m in await store.read_memories(APP, "ada", order, LIMIT)] == ["alpha"]
