"""Encryption at rest of LangGraph's rows (app.langgraph.sealing,
app.langgraph.resealing), on both backends with no HTTP in between: rows
written before encryption was on are read as they are beside sealed ones,
even bytes that begin like an envelope; export opens values and import seals
them under its own key; `session-state reencrypt`'s walk seals them (and
moves them to a new first key); `reseal_batch` seals them, a batch
at a time in key order, leaves a row a server wrote while it ran as written,
and reports what it did; a type tag that would
read as sealed is refused from any writer; a value whose key is missing is
an error naming the key id."""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from session_state.admin.sql_store import SqlOperatorStore
from session_state.core.config import Settings
from session_state.core.encryption import EncryptionKeyMissing, ValueCipher
from session_state.core.errors import InvalidInput
from session_state.db.engine import create_engine
from session_state.encryption.reencrypt import reencrypt
from session_state.langgraph.checkpoints.domain import Typed
from session_state.langgraph.checkpoints.tables import lg_channel_values, lg_checkpoints, lg_writes
from session_state.langgraph.resealing import RESEALED_TABLES, reseal_batch
from session_state.langgraph.sealing import SEALED_TYPE_PREFIX
from session_state.langgraph.store.filters import compile_filter
from session_state.langgraph.store.tables import lg_store_items
from session_state.stores import Store

from .checkpoint_contract.scenes import (
    APP,
    OWNER,
    checkpoint,
    listed,
    thread,
    values_of,
    write,
    writes_of,
)
from .contract_backends import backend, database_url, store
from .encryption_keys import cipher_of, key_set
from .item_storage_contract.scenes import APP as STORE_APP
from .item_storage_contract.scenes import NOW, found_keys, get, put, search

__all__ = ["backend", "database_url", "store"]

# Plaintext bytes a serializer may well write: they begin as an envelope does.
LOOKS_SEALED = b"SS1\x02k1 not an envelope"


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    opened = create_engine(Settings(database_url=database_url))
    yield opened
    await opened.dispose()


async def _column(engine: AsyncEngine, column: Any) -> list[Any]:
    async with engine.connect() as connection:
        return list((await connection.execute(select(column))).scalars())


async def _plaintext_rows(store: Store) -> None:
    """A thread and items as a server without keys writes them."""
    plain = store.checkpoint_store()
    await plain.put_checkpoint(
        thread(),
        OWNER,
        checkpoint("c1", versions={"a": "1"}, values={"a": "alpha"}),
        NOW,
    )
    await plain.put_writes(thread(), OWNER, "", "c1", [write("t1", 0, "beta")], False, NOW)
    await plain.put_checkpoint(thread(), OWNER, _looks_sealed("c2"), NOW)
    items = store.item_storage()
    await put(items, "ada.trips", "rome", {"city": "Rome", "stars": 3})
    await put(items, "ada.trips", "oslo", {"city": "Oslo", "stars": 5})


def _looks_sealed(checkpoint_id: str) -> Any:
    made = checkpoint(checkpoint_id, parent="c1", versions={"a": "1"})
    return type(made)(**{**made.__dict__, "checkpoint": Typed("bytes", LOOKS_SEALED)})


async def _read_everything(store: Store, cipher: Any) -> dict[str, Any]:
    checkpoints = store.checkpoint_store(cipher)
    found, _ = await listed(checkpoints, thread())
    items = store.item_storage(cipher)
    return {
        "checkpoints": [
            (c.checkpoint_id, c.checkpoint.type, c.checkpoint.data, values_of(c), writes_of(c))
            for c in found
        ],
        "rome": getattr(await get(items, "ada.trips", "rome"), "value", None),
        "values": sorted(str(item.value) for item in await search(items, "ada")),
        "five_stars": await found_keys(
            items, "ada", condition=compile_filter({"stars": {"$gt": 4}})
        ),
        "oslo_word": await found_keys(items, "ada", words=["oslo"]),
    }


