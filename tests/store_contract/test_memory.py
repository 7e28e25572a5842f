"""Store contract: long-term memory: ingesting a session, adding, replacing
and forgetting memories, and searching them."""

import asyncio
import json

from session_state.memory.session_ingestion import SessionIngestion
from session_state.sessions.domain import NewEvent
from session_state.sessions.state import ScopedDelta
from session_state.stores import Store

from .scenes import APP, LIMIT, NOW, append, create, event, key, memories_of, memory


async def _texts(store: Store, question: str, user_id: str = "ada") -> list[str]:
    return [
        record.text
        for record, _share in await store.search_memories(APP, user_id, question, 10, LIMIT)
    ]


async def test_ingesting_a_session_stores_each_event_once(store: Store):
    await create(store, key())
    await append(store, key(), event("e1", text="flight to Lisbon"), event("e2", text="hotel"))

    assert await store.ingest_session(key(), memories_of("s1"), NOW) == 2
    await append(store, key(), event("e3", text="flight home"))
    assert await store.ingest_session(key(), memories_of("s1"), NOW) == 1
    assert await store.ingest_session(key(), memories_of("s1"), NOW) == 0

    assert sorted(await _texts(store, "flight")) == ["flight home", "flight to Lisbon"]
    assert await store.ingest_session(key("none"), memories_of("none"), NOW) is None


async def test_added_memories_are_stored_once_and_forgotten_ones_stay_out(store: Store):
    records = [memory("m1", "museum on monday"), memory("m2", "museum tickets")]

    assert await store.add_memories(APP, "ada", records) == 2
    assert await store.add_memories(APP, "ada", records) == 0
    await store.forget_memory(APP, "ada", "m1")

    assert await store.add_memories(APP, "ada", records) == 0
    assert await _texts(store, "museum") == ["museum tickets"]


async def test_removing_a_sessions_memories_leaves_others_and_lets_them_back(store: Store):
    records = [memory("m1", "museum one", "s1"), memory("m1", "museum two", "s2")]
    await store.add_memories(APP, "ada", [*records, memory("m2", "museum three", "s1")])

    await store.remove_session_memories(APP, "ada", "s1", ["m1", "unknown"])
    assert sorted(await _texts(store, "museum")) == ["museum three", "museum two"]
    # Removed, not forgotten: the id may be taken again.
    assert await store.add_memories(APP, "ada", records[:1]) == 1


async def test_forgetting_an_unknown_memory_is_a_no_op(store: Store):
    await store.forget_memory(APP, "ada", "never")

    assert await store.add_memories(APP, "ada", [memory("never", "museum")]) == 1


async def test_replaced_memories_take_their_ids_place_even_when_forgotten(store: Store):
    await store.add_memories(APP, "ada", [memory("m1", "museum on monday")])
    await store.replace_memories(APP, "ada", [memory("m1", "museum on tuesday")])
    assert await _texts(store, "museum") == ["museum on tuesday"]

    await store.forget_memory(APP, "ada", "m1")
    assert await _texts(store, "museum") == []
    await store.replace_memories(APP, "ada", [memory("m1", "museum on friday")])
    assert await _texts(store, "museum") == ["museum on friday"]


async def test_a_search_finds_the_best_matches_of_its_user_within_its_bounds(store: Store):
    await store.add_memories(
        APP,
        "ada",
        [
            memory("m1", "train to Porto", timestamp=NOW + 1),
            memory("m2", "train and bus to Porto", timestamp=NOW + 2),
            memory("m3", "bus to Faro", timestamp=NOW + 3),
            memory("m4", "nothing related"),
        ],
    )
    await store.add_memories(APP, "bob", [memory("b1", "train to Porto")])

    # More of the question's terms first, then the newest.
    assert await _texts(store, "train bus") == [
        "train and bus to Porto", "bus to Faro", "train to Porto"
    ]  # fmt: skip
    assert len(await store.search_memories(APP, "ada", "train bus", 2, LIMIT)) == 2
    # The budget cuts the list, but the best match always comes.
    assert len(await store.search_memories(APP, "ada", "train bus", 10, 1)) == 1
    assert await _texts(store, "unknownword") == []
    assert await _texts(store, "train", "bob") == ["train to Porto"]


async def test_forgetting_a_users_memories_takes_the_forgotten_ids_too(store: Store):
    await store.add_memories(APP, "ada", [memory("m1", "museum"), memory("m2", "museum")])
    await store.add_memories(APP, "bob", [memory("m1", "museum")])
    await store.forget_memory(APP, "ada", "m1")

    await store.forget_user_memories(APP, "ada")

    assert await _texts(store, "museum") == []
    assert await _texts(store, "museum", "bob") == ["museum"]
    assert await store.add_memories(APP, "ada", [memory("m1", "museum")]) == 1


async def test_an_add_racing_a_forget_never_brings_the_id_back(store: Store, second_store: Store):
    for round_number in range(5):
        memory_id = f"m{round_number}"
        await store.add_memories(APP, "ada", [memory(memory_id, "museum")])
        await asyncio.gather(
            store.forget_memory(APP, "ada", memory_id),
            second_store.add_memories(APP, "ada", [memory(memory_id, "museum")]),
        )
        # Either order leaves it forgotten: it was stored before both.
        assert memory_id not in {
            record.event_id
            for record, _share in await store.search_memories(APP, "ada", "museum", 50, LIMIT)
        }


async def test_an_ingestion_leaves_out_and_deletes_what_a_rewind_undid(store: Store):
    await create(store, key())
    await append(store, key(), event("e1", text="flight to Lisbon"), event("e2", text="flight x"))
    assert await store.ingest_session(key(), SessionIngestion("s1", list), NOW) == 2
    marker = {
        "id": "r1",
        "invocationId": "e-r1",
        "author": "user",
        "timestamp": NOW,
        "actions": {"rewindBeforeInvocationId": "inv-e2"},
    }
    no_delta = ScopedDelta({}, {}, {})
    await append(store, key(), NewEvent("r1", "e-r1", "user", NOW, json.dumps(marker), no_delta))
    await append(store, key(), event("e3", text="flight home"))

    # The real ingestion (app.memory.session_ingestion), through the store's
    # two readings: e2 was undone, its memory goes; e3 is new.
    assert await store.ingest_session(key(), SessionIngestion("s1", list), NOW) == 1
    assert sorted(await _texts(store, "flight")) == ["flight home", "flight to Lisbon"]
