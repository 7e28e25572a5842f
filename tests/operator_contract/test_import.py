"""Operator store contract: an import transaction finds rows, expired or
not, and writes whole rows as they were exported, readable then by the
API's stores; it commits when its block ends and rolls back on any error;
an insert onto a taken key raises AlreadyStored and the transaction rolls
back, also when another import took the key meanwhile."""

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace

import pytest

from session_state.admin.store import AlreadyStored, ImportTransaction, OperatorStore
from session_state.langgraph.checkpoints.domain import CheckpointQuery, ThreadKey, ThreadOwner
from session_state.langgraph.store.domain import ScanBudget
from session_state.stores import Store

from ..checkpoint_contract.scenes import checkpoint, write
from ..store_contract.scenes import event, key
from .scenes import (
    APP,
    NO_ROWS,
    NOW,
    collect,
    forgotten,
    import_sessions,
    item,
    memory,
    session,
    thread_record,
)

Insert = Callable[[ImportTransaction], Awaitable[None]]


async def test_a_session_is_found_as_it_was_inserted_expired_or_not(
    operator: OperatorStore, store: Store
):
    live = replace(
        session("s1", state={"a": [1, None]}, labels={"env": "prod"}, revision=3),
        initial_state={"a": 0},
        ttl_seconds=60.0,
        expire_time=NOW + 60,
    )
    expired = session("s2", expire_time=NOW - 1)
    await import_sessions(operator, live, expired)

    async with operator.importing() as transaction:
        found = [await transaction.find_session(record.key) for record in (live, expired)]
        missing = await transaction.find_session(key("never", "ada", APP))

    assert found == [live, expired]
    assert missing is None
    # The API's store reads the row as written.
    row = await store.read_session(live.key, NOW)
    assert row is not None and (row.revision, row.update_time) == (3, NOW)
    assert await store.read_initial_state(live.key, NOW) == {"a": 0}


async def test_events_values_and_memories_are_read_back_in_the_transaction(
    operator: OperatorStore,
):
    at = key("s1", "ada", APP)
    async with operator.importing() as transaction:
        await transaction.insert_session(session("s1"))
        await transaction.insert_events(at, [(1, event("e1")), (2, event("e2"))])
        await transaction.insert_values(APP, None, {"currency": "eur", "n": 1})
        await transaction.insert_values(APP, "ada", {"seat": {"row": 3}})
        await transaction.insert_memory(memory("e1"))
        await transaction.insert_forgotten(forgotten("m9"))

        data = await transaction.stored_event_data(at, [2, 1, 7])
        app_values = await transaction.stored_values(APP, None, ["currency", "missing"])
        user_values = await transaction.stored_values(APP, "ada", ["seat", "currency"])
        other_user = await transaction.stored_values(APP, "bob", ["seat"])
        found_memory = await transaction.find_memory(APP, "ada", "s1", "e1")
        no_memory = await transaction.find_memory(APP, "bob", "s1", "e1")
        is_forgotten = await transaction.is_forgotten(forgotten("m9"))
        not_forgotten = await transaction.is_forgotten(forgotten("m9", "bob"))

    assert data == {1: event("e1").data, 2: event("e2").data}
    assert (app_values, user_values, other_user) == ({"currency": "eur"}, {"seat": {"row": 3}}, {})
    assert (found_memory, no_memory) == (memory("e1"), None)
    assert (is_forgotten, not_forgotten) == (True, False)


async def test_a_thread_is_moved_whole_and_readable_by_the_checkpoint_store(
    operator: OperatorStore, store: Store
):
    checkpoints = store.checkpoint_store()
    source = ThreadKey(APP, "t1")
    await checkpoints.put_checkpoint(
        source,
        ThreadOwner("ada", None),
        checkpoint("c1", versions={"a": "1"}, values={"a": "x"}),
        NOW,
    )
    await checkpoints.put_writes(
        source, ThreadOwner("ada", None), "", "c1", [write("t", 0, "w")], False, NOW
    )
    exported = await operator.thread_rows(APP, "t1")

    async with operator.importing() as transaction:
        found = await transaction.find_thread(APP, "t1")
        assert found is not None
        await transaction.insert_thread(replace(found, thread_id="t2"), exported)
        copied_rows = await transaction.thread_rows(APP, "t2")
        expired = thread_record("t3", expire_time=NOW - 1)
        await transaction.insert_thread(expired, NO_ROWS)
        found_expired = await transaction.find_thread(APP, "t3")
        missing = await transaction.find_thread(APP, "never")

    assert copied_rows == exported
    assert (found_expired, missing) == (expired, None)
    query = CheckpointQuery()
    moved, _ = await checkpoints.list_checkpoints(ThreadKey(APP, "t2"), query, 10**6, NOW)
    original, _ = await checkpoints.list_checkpoints(source, query, 10**6, NOW)
    assert moved == [replace(checkpoint, thread_id="t2") for checkpoint in original]


