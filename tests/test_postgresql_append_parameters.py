"""The PostgreSQL append statements take their parameters by name: what the
store binds for each statement is exactly what the statement names, so a
parameter renamed, dropped or added on one side fails here, not in
production. No database needed: the texts and bindings are checked as built."""

import re

import pytest

from session_state.core import json_codec
from session_state.db.postgresql_statement import Statement
from session_state.sessions import postgresql_statements as sql
from session_state.sessions.domain import Expiry, NewEvent, SessionKey
from session_state.sessions.postgresql_appends import (
    _Append,
    _Change,
    _many_values,
    as_is,
    shared_change,
)
from session_state.sessions.state import ScopedDelta

KEY = SessionKey("app", "user", "session")
DELTA = ScopedDelta(app={"a": 1}, user={"u": [2]}, session={"s": "x"})


def _event(event_id: str) -> NewEvent:
    return NewEvent(event_id, "invocation", "author", 1.5, '{"id": "x"}', DELTA)


CHANGE = _Change(KEY, DELTA, 1.5, 3, 1000, 2.0, Expiry(ttl_seconds=60))


def _numbers(text: str) -> set[int]:
    return {int(number) for number in re.findall(r"\$(\d+)", text)}


APPENDS = [sql.APPEND, sql.APPEND_UNLESS_HELD, sql.APPEND_MANY, sql.APPEND_BATCH]
FORMS = [form for append in APPENDS for form in (append.shared, append.session_only)]


@pytest.mark.parametrize("statement", [*FORMS, sql.WRITE_SHARED_STATE])
def test_each_name_is_one_numbered_parameter_and_none_is_left_unnumbered(
    statement: Statement,
) -> None:
    assert _numbers(statement.text) == set(range(1, len(statement.names) + 1))
    assert len(set(statement.names)) == len(statement.names)
    assert re.search(r"(?<!:):[a-z_]", statement.text) is None


@pytest.mark.parametrize("append", APPENDS)
def test_both_forms_of_an_append_take_the_same_parameters_and_only_one_writes_shared_state(
    append: sql.AppendStatement,
) -> None:
    assert append.shared.names == append.session_only.names
    assert "app_states" in append.shared.text and "user_states" in append.shared.text
    assert "app_states" not in append.session_only.text
    assert "user_states" not in append.session_only.text
    assert append.writing(True) is append.shared and append.writing(False) is append.session_only


@pytest.mark.parametrize(
    "statement",
    [form for append in APPENDS[:2] for form in (append.shared, append.session_only)],
)
def test_a_single_append_binds_exactly_the_names_of_its_statements(
    statement: Statement,
) -> None:
    values = _Append(CHANGE, _event("e1")).values(as_is)
    arguments = statement.arguments(values)
    assert arguments == [values[name] for name in statement.names]


def test_a_batch_binds_an_array_per_name_an_element_per_append() -> None:
    appends = [_Append(CHANGE, _event("e1")), _Append(CHANGE, _event("e2"))]
    columns = sql.APPEND_BATCH.shared.columns(
        [append.values(json_codec.dumps_for_jsonb) for append in appends]
    )
    assert len(columns) == len(sql.APPEND_BATCH.shared.names)
    assert columns[sql.APPEND_BATCH.shared.names.index("event_id")] == ["e1", "e2"]


def test_several_events_bind_exactly_the_names_of_their_statement() -> None:
    values = _many_values(CHANGE, [_event("e1"), _event("e2")])
    arguments = sql.APPEND_MANY.shared.arguments(values)
    assert arguments[sql.APPEND_MANY.shared.names.index("event_ids")] == ["e1", "e2"]


def test_a_new_sessions_shared_state_binds_exactly_the_names_of_its_statement() -> None:
    sql.WRITE_SHARED_STATE.arguments(shared_change(KEY, DELTA, 1000, as_is))


def test_a_name_missing_or_bound_in_excess_is_refused() -> None:
    values = _Append(CHANGE, _event("e1")).values(as_is)
    missing = {name: value for name, value in values.items() if name != "now"}
    with pytest.raises(TypeError, match=r"not bound: \['now'\]"):
        sql.APPEND.shared.arguments(missing)
    with pytest.raises(TypeError, match=r"not taken: \['extra'\]"):
        sql.APPEND.shared.arguments({**values, "extra": 1})
    # A statement for one event does not take the arrays of several.
    with pytest.raises(TypeError):
        sql.APPEND.shared.arguments(_many_values(CHANGE, [_event("e1")]))
