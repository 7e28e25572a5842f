"""Checkpoint contract: a list's metadata filter is containment, as
PostgreSQL's `@>` has it (app/langgraph/checkpoints/metadata_filter.py):
objects by their keys, recursively; arrays when each element of the
filter's is contained by some element of the stored one, in any order;
strings, numbers (by value), booleans and null equal."""

from typing import Any

from session_state.langgraph.checkpoints.store import CheckpointStore

from .scenes import NOW, OWNER, checkpoint, ids, thread

METADATA = {
    "c1": {"source": "input", "step": -1, "tags": [], "flag": False},
    "c2": {
        "source": "loop",
        "step": 1,
        "tags": ["a", "b"],
        "writes": {"agent": {"n": 1, "k": "x"}},
        "flag": True,
        "note": None,
    },
    "c3": {
        "source": "loop",
        "step": 2.5,
        "tags": ["b", ["c", "d"], {"e": 1, "f": 2}],
        "writes": {"agent": None},
        "flag": 1,
        "big": 2**64,
    },
    "c4": {"source": "update", "step": 1.0, "tags": "a", "writes": {}, "café": "naïve"},
}

# Each filter and the checkpoints it finds, newest first.
FOUND: list[tuple[dict[str, Any], list[str]]] = [
    ({}, ["c4", "c3", "c2", "c1"]),
    ({"source": "loop"}, ["c3", "c2"]),
    ({"source": "loop", "step": 2.5}, ["c3"]),
    ({"missing": 1}, []),
    # Numbers by value; a string or a boolean is no number.
    ({"step": 1}, ["c4", "c2"]),
    ({"step": 1.0}, ["c4", "c2"]),
    ({"step": "1"}, []),
    ({"big": 2**64}, ["c3"]),
    ({"flag": True}, ["c2"]),
    ({"flag": 1}, ["c3"]),
    ({"flag": False}, ["c1"]),
    # Null equals null; a missing key is not null.
    ({"note": None}, ["c2"]),
    ({"writes": {"agent": None}}, ["c3"]),
    # Objects by their keys, recursively; every object contains {}.
    ({"writes": {"agent": {"n": 1}}}, ["c2"]),
    ({"writes": {"agent": {"n": 1, "k": "y"}}}, []),
    ({"writes": {}}, ["c4", "c3", "c2"]),
    # Arrays: each element of the filter's in some stored element, any order.
    ({"tags": ["b"]}, ["c3", "c2"]),
    ({"tags": ["b", "a"]}, ["c2"]),
    ({"tags": ["a", "a"]}, ["c2"]),
    ({"tags": []}, ["c3", "c2", "c1"]),
    ({"tags": [["d"]]}, ["c3"]),
    ({"tags": [{"e": 1}]}, ["c3"]),
    ({"tags": [{"e": 2}]}, []),
    # Below the top, a scalar is not contained by an array holding it.
    ({"tags": "a"}, ["c4"]),
    ({"tags": ["a", ["b"]]}, []),
    ({"café": "naïve"}, ["c4"]),
]


async def _put_all(checkpoints: CheckpointStore, metadata: dict[str, dict[str, Any]]) -> None:
    for checkpoint_id, stored in metadata.items():
        await checkpoints.put_checkpoint(
            thread(), OWNER, checkpoint(checkpoint_id, metadata=stored), NOW
        )


async def test_the_metadata_filter_is_containment(checkpoints: CheckpointStore):
    await _put_all(checkpoints, METADATA)

    wrong = {}
    for filter_, expected in FOUND:
        found = await ids(checkpoints, thread(), metadata=filter_)
        if found != expected:
            wrong[repr(filter_)] = (found, expected)

    assert not wrong, f"filter: (found, expected): {wrong}"


async def test_filter_keys_match_whatever_characters_they_hold(checkpoints: CheckpointStore):
    # Keys JSON writes escaped (a backslash, a line break), and ones a JSON
    # path would read as syntax (a dot, brackets, a dollar sign).
    keys = ["a\\b", "line\nbreak", "tab\there", "a.b", "a[0]", "$x", "sp ace"]
    await _put_all(
        checkpoints,
        {"c1": {key: index for index, key in enumerate(keys)}, "c2": {"nested": {"a\\b": 1}}},
    )

    wrong = {}
    for index, key in enumerate(keys):
        found = await ids(checkpoints, thread(), metadata={key: index})
        if found != ["c1"]:
            wrong[key] = found
    nested = await ids(checkpoints, thread(), metadata={"nested": {"a\\b": 1}})

    assert not wrong, f"keys a filter missed: {wrong}"
    assert nested == ["c2"]
