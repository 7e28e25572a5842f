"""Store contract: the first pass by meaning over sign bits the process keeps
(app.memory.first_pass) finds what the database holds: memories stored
since are found at once, deleted ones never, and what only a refresh can
see (a row embedded out of id order) within its time."""

import numpy as np

from session_state.memory.domain import VectorQuery
from session_state.memory.embedding import StoredVector, stored_vector
from session_state.memory.first_pass import KeptSignBits
from session_state.stores import Store

from .scenes import APP, memory

MODEL = "contract-model"
QUESTION = stored_vector(np.ones(16, dtype=np.float32))


def _vector(distance: int) -> StoredVector:
    """A vector `distance` sign bits away from QUESTION."""
    return stored_vector(np.array([-1.0] * distance + [1.0] * (16 - distance), dtype=np.float32))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _store(store: Store, user: str, texts: dict[str, int]) -> dict[str, int]:
    """Stores memories of `texts` (text -> its distance, or -1 for none)
    and embeds those with a distance; returns their row ids by text."""
    await store.add_memories(APP, user, [memory(text, text) for text in texts])
    claimed = await store.claim_memories_to_embed(
        MODEL, 100, APP, user, now=0.0, until=0.0, max_tries=3
    )
    rows = {text: row for row, text in claimed}
    await store.store_embeddings(
        MODEL,
        [(rows[text], _vector(distance)) for text, distance in texts.items() if distance >= 0],
    )
    return rows


async def _nearest(store: Store, kept: KeptSignBits, keep: int = 3) -> list[int]:
    query = VectorQuery(MODEL, QUESTION.bits, keep, kept)
    found = await store.memory_candidates(APP, "ada", "", 0, query)
    return [row for row, _ in found.nearest]


async def test_kept_bits_follow_memories_stored_and_deleted(store: Store):
    clock = Clock()
    kept = KeptSignBits(kept_rows=1, clock=clock)
    rows = await _store(store, "ada", {"far": 9, "near": 3, "middle": 6})
    await _store(store, "bob", {"bob's": 0})
    assert await _nearest(store, kept) == [rows["near"], rows["middle"], rows["far"]]
    assert kept.kept_users == 1

    # Stored since: found at once, without a refresh.
    rows |= await _store(store, "ada", {"nearest": 1})
    assert await _nearest(store, kept) == [rows["nearest"], rows["near"], rows["middle"]]
    # Deleted (not the newest): never a candidate, though its bits are kept
    # (until the refresh, its place among the `keep` nearest stays empty).
    await store.forget_memory(APP, "ada", "near")
    assert await _nearest(store, kept) == [rows["nearest"], rows["middle"]]
    clock.now += kept.refresh_seconds
    assert await _nearest(store, kept) == [rows["nearest"], rows["middle"], rows["far"]]
    # The newest deleted: read again.
    await store.forget_memory(APP, "ada", "nearest")
    assert await _nearest(store, kept) == [rows["middle"], rows["far"]]
    await store.forget_user_memories(APP, "ada")
    assert await _nearest(store, kept) == []
    assert kept.kept_users == 0


async def test_a_row_embedded_out_of_id_order_is_found_within_the_refresh(store: Store):
    clock = Clock()
    kept = KeptSignBits(kept_rows=1, clock=clock)
    rows = await _store(store, "ada", {"waiting": -1, "far": 9, "middle": 6})
    assert await _nearest(store, kept) == [rows["middle"], rows["far"]]

    # Embedded later, below the newest row kept: unseen until the refresh.
    await store.store_embeddings(MODEL, [(rows["waiting"], _vector(0))])
    assert await _nearest(store, kept) == [rows["middle"], rows["far"]]
    clock.now += kept.refresh_seconds
    assert await _nearest(store, kept) == [rows["waiting"], rows["middle"], rows["far"]]


async def test_bits_are_kept_only_for_users_with_many_memories_and_within_the_budget(
    store: Store,
):
    texts = {f"m{index}": index % 16 for index in range(10)}
    await _store(store, "ada", texts)
    few = KeptSignBits(kept_rows=11)
    assert len(await _nearest(store, few, keep=10)) == 10
    assert few.kept_users == 0
    # 10 rows of 8 (id) + 2 (bits) bytes: 100 bytes.
    small = KeptSignBits(kept_rows=1, kept_bytes=99)
    assert len(await _nearest(store, small, keep=10)) == 10
    assert small.kept_users == 0
    enough = KeptSignBits(kept_rows=1, kept_bytes=100)
    assert len(await _nearest(store, enough, keep=10)) == 10
    assert enough.kept_users == 1
