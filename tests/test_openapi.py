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


def test_the_spec_reads_in_order_sessions_first_create_first_without_made_up_titles():
    spec = json.loads(SPEC_PATH.read_text())
    tags = [tag["name"] for tag in spec["tags"]]
    assert tags[0] == "sessions" and all(tag.get("description") for tag in spec["tags"])
    used = {tag for item in spec["paths"].values() for op in item.values() for tag in op["tags"]}
    assert set(tags) == used
    operations = [op for item in spec["paths"].values() for op in item.values()]
    first = next(op for op in operations if "sessions" in op["tags"])
    assert first["summary"] == "Create a session"
    # Swagger UI lists tags in the order the paths use them.
    order = list(dict.fromkeys(op["tags"][0] for op in operations))
    assert order == tags
    summaries = {op["summary"]: op for op in operations}
    for summary in ("Create a session", "Append an event, applying its state delta"):
        assert len(summaries[summary].get("description", "")) > 80

    titles = []

    def walk(node):
        if isinstance(node, dict):
            for name, schema in (node.get("properties") or {}).items():
                if isinstance(schema, dict) and "title" in schema:
                    titles.append(name)
            if "in" in node and "title" in node.get("schema", {}):
                titles.append(node["name"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(spec)
    assert titles == []  # such as "Ttlseconds" for ttlSeconds
