"""Item storage contract: a search's condition is evaluated as LangGraph's
InMemoryStore compares (app/langgraph/store/filters.py): plain values
equal, JSON-wise (true is not 1, numbers by value, null also a missing
key); objects contain; arrays match element by element; $eq and $ne
compare whole values, the ordering operators numbers only."""

from typing import Any

from session_state.langgraph.store.storage import ItemStorage

from .scenes import keys_matching, put

VALUES: dict[str, dict[str, Any]] = {
    "v1": {"kind": "trip", "price": 10, "tags": ["a", "b"], "seat": {"row": 3, "aisle": True}},
    "v2": {"kind": "trip", "price": 10.0, "tags": ["b", "a"], "seat": {"row": 3}, "note": None},
    "v3": {"kind": "hotel", "price": 250.5, "tags": [], "seat": None, "flag": 1},
    "v4": {"kind": "hotel", "price": "10", "tags": ["a"], "flag": True, "big": 2**64},
}

# Each filter and the keys it finds.
FOUND: list[tuple[dict[str, Any], list[str]]] = [
    ({"kind": "trip"}, ["v1", "v2"]),
    ({"kind": "trip", "price": 10}, ["v1", "v2"]),
    ({"missing": "x"}, []),
    # Numbers by value; a string is no number, a boolean no number.
    ({"price": 10}, ["v1", "v2"]),
    ({"price": 10.0}, ["v1", "v2"]),
    ({"price": "10"}, ["v4"]),
    ({"flag": True}, ["v4"]),
    ({"flag": 1}, ["v3"]),
    ({"big": 2**64}, ["v4"]),
    # Null: a null or a missing key.
    ({"note": None}, ["v1", "v2", "v3", "v4"]),
    ({"seat": None}, ["v3", "v4"]),
    # Objects contain; arrays match element by element, in order.
    ({"seat": {"row": 3}}, ["v1", "v2"]),
    ({"seat": {"row": 3, "aisle": True}}, ["v1"]),
    ({"seat": {}}, ["v1", "v2"]),
    ({"tags": ["a", "b"]}, ["v1"]),
    ({"tags": ["a"]}, ["v4"]),
    ({"tags": []}, ["v3"]),
    ({"tags": "a"}, []),
    # $eq and $ne: whole values.
    ({"seat": {"$eq": {"row": 3}}}, ["v2"]),
    ({"seat": {"$ne": {"row": 3}}}, ["v1", "v3", "v4"]),
    ({"tags": {"$eq": ["b", "a"]}}, ["v2"]),
    ({"price": {"$eq": 10}}, ["v1", "v2"]),
    ({"price": {"$ne": 10}}, ["v3", "v4"]),
    ({"note": {"$eq": None}}, ["v1", "v2", "v3", "v4"]),
    ({"seat": {"$ne": None}}, ["v1", "v2"]),
    ({"kind": {"$ne": "trip"}}, ["v3", "v4"]),
    # Ordering: numbers only, by value (not as text).
    ({"price": {"$gt": 10}}, ["v3"]),
    ({"price": {"$gte": 10}}, ["v1", "v2", "v3"]),
    ({"price": {"$lt": 100}}, ["v1", "v2"]),
    ({"price": {"$lte": 10, "$gt": 9.5}}, ["v1", "v2"]),
    ({"big": {"$gt": 2**63}}, ["v4"]),
    ({"kind": {"$gt": 0}}, []),
]


async def test_a_condition_is_evaluated_as_langgraph_compares(items: ItemStorage):
    for key, value in VALUES.items():
        await put(items, "ada", key, value)

    wrong = {}
    for filter_, expected in FOUND:
        found = await keys_matching(items, filter_)
        if found != expected:
            wrong[repr(filter_)] = (found, expected)

    assert not wrong, f"filter: (found, expected): {wrong}"


async def test_condition_keys_match_whatever_characters_they_hold(items: ItemStorage):
    # Keys JSON writes escaped (a backslash, a line break), and ones a JSON
    # path would read as syntax (a dot, brackets, a dollar sign).
    keys = ["a\\b", "line\nbreak", "tab\there", "a.b", "a[0]", "$x", "sp ace", "café"]
    await put(items, "ada", "odd", {key: index for index, key in enumerate(keys)})
    await put(items, "ada", "nested", {"outer": {"a\\b": [{"c\nd": 1}]}})

    wrong = {
        key: found
        for key in keys
        if (found := await keys_matching(items, {key: keys.index(key)})) != ["odd"]
    }
    nested = await keys_matching(items, {"outer": {"a\\b": [{"c\nd": 1}]}})

    assert not wrong, f"keys a condition missed: {wrong}"
    assert nested == ["nested"]
