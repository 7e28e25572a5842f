"""Started `session-state serve` processes, one per backend, shared by the
client tests of a module; each test works in an app of its own."""

import uuid

import pytest
from google.adk.sessions import InMemorySessionService

from session_state_client.adk import HttpSessionService
from tests.conftest import ServerProcess


@pytest.fixture
def base_url(server: ServerProcess) -> str:
    return server.base_url


@pytest.fixture
def app_name() -> str:
    return f"app-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["in_memory", "http-sqlite", "http-postgresql"])
async def service(request: pytest.FixtureRequest):
    """ADK's InMemorySessionService (the reference), then HttpSessionService on
    each backend: conformance tests must pass on all three."""
    if request.param == "in_memory":
        yield InMemorySessionService()
        return
    server = request.getfixturevalue(f"{request.param.removeprefix('http-')}_server")
    http = HttpSessionService(base_url=server.base_url)
    yield http
    await http.close()


@pytest.fixture
def app() -> str:
    return f"app-{uuid.uuid4().hex[:10]}"
