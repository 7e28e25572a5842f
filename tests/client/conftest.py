"""Started `session-state serve` processes, one per backend, shared by the
client tests of a module; each test works in an app of its own."""

import uuid
from collections.abc import Iterator

import pytest

from tests.conftest import ServerProcess


@pytest.fixture(scope="module")
def postgresql_server(postgres_url: str) -> Iterator[ServerProcess]:
    process = ServerProcess(postgres_url).start()
    yield process
    process.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest) -> ServerProcess:
    process: ServerProcess = request.getfixturevalue(f"{request.param}_server")
    return process


@pytest.fixture
def base_url(server: ServerProcess) -> str:
    return server.base_url


@pytest.fixture
def app_name() -> str:
    return f"app-{uuid.uuid4().hex[:12]}"