async def test_a_store_item_is_found_expired_or_not_and_searchable_by_its_words(
    operator: OperatorStore, store: Store
):
    live = item("ada.trips", "paris", {"text": "A flight to Paris"})
    expired = item("ada.trips", "rome", expire_time=NOW - 1)
    async with operator.importing() as transaction:
        for one in (live, expired):
            await transaction.insert_store_item(one)
        found = [await transaction.find_store_item(APP, "ada.trips", k) for k in ("paris", "rome")]
        missing = await transaction.find_store_item(APP, "ada.trips", "never")

    assert (found, missing) == ([live, expired], None)
    async with store.item_storage().transaction(write=False) as items:
        searched = await items.search(
            APP, "ada", NOW, 10, 0, None, ["paris", "flight"], ScanBudget(100)
        )
    assert [one.key for one in searched] == ["paris"]


async def test_a_transaction_that_fails_writes_nothing(operator: OperatorStore):
    with pytest.raises(RuntimeError):
        async with operator.importing() as transaction:
            await transaction.insert_session(session("s1"))
            await transaction.insert_values(APP, None, {"k": 1})
            raise RuntimeError("the import stops")

    assert await collect(operator.live_sessions(None, None, NOW)) == []
    assert await collect(operator.app_state_entries(None)) == []


# Each insert and one that takes the same key (the first is stored before).
TAKEN: dict[str, tuple[Insert, Insert]] = {
    "session": (
        lambda t: t.insert_session(session("s9")),
        lambda t: t.insert_session(session("s9", state={"other": 1})),
    ),
    "event seq": (
        lambda t: t.insert_events(key("s1", "ada", APP), [(1, event("e1"))]),
        lambda t: t.insert_events(key("s1", "ada", APP), [(2, event("e2")), (1, event("e3"))]),
    ),
    "event id": (
        lambda t: t.insert_events(key("s1", "ada", APP), [(1, event("e1"))]),
        lambda t: t.insert_events(key("s1", "ada", APP), [(2, event("e1"))]),
    ),
    "app value": (
        lambda t: t.insert_values(APP, None, {"k": 1}),
        lambda t: t.insert_values(APP, None, {"j": 2, "k": 2}),
    ),
    "user value": (
        lambda t: t.insert_values(APP, "ada", {"k": 1}),
        lambda t: t.insert_values(APP, "ada", {"k": 2}),
    ),
    "memory": (
        lambda t: t.insert_memory(memory("e1")),
        lambda t: t.insert_memory(replace(memory("e1"), text="other")),
    ),
    "forgotten memory": (
        lambda t: t.insert_forgotten(forgotten("m1")),
        lambda t: t.insert_forgotten(forgotten("m1")),
    ),
    "thread": (
        lambda t: t.insert_thread(thread_record("t1"), NO_ROWS),
        lambda t: t.insert_thread(thread_record("t1", "bob"), NO_ROWS),
    ),
    "store item": (
        lambda t: t.insert_store_item(item("ada", "k")),
        lambda t: t.insert_store_item(item("ada", "k", {"other": 1})),
    ),
}


@pytest.mark.parametrize("kind", list(TAKEN))
async def test_an_insert_onto_a_taken_key_is_already_stored_and_rolls_back(
    operator: OperatorStore, kind: str
):
    first, taking = TAKEN[kind]
    async with operator.importing() as transaction:
        await transaction.insert_session(session("s1"))
        await first(transaction)

    with pytest.raises(AlreadyStored):
        async with operator.importing() as transaction:
            await transaction.insert_session(session("fresh"))
            await taking(transaction)

    async with operator.importing() as transaction:
        assert await transaction.find_session(key("fresh", "ada", APP)) is None
        assert await transaction.stored_values(APP, None, ["j"]) == {}


async def test_two_imports_of_one_session_at_once_store_it_once(
    operator: OperatorStore, other_operator: OperatorStore, backend: str
):
    # On PostgreSQL both look it up before either inserts; SQLite's importer
    # holds the write lock from BEGIN, so there the second looks it up after
    # the first committed.
    looked_up = asyncio.Barrier(2) if backend == "postgresql" else None

    async def import_once(importer: OperatorStore, revision: int) -> str:
        record = session("s1", revision=revision)
        async with importer.importing() as transaction:
            found = await transaction.find_session(record.key)
            if looked_up is not None:
                await looked_up.wait()
            if found is not None:
                return "found"
            await transaction.insert_session(record)
            return "inserted"

    outcomes = await asyncio.gather(
        import_once(operator, 0), import_once(other_operator, 1), return_exceptions=True
    )

    inserted = [index for index, outcome in enumerate(outcomes) if outcome == "inserted"]
    (other,) = [outcome for outcome in outcomes if outcome != "inserted"]
    assert len(inserted) == 1, outcomes
    # Taken since it looked: the key surfaces as AlreadyStored, not a driver's error.
    assert isinstance(other, AlreadyStored) if looked_up else other == "found", outcomes
    (stored,) = await collect(operator.live_sessions(None, None, NOW))
    assert stored.revision == inserted[0]
