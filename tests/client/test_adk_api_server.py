"""ADK's own `adk api_server`, started as a subprocess on an agents directory
that registers our schemes (by `services.yaml` or by `services.py` calling
`register()`), keeps its sessions and memory in session-state: a session
created and a turn run through ADK's server are stored in ours, state included."""

import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from session_state_client import AsyncSessionStateClient
from tests.client.test_adk_registry import SERVICES_YAML
from tests.conftest import ServerProcess, free_port

SERVICES_PY = "from session_state_client.adk import register\n\nregister()\n"

# An agent that needs no network: its model calls the `remember` tool (which
# writes a `user:` key), then answers; `output_key` keeps the answer in the
# session's state, and an after-agent callback adds the session to memory.
AGENT_PY = '''
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.tool_context import ToolContext
from google.genai import types


class ScriptedLlm(BaseLlm):
    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        answered = any(
            part.function_response
            for content in llm_request.contents
            for part in content.parts or []
        )
        if answered:
            parts = [types.Part(text="Noted: you like green tea.")]
        else:
            call = types.FunctionCall(name="remember", args={"fact": "likes green tea"})
            parts = [types.Part(function_call=call)]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def remember(fact: str, tool_context: ToolContext) -> dict[str, str]:
    """Remembers a fact about the user."""
    tool_context.state["user:fact"] = fact
    return {"status": "ok"}


async def add_to_memory(callback_context: CallbackContext) -> None:
    await callback_context.add_session_to_memory()


root_agent = LlmAgent(
    name="helper",
    model=ScriptedLlm(),
    instruction="Remember facts.",
    tools=[remember],
    output_key="last_reply",
    after_agent_callback=add_to_memory,
)
'''


def _agents_dir(root: Path, registration: str) -> Path:
    agents = root / "agents"
    (agents / "helper").mkdir(parents=True)
    (agents / "helper" / "__init__.py").write_text("from . import agent\n")
    (agents / "helper" / "agent.py").write_text(AGENT_PY)
    if registration == "services.yaml":
        (agents / "services.yaml").write_text(textwrap.dedent(SERVICES_YAML))
    else:
        (agents / "services.py").write_text(SERVICES_PY)
    return agents


class AdkApiServer:
    def __init__(self, agents_dir: Path, uri: str) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        command = [
            *(sys.executable, "-m", "google.adk.cli", "api_server"),
            *("--port", str(self.port), "--no-reload"),
            *("--session_service_uri", uri, "--memory_service_uri", uri),
            str(agents_dir),
        ]
        self.log = agents_dir.parent / "adk.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ)
            )

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"adk api_server exited:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.base_url}/list-apps", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"adk api_server did not start:\n{self.log.read_text()}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(params=["services.yaml", "services.py"])
def adk_server(
    request: pytest.FixtureRequest, server: ServerProcess, tmp_path: Path
) -> Iterator[AdkApiServer]:
    uri = server.base_url.replace("http://", "session-state://")
    adk = AdkApiServer(_agents_dir(tmp_path, request.param), uri)
    try:
        adk.wait_ready()
        yield adk
    finally:
        adk.stop()


async def test_a_turn_run_by_adk_api_server_is_stored_in_session_state(
    adk_server: AdkApiServer, server: ServerProcess
) -> None:
    user = f"user-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=adk_server.base_url, timeout=30) as adk:
        created = await adk.post(
            f"/apps/helper/users/{user}/sessions", json={"state": {"mood": "curious"}}
        )
        assert created.status_code == 200, created.text
        session_id = created.json()["id"]
        ran = await adk.post(
            "/run",
            json={
                "app_name": "helper",
                "user_id": user,
                "session_id": session_id,
                "new_message": {"role": "user", "parts": [{"text": "I like green tea"}]},
            },
        )
        assert ran.status_code == 200, ran.text
        assert ran.json()[-1]["content"]["parts"][0]["text"] == "Noted: you like green tea."
        through_adk = (await adk.get(f"/apps/helper/users/{user}/sessions/{session_id}")).json()

    async with AsyncSessionStateClient(base_url=server.base_url) as ours:
        stored = await ours.get_session(app_name="helper", user_id=user, session_id=session_id)
        user_state = await ours.get_user_state(app_name="helper", user_id=user)
        found = await ours.search_memory(app_name="helper", user_id=user, query="green tea")

    assert stored.state == {
        "mood": "curious",
        "last_reply": "Noted: you like green tea.",
        "user:fact": "likes green tea",
    }
    assert user_state == {"fact": "likes green tea"}
    # The user's message, the tool call, its response and the answer.
    assert len(stored.events) == 4
    assert [event["id"] for event in stored.events] == [
        event["id"] for event in through_adk["events"]
    ]
    assert through_adk["state"] == stored.state
    assert any("green tea" in memory.content.parts[0].text for memory in found.memories)
