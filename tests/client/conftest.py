"""Started `session-state serve` processes, one per backend, shared by the
client tests of a module; each test works in an app of its own."""

import uuid

import pytest

from tests.conftest import ServerProcess


@pytest.fixture
def base_url(server: ServerProcess) -> str:
    return server.base_url


@pytest.fixture
def app_name() -> str:
    return f"app-{uuid.uuid4().hex[:12]}"
