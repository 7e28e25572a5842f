"""The pure rules of scoped state, without a database."""

import math

import pytest

from session_state.core import json_codec
from session_state.core.errors import InvalidInput
from session_state.core.json_rules import find_unstorable
from session_state.core.limits import Limits
from session_state.sessions.events import is_same_event, prepare_event
from session_state.sessions.state import apply_delta, drop_temp_keys, merge_scopes, split_delta


def fixed_event(document, *, now=1000.5, new_id="generated-id"):
    return prepare_event(document, Limits(), now=lambda: now, new_id=lambda: new_id)


def test_split_delta_routes_each_prefix_to_its_scope():
    scoped = split_delta({"app:a": 1, "user:u": 2, "s": 3, "temp:t": 4})
    assert scoped.app == {"a": 1}
    assert scoped.user == {"u": 2}
    assert scoped.session == {"s": 3}


def test_temp_keys_belong_to_no_scope():
    assert split_delta({"temp:t": 1}).is_empty()
    assert drop_temp_keys({"temp:t": 1, "k": 2, "user:temp:x": 3}) == {"k": 2, "user:temp:x": 3}


def test_a_delta_replaces_values_whole_and_keeps_null():
    state = {"nested": {"a": 1, "b": 2}, "kept": True, "gone": 1}
    updated = apply_delta(state, {"nested": {"a": 9}, "gone": None})
    assert updated == {"nested": {"a": 9}, "kept": True, "gone": None}
    assert state["nested"] == {"a": 1, "b": 2}


def test_merged_view_prefixes_app_and_user_keys():
    merged = merge_scopes({"s": 1}, {"theme": "dark"}, {"name": "Ada"})
    assert merged == {"s": 1, "app:theme": "dark", "user:name": "Ada"}


def test_prepared_event_drops_temp_keys_from_the_stored_document():
    prepared = fixed_event(
        {
            "author": "a",
            "id": "e",
            "timestamp": 1.0,
            "actions": {"stateDelta": {"temp:x": 1, "k": 2}},
        }
    )
    assert prepared.document["actions"]["stateDelta"] == {"k": 2}
    assert json_codec.loads(prepared.record.data)["actions"]["stateDelta"] == {"k": 2}
    assert prepared.record.delta.session == {"k": 2}


def test_snake_case_state_delta_is_read_and_kept_under_its_name():
    prepared = fixed_event({"author": "a", "actions": {"state_delta": {"user:x": 1, "temp:y": 2}}})
    assert prepared.document["actions"] == {"state_delta": {"user:x": 1}}
    assert prepared.record.delta.user == {"x": 1}


def test_missing_id_and_timestamp_are_assigned():
    prepared = fixed_event({"author": "a"})
    assert prepared.document["id"] == "generated-id"
    assert prepared.document["timestamp"] == 1000.5
    assert not prepared.had_timestamp


def test_exact_floats_and_big_integers_survive_encoding():
    document = {"author": "a", "id": "e", "timestamp": 0.1 + 0.2, "big": 2**70, "tiny": 1e-300}
    stored = json_codec.loads(fixed_event(document).record.data)
    assert stored["big"] == 2**70
    assert math.copysign(1, stored["tiny"]) == 1 and stored["tiny"] == 1e-300
    assert stored["timestamp"].hex() == (0.1 + 0.2).hex()


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ([1, 2], "body"),
        ({"id": "e"}, "author"),
        ({"author": "a", "id": 5}, "id"),
        ({"author": "a", "id": ""}, "id"),
        ({"author": "a", "timestamp": "now"}, "timestamp"),
        ({"author": "a", "timestamp": True}, "timestamp"),
        ({"author": "a", "partial": "yes"}, "partial"),
        ({"author": "a", "actions": []}, "actions"),
        ({"author": "a", "actions": {"stateDelta": [1]}}, "stateDelta"),
        ({"author": "a", "invocationId": 3}, "invocationId"),
    ],
)
def test_invalid_events_are_refused_naming_the_field(document, field):
    with pytest.raises(InvalidInput) as raised:
        fixed_event(document)
    assert any(error.loc[-1] == field for error in raised.value.errors)


def test_a_retry_without_timestamp_matches_the_stored_event():
    first = fixed_event({"author": "a", "id": "e", "content": {"x": 1}}, now=1.0)
    retry = fixed_event({"author": "a", "id": "e", "content": {"x": 1}}, now=2.0)
    assert is_same_event(first.document, retry)


def test_a_different_body_under_the_same_id_is_not_a_retry():
    first = fixed_event({"author": "a", "id": "e", "timestamp": 1.0})
    other = fixed_event({"author": "b", "id": "e", "timestamp": 1.0})
    assert not is_same_event(first.document, other)


def test_unstorable_values_are_located_by_their_path():
    event = {"author": "a", "actions": {"stateDelta": {"k": ["ok", {"x": "a\x00b"}]}}}
    problem = find_unstorable(event, max_depth=64)
    assert problem is not None
    assert problem.loc == ["body", "actions", "stateDelta", "k", 1, "x"]
    assert "NUL" in problem.msg


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("inf"), "finite"),
        (float("-inf"), "finite"),
        (float("nan"), "finite"),
        ("\ud800", "surrogate"),
        ("ok \udfff", "surrogate"),
        ("a\x00", "NUL"),
    ],
)
def test_values_no_backend_can_store_are_found_anywhere(value, message):
    for document in ({"v": value}, [1, [value]], {"a": {"b": [value]}}):
        problem = find_unstorable(document, max_depth=64)
        assert problem is not None and message in problem.msg


def test_keys_are_held_to_the_same_rule_as_values():
    problem = find_unstorable({"ok": {"bad\ud800": 1}}, max_depth=64)
    assert problem is not None
    assert problem.loc == ["body", "ok", "bad\\ud800"]  # printable in the error


def test_nesting_is_bounded_by_one_number():
    def nested(levels):
        value = []
        for _ in range(levels - 1):
            value = [value]
        return value

    assert find_unstorable(nested(64), max_depth=64) is None
    assert find_unstorable(nested(65), max_depth=64) is not None
    assert find_unstorable({"a": nested(63)}, max_depth=64) is None
    assert find_unstorable({"a": nested(64)}, max_depth=64) is not None


def test_storable_values_pass():
    document = {"big": 2**200, "float": 1e308, "tiny": 5e-324, "text": "é中😀\u2028", "n": None}
    assert find_unstorable(document, max_depth=64) is None
