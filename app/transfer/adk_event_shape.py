"""An event as ADK's DatabaseSessionService stores it (`Event.model_dump(
mode="json", exclude_none=True)`: snake_case field names) turned into the
shape ADK clients send over the API (`by_alias=True`: camelCase JSON names),
so that imported and appended events are one shape to a REST reader.

Only keys of ADK's models are renamed (adk_event_fields.MODELS); free-form
objects (a state delta, a tool's arguments, custom metadata) and keys ADK's
models do not name are kept as they are, so nothing is lost and ADK reads the
result back as the same event."""

from typing import Any

from .adk_event_fields import MODELS

EVENT = "Event"


def camel_case_event(document: dict[str, Any]) -> dict[str, Any]:
    """The event with its ADK fields under their JSON names, in the same order."""
    return _model(document, EVENT)


def _value(value: Any, holds: str) -> Any:
    if isinstance(value, list):
        return [_value(item, holds) for item in value]
    if not isinstance(value, dict):
        return value
    if holds.startswith("{"):
        model = holds[1:-1]
        return {key: _value(item, model) for key, item in value.items()}
    return _model(value, holds)


def _model(document: dict[str, Any], model: str) -> dict[str, Any]:
    fields = MODELS[model]
    converted: dict[str, Any] = {}
    for key, value in document.items():
        entry = fields.get(key)
        if entry is None:
            converted[key] = value
            continue
        json_name, holds = entry
        if json_name != key and json_name in document:
            # Both spellings given: neither is dropped.
            json_name = key
        converted[json_name] = value if holds is None else _value(value, holds)
    return converted
