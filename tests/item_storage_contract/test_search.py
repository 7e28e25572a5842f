"""Item storage contract: a search finds the live items whose namespace is
the prefix or under it (a label, not a string, prefix), whose text holds
every word and whose value meets the condition, last updated first, then
by namespace and key, a page at `offset` of at most `limit`, the values it
opens (encryption at rest on) drawn from the request's budget; namespaces
are those of live items under the prefix."""

import pytest

from session_state.core.encryption import ValueCipher
from session_state.core.errors import StoreSearchTooBroad
from session_state.langgraph.store.domain import ScanBudget
from session_state.langgraph.store.filters import compile_filter
from session_state.langgraph.store.storage import ItemStorage

from .scenes import NOW, found_keys, namespaces, put, search


async def _put_tree(items: ItemStorage) -> None:
    for namespace, key in [
        ("ada", "k1"),
        ("ada.prefs", "k2"),
        ("ada.prefs.deep", "k3"),
        ("adam", "k4"),
        ("bob.prefs", "k5"),
    ]:
        await put(items, namespace, key, {"v": key})


async def test_a_prefix_is_the_namespace_or_one_under_it(items: ItemStorage):
    await _put_tree(items)
    await put(items, "ada", "elsewhere", {"v": 0}, app_name="other")

    assert await found_keys(items, "ada") == ["ada/k1", "ada.prefs/k2", "ada.prefs.deep/k3"]
    assert await found_keys(items, "ada.prefs") == ["ada.prefs/k2", "ada.prefs.deep/k3"]
    assert await found_keys(items, "ada.pre") == []
    assert await found_keys(items, "nobody") == []
    assert len(await found_keys(items, "")) == 5
    assert await namespaces(items, "ada") == ["ada", "ada.prefs", "ada.prefs.deep"]
    assert await namespaces(items, "") == [
        "ada",
        "ada.prefs",
        "ada.prefs.deep",
        "adam",
        "bob.prefs",
    ]
    assert await namespaces(items, "carol") == []


async def test_results_are_last_updated_first_then_by_namespace_and_key(items: ItemStorage):
    for namespace, key, now in [
        ("b", "k", NOW),
        ("a", "z", NOW),
        ("a", "k", NOW),
        ("c", "k", NOW - 1),
        ("a", "y", NOW + 1),
    ]:
        await put(items, namespace, key, {"v": 1}, now=now)

    assert await found_keys(items, now=NOW + 1) == ["a/y", "a/k", "a/z", "b/k", "c/k"]


async def test_pages_by_limit_and_offset(items: ItemStorage):
    for index in range(5):
        await put(items, "ada", f"k{index}", {"v": index})
    whole = await found_keys(items)

    pages = [await found_keys(items, limit=2, offset=offset) for offset in (0, 2, 4, 6)]

    assert pages == [whole[0:2], whole[2:4], whole[4:5], []]
    assert await found_keys(items, limit=0) == []


async def test_every_word_must_be_in_the_text(items: ItemStorage):
    await put(items, "ada", "paris", {"v": 1}, text="a flight to paris in may")
    await put(items, "ada", "rome", {"v": 2}, text="a train to rome")
    await put(items, "ada", "none", {"v": 3}, text="")

    assert await found_keys(items, words=["paris"]) == ["ada/paris"]
    assert await found_keys(items, words=["to", "a"]) == ["ada/paris", "ada/rome"]
    assert await found_keys(items, words=["flight", "rome"]) == []
    # A word is found inside a longer one, as the text holds it.
    assert await found_keys(items, words=["fli"]) == ["ada/paris"]
    assert len(await found_keys(items, words=[])) == 3


async def test_words_and_a_condition_narrow_together(items: ItemStorage):
    await put(items, "ada", "cheap", {"price": 10, "to": "paris"})
    await put(items, "ada", "dear", {"price": 900, "to": "paris"})
    await put(items, "ada", "rome", {"price": 10, "to": "rome"})

    found = await search(items, condition=compile_filter({"price": {"$lt": 100}}), words=["paris"])

    assert [item.key for item in found] == ["cheap"]


async def test_sealed_values_are_read_within_the_requests_budget(
    items: ItemStorage, cipher: ValueCipher | None
):
    for index in range(5):
        await put(items, "ada", f"k{index}", {"v": index, "text": f"item{index}"})
    never = compile_filter({"v": -1})

    budget = ScanBudget(3)
    if cipher is None:
        # The database applies the condition: no value is opened.
        assert await search(items, "ada", condition=never, budget=budget) == []
        assert budget.read == 0
        return
    with pytest.raises(StoreSearchTooBroad):
        await search(items, "ada", condition=never, budget=budget)
    assert budget.read == 3
    # Within the budget, a page is full or the items are all read (a read
    # that ends the budget exactly cannot tell there are no more).
    assert await found_keys(items, "ada", condition=never, budget=ScanBudget(6)) == []
    # The same update time: read by key, k0 first.
    assert await found_keys(items, "ada", limit=1, words=["item0"], budget=ScanBudget(1)) == [
        "ada/k0"
    ]