async def _reencrypt(engine: AsyncEngine, cipher: ValueCipher, batch_rows: int = 500) -> int:
    """`session-state reencrypt`'s walk: how many LangGraph rows it resealed."""
    done = await reencrypt(
        engine,
        cipher,
        clear_keyword_index=True,
        progress=lambda table, total: lambda rows: None,
        batch_rows=batch_rows,
    )
    assert done.busy == 0
    return sum(done.tables[table].resealed for table in RESEALED_TABLES)


async def test_plaintext_rows_read_beside_sealed_ones_and_are_resealed(
    store: Store, engine: AsyncEngine
) -> None:
    await _plaintext_rows(store)
    before = await _read_everything(store, None)
    assert before["checkpoints"][0][1:3] == ("bytes", LOOKS_SEALED)
    assert before["five_stars"] == ["ada.trips/oslo"] and before["oslo_word"] == ["ada.trips/oslo"]

    old = key_set("k1")
    cipher = cipher_of(old)
    # Encryption turned on: the plaintext rows read as they are...
    assert await _read_everything(store, cipher) == before
    # ... beside new sealed ones.
    items = store.item_storage(cipher)
    await put(items, "ada.trips", "lima", {"city": "Lima", "stars": 5})
    assert await found_keys(
        items, "ada", condition=compile_filter({"stars": 5}), words=["lima"]
    ) == ["ada.trips/lima"]

    with_lima = await _read_everything(store, cipher)
    resealed = await _reencrypt(engine, cipher, batch_rows=1)
    assert resealed == 2 + 1 + 1 + 2  # checkpoints, value, write, plaintext items
    assert await _reencrypt(engine, cipher) == 0
    for column in (
        lg_checkpoints.c.checkpoint_type,
        lg_channel_values.c.value_type,
        lg_writes.c.value_type,
    ):
        assert all(tag.startswith(SEALED_TYPE_PREFIX) for tag in await _column(engine, column))
    assert all(isinstance(value, str) for value in await _column(engine, lg_store_items.c.value))
    assert not any("oslo" in text for text in await _column(engine, lg_store_items.c.search_text))
    after = await _read_everything(store, cipher)
    assert after == with_lima

    # A new first key reads the old one's values; reseal moves them to it.
    new = {**key_set("k2"), **old}
    rotated = cipher_of(new)
    assert await _read_everything(store, rotated) == after
    assert await _reencrypt(engine, rotated) == resealed + 1
    assert await _read_everything(store, cipher_of({"k2": new["k2"]})) == after

    # Without the key: an error naming it.
    with pytest.raises(EncryptionKeyMissing, match="'k2'"):
        await listed(store.checkpoint_store(cipher_of(key_set("k3"))), thread())
    with pytest.raises(EncryptionKeyMissing, match="'k2'"):
        await get(store.item_storage(), "ada.trips", "rome")


async def test_a_batch_walks_in_key_order_and_says_where_the_next_starts(
    store: Store, engine: AsyncEngine
) -> None:
    items = store.item_storage()
    for key in ("a", "b", "c"):
        await put(items, "ada.notes", key, {"text": key})
    cipher = cipher_of(key_set("k1"))
    first = await reseal_batch(engine, cipher, "lg_store_items", None, 2)
    assert (first.read, first.resealed, first.changed) == (2, 2, 0)
    assert first.after is not None and first.after[-1] == "b"
    last = await reseal_batch(engine, cipher, "lg_store_items", first.after, 2)
    assert (last.read, last.resealed, last.after) == (1, 1, None)
    with pytest.raises(ValueError, match="sealed tables"):
        await reseal_batch(engine, cipher, "sessions", None, 2)
    assert set(RESEALED_TABLES) == {
        "lg_checkpoints",
        "lg_channel_values",
        "lg_writes",
        "lg_store_items",
    }


