"""Item storage contract: an item is read back as it was put, under its
namespace's labels; a put replaces the value and keeps the creation time;
a delete removes the item (a missing one is no error); a transaction's
writes land together or not at all, and no other reader sees them before."""

import asyncio

import pytest

from session_state.langgraph.store.domain import StoredItem
from session_state.langgraph.store.storage import ItemStorage

from .scenes import APP, NOW, get, put


async def test_an_item_is_read_back_as_it_was_put(items: ItemStorage):
    value = {"text": "window seat", "nested": {"n": [1, 2.5, None, True]}, "é": "ü"}
    await put(items, "ada.prefs", "seat", value)

    assert await get(items, "ada.prefs", "seat") == StoredItem(
        ("ada", "prefs"), "seat", value, NOW, NOW, None, None
    )


async def test_a_missing_item_is_none_and_apps_namespaces_and_keys_are_apart(
    items: ItemStorage,
):
    await put(items, "ada.prefs", "seat", {"v": 1})

    assert await get(items, "ada.prefs", "meal") is None
    assert await get(items, "ada", "seat") is None
    assert await get(items, "ada.prefs.more", "seat") is None
    assert await get(items, "ada.prefs", "seat", app_name="other") is None


async def test_a_put_replaces_the_value_and_keeps_the_creation_time(items: ItemStorage):
    await put(items, "ada", "seat", {"v": 1}, ttl=60)
    await put(items, "ada", "seat", {"w": 2}, now=NOW + 5)

    assert await get(items, "ada", "seat", NOW + 5) == StoredItem(
        ("ada",), "seat", {"w": 2}, NOW, NOW + 5, None, None
    )


async def test_a_delete_removes_the_item_only(items: ItemStorage):
    await put(items, "ada", "seat", {"v": 1})
    await put(items, "ada", "meal", {"v": 2})
    await put(items, "ada", "seat", {"v": 3}, app_name="other")

    async with items.transaction(write=True) as transaction:
        await transaction.delete(APP, "ada", "seat")
        await transaction.delete(APP, "ada", "never")

    assert await get(items, "ada", "seat") is None
    assert await get(items, "ada", "meal") is not None
    assert await get(items, "ada", "seat", app_name="other") is not None


async def test_a_transaction_writes_all_or_nothing(items: ItemStorage):
    await put(items, "ada", "kept", {"v": 1})

    with pytest.raises(RuntimeError):
        async with items.transaction(write=True) as transaction:
            await transaction.put(APP, "ada", "new", "ada", {"v": 2}, "", None, NOW)
            await transaction.delete(APP, "ada", "kept")
            # Inside the transaction its own writes are seen.
            assert await transaction.get(APP, "ada", "new", NOW) is not None
            raise RuntimeError("the batch fails")

    assert await get(items, "ada", "new") is None
    assert await get(items, "ada", "kept") is not None


async def test_no_other_reader_sees_a_transaction_before_it_ends(
    items: ItemStorage, other_items: ItemStorage
):
    async with items.transaction(write=True) as transaction:
        await transaction.put(APP, "ada", "seat", "ada", {"v": 1}, "", None, NOW)
        unseen = await get(other_items, "ada", "seat")
    seen = await get(other_items, "ada", "seat")

    assert unseen is None
    assert seen is not None and seen.value == {"v": 1}


async def test_concurrent_writes_of_one_item_from_two_processes_leave_one_whole(
    items: ItemStorage, other_items: ItemStorage
):
    async def write_twice(storage: ItemStorage, side: str) -> None:
        async with storage.transaction(write=True) as transaction:
            for key in ("a", "b"):
                await transaction.put(APP, "ada", key, "ada", {"by": side}, side, None, NOW)

    await asyncio.gather(
        *(write_twice(storage, side) for side, storage in (("one", items), ("two", other_items)))
    )

    found = [await get(items, "ada", key) for key in ("a", "b")]
    # Each transaction wrote both: the last one's pair is what is left.
    assert all(item is not None for item in found)
    sides = {item.value["by"] for item in found if item is not None}
    assert len(sides) == 1 and sides <= {"one", "two"}
