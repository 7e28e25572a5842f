"""Operator store contract: an export reads every row of the app (and user)
when given, of every app when not, in key order, live sessions, threads
and store items only, and misses no row however many pages it takes;
events are counted and read in bounded batches up to a seq; a thread's
rows are read whole."""

from session_state.admin.store import OperatorStore, StateEntry
from session_state.langgraph.checkpoints.domain import ThreadKey, ThreadOwner
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
)


async def test_state_entries_are_read_by_app_and_user_in_key_order(operator: OperatorStore):
    async with operator.importing() as transaction:
        await transaction.insert_values("beta", None, {"k": 1})
        await transaction.insert_values("alpha", None, {"z": [1], "a": {"n": None}})
        await transaction.insert_values("alpha", "bob", {"k": "b"})
        await transaction.insert_values("alpha", "ada", {"k": "a", "j": True})
        await transaction.insert_values("beta", "ada", {"k": 2.5})

    assert await collect(operator.app_state_entries("alpha")) == [
        StateEntry("alpha", None, "a", {"n": None}),
        StateEntry("alpha", None, "z", [1]),
    ]
    assert [(e.app_name, e.key) for e in await collect(operator.app_state_entries(None))] == [
        ("alpha", "a"),
        ("alpha", "z"),
        ("beta", "k"),
    ]
    assert await collect(operator.user_state_entries("alpha", "ada")) == [
        StateEntry("alpha", "ada", "j", True),
        StateEntry("alpha", "ada", "k", "a"),
    ]
    every_user = await collect(operator.user_state_entries(None, None))
    assert [(e.app_name, e.user_id, e.key) for e in every_user] == [
        ("alpha", "ada", "j"),
        ("alpha", "ada", "k"),
        ("alpha", "bob", "k"),
        ("beta", "ada", "k"),
    ]
    assert [e.app_name for e in await collect(operator.user_state_entries(None, "ada"))] == [
        "alpha",
        "alpha",
        "beta",
    ]
    assert await collect(operator.app_state_entries("nobody")) == []


async def test_an_export_misses_no_row_across_its_pages(operator: OperatorStore):
    # Thousands of rows under a three-column key: several pages of any sensible size.
    users = ["ada", "bob", "cy"]
    async with operator.importing() as transaction:
        for user in users:
            await transaction.insert_values(APP, user, {f"k{n:04}": n for n in range(700)})

    entries = await collect(operator.user_state_entries(APP, None))

    assert [(e.user_id, e.key) for e in entries] == [
        (user, f"k{n:04}") for user in users for n in range(700)
    ]


async def test_live_sessions_are_whole_rows_in_key_order(operator: OperatorStore):
    rows = [
        session("s2", "bob", state={"a": 1}, labels={"env": "prod"}, revision=4),
        session("s1", "bob", expire_time=NOW + 1),
        session("s1", "ada", app_name="alpha"),
        session("gone", "ada", expire_time=NOW),
    ]
    await import_sessions(operator, *rows)

    live = await collect(operator.live_sessions(None, None, NOW))

    assert live == [rows[2], rows[1], rows[0]]
    assert await collect(operator.live_sessions(APP, "bob", NOW + 1)) == [rows[0]]
    assert await collect(operator.live_sessions(None, "ada", NOW)) == [rows[2]]
    assert await collect(operator.live_sessions(APP, "ada", NOW - 1)) == [rows[3]]


async def test_events_are_counted_and_read_in_batches_up_to_a_seq(
    operator: OperatorStore, store: Store
):
    at = key("s1", "ada", APP)
    await import_sessions(operator, session("s1"))
    async with operator.importing() as transaction:
        await transaction.insert_events(at, [(seq, event(f"e{seq}")) for seq in range(1, 6)])

    assert await operator.count_events(at, 5) == 5
    assert await operator.count_events(at, 3) == 3
    assert await operator.count_events(at, 0) == 0
    assert await operator.count_events(key("never", "ada", APP), 5) == 0
    batch = await operator.read_events(at, 1, 4, 2)
    assert [stored.seq for stored in batch] == [2, 3]
    assert [stored.seq for stored in await operator.read_events(at, 3, 4, 10)] == [4]
    assert await operator.read_events(at, 5, 9, 10) == []
    # As the API's store reads them.
    found = await store.find_events(at, ["e2", "e3"])
    assert [stored.data for stored in batch] == [found["e2"].data, found["e3"].data]


