"""ADK's own servers (`adk web`, `adk api_server`, `adk run`) pick their
services by URI through ADK's service registry: a `services.yaml` in the
agents directory names our classes, and ADK builds them as
`Class(uri=uri, agents_dir=...)`. Both work that way against a started server."""

import textwrap

import pytest
from google.adk.cli.service_registry import load_services_module
from google.adk.cli.utils.service_factory import (
    create_memory_service_from_options,
    create_session_service_from_options,
)

from session_state_client.adk import HttpMemoryService, HttpSessionService, base_url_from_uri

# As docs/clients.md gives it.
SERVICES_YAML = """
services:
  - scheme: session-state
    type: session
    class: session_state_client.adk.HttpSessionService
  - scheme: session-state
    type: memory
    class: session_state_client.adk.HttpMemoryService
  - scheme: session-state+https
    type: session
    class: session_state_client.adk.HttpSessionService
  - scheme: session-state+https
    type: memory
    class: session_state_client.adk.HttpMemoryService
"""


@pytest.fixture
def agents_dir(tmp_path):
    (tmp_path / "services.yaml").write_text(textwrap.dedent(SERVICES_YAML))
    load_services_module(str(tmp_path))
    return tmp_path


async def test_adk_builds_both_services_from_a_session_state_uri(agents_dir, sqlite_server):
    # ADK's own factory, as `adk api_server --session_service_uri` calls it
    # (it passes agents_dir along).
    uri = sqlite_server.base_url.replace("http://", "session-state://") + "/"
    sessions = create_session_service_from_options(base_dir=agents_dir, session_service_uri=uri)
    memory = create_memory_service_from_options(base_dir=agents_dir, memory_service_uri=uri)
    assert isinstance(sessions, HttpSessionService)
    assert isinstance(memory, HttpMemoryService)
    created = await sessions.create_session(app_name="registry", user_id="u", state={"k": 1})
    found = await sessions.get_session(app_name="registry", user_id="u", session_id=created.id)
    assert found is not None and found.state == {"k": 1}
    await memory.add_session_to_memory(found)
    assert (await memory.search_memory(app_name="registry", user_id="u", query="x")).memories == []


@pytest.mark.parametrize(
    ("uri", "base_url"),
    [
        ("session-state://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("session-state+https://h.example", "https://h.example"),
        ("session-state+https://h.example:8443/base/path/", "https://h.example:8443/base/path"),
        ("session-state://127.0.0.1:8000/sessions", "http://127.0.0.1:8000/sessions"),
        ("http://h.example:9/api/", "http://h.example:9/api"),
    ],
)
def test_uris_map_to_base_urls(uri, base_url):
    assert base_url_from_uri(uri) == base_url


@pytest.mark.parametrize(
    "uri",
    [
        "session-state://",
        "ftp://h.example",
        "session-states://h.example",
        "session-state://key:secret@h.example",
        "session-state://h.example:port",
        "session-state://h.example:99999",
    ],
)
def test_a_uri_that_names_no_server_or_carries_a_secret_is_refused(uri):
    with pytest.raises(ValueError):
        base_url_from_uri(uri)
