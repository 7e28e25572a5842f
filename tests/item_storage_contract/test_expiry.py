"""Item storage contract: an item whose expiry time is at or before `now`
is missing for every reader from that moment, swept or not; a refresh
pushes out the expiry of live items with a TTL, and revives none; a put
onto an expired item makes it anew; the sweep deletes expired items, and
only those, `batch` at a time, counting each once when two processes
sweep at once."""

import asyncio

from session_state.langgraph.store.domain import StoredItem
from session_state.langgraph.store.storage import ItemStorage

from .scenes import APP, NOW, found_keys, get, namespaces, put

TTL = 10.0


async def test_an_item_is_missing_from_the_moment_it_expires(items: ItemStorage):
    await put(items, "ada.due", "k", {"v": 1}, ttl=TTL)
    before, at = NOW + TTL - 0.001, NOW + TTL

    assert await get(items, "ada.due", "k", before) == StoredItem(
        ("ada", "due"), "k", {"v": 1}, NOW, NOW, NOW + TTL, TTL
    )
    assert await get(items, "ada.due", "k", at) is None
    assert (await found_keys(items, now=before), await found_keys(items, now=at)) == (
        ["ada.due/k"],
        [],
    )
    assert (await namespaces(items, now=before), await namespaces(items, now=at)) == (
        ["ada.due"],
        [],
    )


async def test_a_refresh_pushes_out_live_items_with_a_ttl_only(items: ItemStorage):
    await put(items, "ada", "ttl", {"v": 1}, ttl=TTL)
    await put(items, "ada", "forever", {"v": 2})
    await put(items, "ada", "due", {"v": 3}, ttl=1)
    later = NOW + 5

    async with items.transaction(write=True) as transaction:
        await transaction.refresh(
            APP, [("ada", "ttl"), ("ada", "forever"), ("ada", "due"), ("ada", "never")], later
        )
        await transaction.refresh(APP, [], later)

    refreshed = await get(items, "ada", "ttl", later)
    assert refreshed is not None and refreshed.expire_time == later + TTL
    assert await get(items, "ada", "ttl", later + TTL - 0.001) is not None
    forever = await get(items, "ada", "forever", later)
    assert forever is not None and forever.expire_time is None
    # Expired before the refresh: it stays expired.
    assert await get(items, "ada", "due", NOW + 1) is None
    assert await get(items, "ada", "due", NOW) is not None


async def test_a_refresh_touches_its_app_only(items: ItemStorage):
    await put(items, "ada", "k", {"v": 1}, ttl=TTL)
    await put(items, "ada", "k", {"v": 1}, ttl=TTL, app_name="other")

    async with items.transaction(write=True) as transaction:
        await transaction.refresh(APP, [("ada", "k")], NOW + 5)

    assert await get(items, "ada", "k", NOW + TTL) is not None
    assert await get(items, "ada", "k", NOW + TTL, app_name="other") is None


async def test_a_put_onto_an_expired_item_makes_it_anew(items: ItemStorage):
    await put(items, "ada", "k", {"v": 1}, ttl=TTL)
    await put(items, "ada", "k", {"v": 2}, now=NOW + TTL)

    assert await get(items, "ada", "k", NOW * 10) == StoredItem(
        ("ada",), "k", {"v": 2}, NOW + TTL, NOW + TTL, None, None
    )


async def test_the_sweep_deletes_expired_items_only_a_batch_at_a_time(items: ItemStorage):
    for index in range(5):
        await put(items, "ada", f"due{index}", {"v": index}, ttl=TTL)
    await put(items, "ada", "later", {"v": 0}, ttl=TTL, now=NOW + 1)
    await put(items, "ada", "forever", {"v": 0})

    assert await items.sweep_expired(NOW + TTL - 0.001, 2) == 0
    assert await items.sweep_expired(NOW + TTL, 2) == 5
    assert await items.sweep_expired(NOW + TTL, 2) == 0
    # Swept: gone even for a reader whose clock is behind.
    assert sorted(await found_keys(items, now=NOW)) == ["ada/forever", "ada/later"]


async def test_two_sweeps_at_once_count_each_item_once(
    items: ItemStorage, other_items: ItemStorage
):
    async with items.transaction(write=True) as transaction:
        for index in range(12):
            await transaction.put(APP, "ada", f"due{index}", "ada", {}, "", TTL, NOW)

    counts = await asyncio.gather(
        items.sweep_expired(NOW + TTL, 2), other_items.sweep_expired(NOW + TTL, 2)
    )

    assert sum(counts) == 12
    assert await items.sweep_expired(NOW + TTL, 2) == 0