async def test_a_type_tag_that_would_read_as_sealed_is_refused(store: Store) -> None:
    for cipher in (None, cipher_of(key_set("k1"))):
        checkpoints = store.checkpoint_store(cipher)
        made = checkpoint("c1")
        tagged = type(made)(
            **{**made.__dict__, "checkpoint": Typed(SEALED_TYPE_PREFIX + "json", b"{}")}
        )
        with pytest.raises(InvalidInput):
            await checkpoints.put_checkpoint(thread(), OWNER, tagged, NOW)
        with pytest.raises(InvalidInput):
            await checkpoints.put_writes(
                thread(),
                OWNER,
                "",
                "c1",
                [type(write("t", 0, "x"))("t", "", 0, "out", Typed(SEALED_TYPE_PREFIX, b"x"))],
                False,
                NOW,
            )
    assert await listed(store.checkpoint_store(), thread()) == ([], False)


async def test_export_opens_values_and_import_seals_them_under_its_key(
    store: Store, engine: AsyncEngine
) -> None:
    exporting_keys = key_set("k1")
    exporting = cipher_of(exporting_keys)
    checkpoints = store.checkpoint_store(exporting)
    await checkpoints.put_checkpoint(
        thread(), OWNER, checkpoint("c1", versions={"a": "1"}, values={"a": "alpha"}), NOW
    )
    await checkpoints.put_writes(thread(), OWNER, "", "c1", [write("t1", 0, "beta")], False, NOW)
    await put(store.item_storage(exporting), "ada.trips", "rome", {"city": "Rome"})

    source = SqlOperatorStore(engine, exporting)
    rows = await source.thread_rows(APP, "t1")
    assert [(row.value_type, row.value) for row in rows.channel_values] == [("json", b"alpha")]
    assert [(row.value_type, row.value) for row in rows.writes] == [("json", b"beta")]
    assert rows.checkpoints[0].checkpoint == b"checkpoint c1"
    [item] = [one async for one in source.live_store_items(STORE_APP, None, NOW)]
    assert item.value == {"city": "Rome"}

    importing_keys = key_set("k2")
    importing = cipher_of(importing_keys)
    target = SqlOperatorStore(engine, importing)
    async with target.importing() as transaction:
        found = await transaction.find_thread(APP, "t1")
        assert found is not None
        await transaction.insert_thread(replace(found, thread_id="t2"), rows)
        await transaction.insert_store_item(replace(item, key="rome-copy"))
        # What an import compares a stored thread or item with: opened.
        assert await transaction.thread_rows(APP, "t2") == rows
        copied = await transaction.find_store_item(STORE_APP, "ada.trips", "rome-copy")
        assert copied is not None and copied.value == {"city": "Rome"}

    # The copy is under the importing server's key alone.
    original, _ = await listed(store.checkpoint_store(exporting), thread())
    with pytest.raises(EncryptionKeyMissing, match="'k2'"):
        await listed(store.checkpoint_store(exporting), thread("t2"))
    read_with = cipher_of({**importing_keys, **exporting_keys})
    imported, _ = await listed(store.checkpoint_store(read_with), thread("t2"))
    assert [values_of(c) for c in imported] == [values_of(c) for c in original] == [{"a": "alpha"}]
    assert [writes_of(c) for c in imported] == [writes_of(c) for c in original]
    assert await found_keys(store.item_storage(read_with), "ada", words=["rome"]) == [
        "ada.trips/rome",
        "ada.trips/rome-copy",
    ]


async def test_a_row_written_while_a_batch_reseals_it_is_left_as_written(
    store: Store, engine: AsyncEngine
) -> None:
    await put(store.item_storage(), "ada.notes", "a", {"text": "first"})
    cipher = cipher_of(key_set("k1"))
    async with engine.connect() as writer:
        # A server's write, in a transaction still open when the batch reads.
        await writer.execute(
            update(lg_store_items)
            .where(lg_store_items.c.key == "a")
            .values(value={"text": "second"}, search_text="second")
        )
        batch = asyncio.create_task(reseal_batch(engine, cipher, "lg_store_items", None, 10))
        await asyncio.sleep(1.0)  # it has read the row and waits for the writer's lock
        assert not batch.done()
        await writer.commit()
    done = await batch
    assert (done.read, done.resealed, done.changed) == (1, 0, 1)
    found = await get(store.item_storage(cipher), "ada.notes", "a")
    assert found is not None and found.value == {"text": "second"}
