"""An event as ADK's DatabaseSessionService stores it (snake_case field
names) becomes exactly what ADK clients send (camelCase JSON names): equal to
ADK's own `by_alias` dump, read back by ADK as the same event, free-form keys
untouched. The field table is the one the installed ADK gives."""

import base64
from typing import Any

import pytest
from google.adk.events import Event, EventActions

from session_state.transfer.adk_event_fields import MODELS
from session_state.transfer.adk_event_shape import camel_case_event
from tests import adk_event_fields_generator
from tests.adk_events import action_samples, rich_events


def stored_by_adk(event: Event) -> dict[str, Any]:
    """ADK's DatabaseSessionService's event_data (schema 1)."""
    document: dict[str, Any] = event.model_dump(mode="json", exclude_none=True)
    return document


def sent_by_adk_clients(event: Event) -> dict[str, Any]:
    """What HttpSessionService sends (and ADK's own API server answers)."""
    document: dict[str, Any] = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    return document


def test_the_field_table_is_the_installed_adks():
    assert adk_event_fields_generator.table() == MODELS, (
        "ADK's event models changed: run python -m tests.adk_event_fields_generator"
    )


@pytest.mark.parametrize("index", range(len(rich_events())))
def test_a_stored_adk_event_becomes_what_adk_clients_send(index):
    event = rich_events()[index]
    converted = camel_case_event(stored_by_adk(event))
    assert converted == sent_by_adk_clients(event)
    assert list(converted) == list(sent_by_adk_clients(event))
    assert Event.model_validate(converted) == event


def test_every_field_of_adks_event_actions_has_a_sample():
    """The cases below are generated from the installed ADK: a field it adds
    fails them until tests/adk_events.action_samples gives it a value."""
    assert set(action_samples()) - set(EventActions.model_fields) == set()


@pytest.mark.parametrize("field", sorted(EventActions.model_fields))
def test_each_event_action_becomes_what_adk_clients_send(field):
    samples = action_samples()
    assert field in samples, f"ADK's EventActions has a new field {field!r}: give it a sample"
    event = Event(
        author="agent", invocation_id="inv-1", actions=EventActions(**{field: samples[field]})
    )
    assert getattr(event.actions, field) == samples[field]
    converted = camel_case_event(stored_by_adk(event))
    assert converted == sent_by_adk_clients(event)
    assert Event.model_validate(converted) == event


def test_free_form_objects_and_unknown_keys_are_kept_as_they_are():
    document = stored_by_adk(rich_events()[1])
    document["a_field_of_a_newer_adk"] = {"some_key": 1}
    converted = camel_case_event(document)
    assert converted["a_field_of_a_newer_adk"] == {"some_key": 1}
    assert converted["actions"]["stateDelta"] == {
        "user:last_city": "Oslo",
        "trip_plan": {"day_one": "fly"},
    }
    assert converted["customMetadata"] == {"trace_id": "t-1", "nested_obj": {"a_b": 1}}
    assert converted["content"]["parts"][1]["functionCall"]["args"]["from_city"] == "Oslo"
    scheme = converted["actions"]["requestedAuthConfigs"]["call_1"]["authScheme"]
    assert scheme["type"] == "oauth2"
    assert "calendar_read" in scheme["flows"]["authorizationCode"]["scopes"]
    # Bytes stay base64, as both dumps write them.
    inline = converted["content"]["parts"][2]["inlineData"]["data"]
    assert base64.urlsafe_b64decode(inline) == b"\x89PNG\r\n"


def test_an_event_already_in_json_names_is_unchanged():
    sent = sent_by_adk_clients(rich_events()[1])
    assert camel_case_event(sent) == sent


def test_both_spellings_of_one_field_are_both_kept():
    converted = camel_case_event({"author": "a", "invocation_id": "x", "invocationId": "y"})
    assert converted == {"author": "a", "invocation_id": "x", "invocationId": "y"}
