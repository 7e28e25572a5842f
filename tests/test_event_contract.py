"""The event contract as documented is the contract enforced: every bound and
type the OpenAPI spec gives an event's fields is sent to the server, on each
side of the bound, and the validator must agree (both come from
`app/sessions/event_contract.py`; this keeps them from drifting apart)."""

from typing import Any

import pytest

from session_state.main import create_app

SESSION = "/apps/contract/users/u/sessions/s"
WRONG_TYPE = {"string": 5, "number": "noon", "boolean": "yes", "object": []}


def _documented(schema: dict[str, Any]) -> dict[str, Any]:
    """A property's schema without its `null` alternative."""
    options = [option for option in schema.get("anyOf", [schema]) if option.get("type") != "null"]
    assert len(options) == 1, schema
    return options[0]


def _event_schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    spec = create_app().openapi()
    schemas = spec["components"]["schemas"]
    return schemas["Event"], schemas["EventActions"]


def _cases() -> list[tuple[str, dict[str, Any], list[str] | None]]:
    """(what, event, the loc of the expected error or None for accepted)."""
    event_schema, actions_schema = _event_schemas()
    cases: list[tuple[str, dict[str, Any], list[str] | None]] = []
    base = {"author": "a"}
    for name, raw in event_schema["properties"].items():
        schema = _documented(raw)
        if "$ref" in schema:
            continue  # actions: its own properties below
        kind = schema["type"]
        cases.append((f"{name} of the wrong type", {**base, name: WRONG_TYPE[kind]}, [name]))
        if "maxLength" in schema:
            longest, shortest = schema["maxLength"], schema["minLength"]
            cases.append((f"{name} at its longest", {**base, name: "x" * longest}, None))
            cases.append((f"{name} too long", {**base, name: "x" * (longest + 1)}, [name]))
            cases.append((f"{name} at its shortest", {**base, name: "y" * shortest}, None))
            if shortest > 0:
                cases.append((f"{name} too short", {**base, name: ""}, [name]))
        if "maximum" in schema:
            highest, lowest = schema["maximum"], schema["minimum"]
            cases.append((f"{name} at its maximum", {**base, name: highest}, None))
            cases.append((f"{name} above its maximum", {**base, name: highest + 1}, [name]))
            cases.append((f"{name} at its minimum", {**base, name: lowest}, None))
            cases.append((f"{name} below its minimum", {**base, name: lowest - 1}, [name]))
    for name in event_schema["required"]:
        without = {key: value for key, value in base.items() if key != name}
        cases.append((f"{name} missing", without, [name]))
    for name, raw in actions_schema["properties"].items():
        kind = _documented(raw)["type"]
        event = {**base, "actions": {name: WRONG_TYPE[kind]}}
        cases.append((f"actions.{name} of the wrong type", event, ["actions", name]))
    return cases


def test_every_documented_field_has_cases():
    described = {what.split()[0] for what, _, _ in _cases()}
    assert {"id", "author", "timestamp", "invocationId", "partial", "actions.stateDelta"} <= (
        described
    )


@pytest.mark.parametrize(("what", "event", "refused_at"), _cases(), ids=lambda x: str(x)[:40])
async def test_the_validator_enforces_what_the_spec_documents(client, what, event, refused_at):
    await client.post("/apps/contract/users/u/sessions", json={"sessionId": "s"})
    response = await client.post(f"{SESSION}/events", json=event)
    if refused_at is None:
        assert response.status_code in (200, 201), (what, response.text)
    else:
        assert response.status_code == 422, (what, response.text)
        assert ["body", *refused_at] in [error["loc"] for error in response.json()["errors"]]