async def test_memories_and_forgotten_memories_are_read_by_app_and_user(
    operator: OperatorStore,
):
    memories = [memory("e2"), memory("e1"), memory("e1", "bob"), memory("e1", app_name="alpha")]
    forgotten_ones = [forgotten("m2"), forgotten("m1"), forgotten("m1", "bob")]
    async with operator.importing() as transaction:
        for one in memories:
            await transaction.insert_memory(one)
        for gone in forgotten_ones:
            await transaction.insert_forgotten(gone)

    # A memory's key is its number, given as it was stored.
    assert await collect(operator.memories(APP, "ada")) == memories[:2]
    assert await collect(operator.memories(None, None)) == memories
    assert await collect(operator.memories("alpha", "ada")) == memories[3:]
    assert await collect(operator.forgotten_memories(APP, "ada")) == [
        forgotten_ones[1],
        forgotten_ones[0],
    ]
    assert await collect(operator.forgotten_memories(APP, None)) == [
        forgotten_ones[1],
        forgotten_ones[0],
        forgotten_ones[2],
    ]
    assert await collect(operator.forgotten_memories("alpha", None)) == []


async def test_live_threads_and_their_rows_whole(operator: OperatorStore, store: Store):
    checkpoints = store.checkpoint_store()
    thread = ThreadKey(APP, "t1")
    ada = ThreadOwner("ada", 60)
    await checkpoints.put_checkpoint(
        thread, ada, checkpoint("c2", versions={"a": "2"}, values={"a": "x"}), NOW
    )
    await checkpoints.put_checkpoint(
        thread, ada, checkpoint("c1", ns="child", versions={"a": "1"}, values={"a": "y"}), NOW
    )
    await checkpoints.put_writes(thread, ada, "", "c2", [write("t", 1, "w1")], False, NOW)
    await checkpoints.put_writes(thread, ada, "", "c2", [write("t", 0, "w0")], False, NOW)
    await checkpoints.put_checkpoint(
        ThreadKey(APP, "t2"), ThreadOwner("bob", None), checkpoint("c1"), NOW
    )

    threads = await collect(operator.live_threads(APP, None, NOW))
    rows = await operator.thread_rows(APP, "t1")

    assert [(t.thread_id, t.user_id, t.expire_time, t.ttl_seconds) for t in threads] == [
        ("t1", "ada", NOW + 60, 60),
        ("t2", "bob", None, None),
    ]
    assert [t.thread_id for t in await collect(operator.live_threads(APP, "ada", NOW + 60))] == []
    assert [t.thread_id for t in await collect(operator.live_threads(None, "bob", NOW))] == ["t2"]
    # Each list in primary-key order.
    assert [(r.checkpoint_ns, r.checkpoint_id) for r in rows.checkpoints] == [
        ("", "c2"),
        ("child", "c1"),
    ]
    assert [(v.checkpoint_ns, v.version, v.value) for v in rows.channel_values] == [
        ("", "2", b"x"),
        ("child", "1", b"y"),
    ]
    assert [(w.idx, w.value) for w in rows.writes] == [(0, b"w0"), (1, b"w1")]
    assert await operator.thread_rows(APP, "never") == NO_ROWS


async def test_live_store_items_in_key_order(operator: OperatorStore):
    items = [
        item("ada.prefs", "seat"),
        item("ada", "meal", expire_time=NOW + 1),
        item("ada", "gone", expire_time=NOW),
        item("bob", "seat", {"nested": {"n": [1, None]}}),
        item("ada", "seat", app_name="alpha"),
    ]
    async with operator.importing() as transaction:
        for one in items:
            await transaction.insert_store_item(one)

    assert await collect(operator.live_store_items(None, None, NOW)) == [
        items[4],
        items[1],
        items[0],
        items[3],
    ]
    assert await collect(operator.live_store_items(APP, "ada", NOW + 1)) == [items[0]]
    assert await collect(operator.live_store_items(APP, "bob", NOW)) == [items[3]]
    assert [i.key for i in await collect(operator.live_store_items(APP, "ada", NOW - 1))] == [
        "gone",
        "meal",
        "seat",
    ]
