"""Mistakes at the client's edges told plainly: an adapter whose framework is
not installed names the extra to install; a base URL without a scheme is
refused when the client or adapter is made, by every one of them alike; a
404 names the method and URL requested, so a wrong base path shows."""

import os
import subprocess
import sys
import textwrap

import pytest
from langgraph.store.base import PutOp

from session_state_client import AsyncSessionStateClient, NotFoundError, SessionStateClient
from session_state_client.adk import HttpMemoryService, HttpSessionService
from session_state_client.langgraph import SessionStateSaver, SessionStateStore
from session_state_client.openai_agents import SessionStateSession
from tests.client.both_clients import CLIENTS, open_client

# A meta path finder, loaded by site before the test's code runs, that makes
# the modules named in BLOCKED_MODULES unimportable, as if not installed.
_BLOCKER = textwrap.dedent(
    """
    import os, sys

    class _NotInstalled:
        blocked = os.environ["BLOCKED_MODULES"].split(",")

        def find_spec(self, name, path=None, target=None):
            if any(name == b or name.startswith(b + ".") for b in self.blocked):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _NotInstalled())
    """
)


@pytest.mark.parametrize(
    ("module", "blocked", "message"),
    [
        (
            "session_state_client.adk",
            "google.adk",
            "session_state_client.adk needs ADK: pip install 'session-state-client[adk]'",
        ),
        (
            "session_state_client.openai_agents",
            "agents",
            "session_state_client.openai_agents needs the OpenAI Agents SDK: "
            "pip install 'session-state-client[openai-agents]'",
        ),
        (
            "session_state_client.langgraph",
            "langchain_core,langgraph",
            "session_state_client.langgraph needs LangGraph: "
            "pip install 'session-state-client[langgraph]'",
        ),
    ],
)
def test_an_adapter_without_its_framework_names_the_extra(module, blocked, message, tmp_path):
    (tmp_path / "sitecustomize.py").write_text(_BLOCKER)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
        "BLOCKED_MODULES": blocked,
    }
    script = (
        "import session_state_client\n"  # the core imports without any framework
        f"try:\n    import {module}\n"
        "except ImportError as error:\n    print(type(error).__name__, error.name, error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    first_blocked = blocked.split(",")[0]
    assert done.stdout.startswith(f"ImportError {module} {message} ("), done.stdout
    # The import that failed is kept, for a framework installed but broken.
    assert f"No module named '{first_blocked}" in done.stdout


MADE_WITH_A_BASE_URL = {
    "sync client": lambda url: SessionStateClient(base_url=url),
    "async client": lambda url: AsyncSessionStateClient(base_url=url),
    "ADK session service": lambda url: HttpSessionService(base_url=url),
    "ADK memory service": lambda url: HttpMemoryService(base_url=url),
    "OpenAI session": lambda url: SessionStateSession("s", app_name="a", user_id="u", base_url=url),
    "LangGraph saver": lambda url: SessionStateSaver(url),
    "LangGraph store": lambda url: SessionStateStore(url),
}


@pytest.mark.parametrize("made", list(MADE_WITH_A_BASE_URL))
@pytest.mark.parametrize(
    ("base_url", "said"),
    [
        ("127.0.0.1:8000", "must start with http:// or https://"),
        ("localhost:8000", "must start with http:// or https://"),
        ("ftp://host:21", "must start with http:// or https://"),
        ("http://", "must start with http:// or https:// and name a host"),
        ("http://host:port", "bad port"),
        ("http://host:8000?x=1", "must not have a query"),
    ],
)
def test_a_bad_base_url_is_refused_when_the_client_is_made(made, base_url, said):
    with pytest.raises(ValueError, match="base_url") as refused:
        MADE_WITH_A_BASE_URL[made](base_url)
    assert said in str(refused.value) and repr(base_url) in str(refused.value)


def test_a_bad_base_url_from_the_environment_names_the_variable(monkeypatch):
    monkeypatch.setenv("SESSION_STATE_BASE_URL", "127.0.0.1:8000")
    for made in (SessionStateClient, AsyncSessionStateClient, HttpSessionService):
        with pytest.raises(ValueError, match="SESSION_STATE_BASE_URL must start with http"):
            made()


def test_a_good_base_url_keeps_its_base_path(server):
    # A trailing slash or a scheme in capitals is still the same server.
    with SessionStateClient(base_url=server.base_url.upper().replace("HTTP", "http") + "/") as c:
        assert c.create_session(app_name="edges", user_id="u").app_name == "edges"


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("base_path", ["/api", "/v1/"])
def test_a_wrong_base_path_is_a_404_that_names_the_url(kind, base_path, server):
    with (
        open_client(kind, base_url=server.base_url + base_path) as client,
        pytest.raises(NotFoundError) as missing,
    ):
        client.get_session(app_name="a", user_id="u", session_id="s")
    expected = f"(GET {server.base_url}{base_path.rstrip('/')}/apps/a/users/u/sessions/s"
    assert expected in str(missing.value), str(missing.value)


def test_a_missing_session_is_a_404_that_names_the_url(server):
    with (
        SessionStateClient(base_url=server.base_url) as client,
        pytest.raises(NotFoundError, match="session_not_found") as missing,
    ):
        client.get_session(app_name="a", user_id="u", session_id="nowhere")
    assert f"GET {server.base_url}/apps/a/users/u/sessions/nowhere" in str(missing.value)


def test_the_langgraph_store_names_the_url_of_a_404(server):
    with (
        SessionStateStore(server.base_url + "/api") as store,
        pytest.raises(NotFoundError) as missing,
    ):
        store.batch([PutOp(("n",), "k", {"v": 1})])
    assert f"{server.base_url}/api/apps/" in str(missing.value), str(missing.value)
