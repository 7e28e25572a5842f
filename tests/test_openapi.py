"""The committed spec in openapi/ is what the app serves."""

import json
from pathlib import Path

from session_state.main import create_app

SPEC_PATH = Path(__file__).parent.parent / "openapi" / "openapi.json"


def test_committed_openapi_spec_matches_the_app():
    served = create_app().openapi()
    committed = json.loads(SPEC_PATH.read_text())
    assert committed == served, (
        "openapi/openapi.json is out of date: run `session-state openapi > openapi/openapi.json`"
    )


async def test_the_app_serves_its_spec(client):
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    assert response.json() == json.loads(SPEC_PATH.read_text())


def test_every_reference_in_the_spec_resolves_within_it():
    """A "$ref" pydantic leaves as "#/$defs/..." inside a request body means
    nothing in an OpenAPI document: ReDoc stopped rendering on one."""
    spec = json.loads(SPEC_PATH.read_text())

    def references(node):
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                yield node["$ref"]
            for value in node.values():
                yield from references(value)
        elif isinstance(node, list):
            for item in node:
                yield from references(item)

    for reference in set(references(spec)):
        assert reference.startswith("#/components/"), reference
        target = spec
        for part in reference.removeprefix("#/").split("/"):
            target = target[part]
