"""A real ADK Runner, with agents that need no network, keeping its sessions in
session-state through HttpSessionService; the state outlives a server restart."""

import uuid
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest
from google.adk.agents import BaseAgent, LlmAgent, SequentialAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event, EventActions
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from session_state_client.adk import HttpSessionService
from tests.conftest import ServerProcess


class ScriptedLlm(BaseLlm):
    """Calls the `remember` tool on its first turn, then answers with text."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        already_called = any(
            part.function_response
            for content in llm_request.contents
            for part in content.parts or []
        )
        if not already_called:
            call = types.FunctionCall(name="remember", args={"fact": "likes tea"})
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(function_call=call)])
            )
            return
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="Noted.")]))


def remember(fact: str, tool_context: ToolContext) -> dict[str, str]:
    """Remembers a fact about the user."""
    tool_context.state["user:fact"] = fact
    tool_context.state["temp:tool_scratch"] = "gone after the turn"
    return {"status": "ok"}


def count_turns(callback_context: CallbackContext) -> None:
    callback_context.state["app:turns"] = callback_context.state.get("app:turns", 0) + 1


class StepAgent(BaseAgent):
    """Writes state through an event's state_delta, including a temp: key."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        visits = ctx.session.state.get("visits", 0) + 1
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            content=types.Content(role="model", parts=[types.Part(text=f"visit {visits}")]),
            actions=EventActions(state_delta={"visits": visits, "temp:step": visits}),
        )


def _runner(base_url: str, app: str) -> tuple[Runner, HttpSessionService]:
    model_agent = LlmAgent(
        name="assistant",
        model=ScriptedLlm(),
        instruction="Remember facts.",
        tools=[remember],
        output_key="last_reply",
        before_agent_callback=count_turns,
    )
    agent = SequentialAgent(name="root", sub_agents=[StepAgent(name="step"), model_agent])
    service = HttpSessionService(base_url=base_url)
    return Runner(app_name=app, agent=agent, session_service=service), service


async def _turn(runner: Runner, user_id: str, session_id: str, text: str) -> list[Event]:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    return [
        event
        async for event in runner.run_async(
            user_id=user_id, session_id=session_id, new_message=message
        )
    ]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_a_runner_keeps_its_state_in_session_state_across_a_restart(
    backend, tmp_path: Path, request
):
    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'runner.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    app = f"runner-{uuid.uuid4().hex[:8]}"
    server = ServerProcess(url).start()
    try:
        runner, service = _runner(server.base_url, app)
        session = await service.create_session(app_name=app, user_id="ada")
        events = await _turn(runner, "ada", session.id, "I like tea.")
        assert any(event.get_function_calls() for event in events)

        stored = await service.get_session(app_name=app, user_id="ada", session_id=session.id)
        assert stored.state["visits"] == 1  # EventActions.state_delta
        assert stored.state["last_reply"] == "Noted."  # output_key
        assert stored.state["user:fact"] == "likes tea"  # ToolContext.state
        assert stored.state["app:turns"] == 1  # CallbackContext.state
        assert not [key for key in stored.state if key.startswith("temp:")]
        assert all(
            not key.startswith("temp:")
            for event in stored.events
            for key in (event.actions.state_delta if event.actions else {})
        )

        second = await service.create_session(app_name=app, user_id="ada")
        assert second.state["user:fact"] == "likes tea"  # user: state, another session
        other_user = await service.create_session(app_name=app, user_id="bob")
        assert other_user.state["app:turns"] == 1  # app: state, another user
        assert "user:fact" not in other_user.state

        await _turn(runner, "ada", session.id, "Again.")
        await service.close()
    finally:
        server.stop()

    restarted = ServerProcess(url).start()
    try:
        service = HttpSessionService(base_url=restarted.base_url)
        after = await service.get_session(app_name=app, user_id="ada", session_id=session.id)
        assert after.state["visits"] == 2
        assert after.state["app:turns"] == 2
        assert after.state["user:fact"] == "likes tea"
        assert after.events[: len(stored.events)] == stored.events
        assert after.events[len(stored.events)].content.parts[0].text == "Again."
        await service.close()
    finally:
        restarted.stop()


def test_the_sync_runner_works_turn_after_turn(server):
    """ADK's sync `Runner.run` runs every call on a new event loop in a new
    thread: the service's connections must follow, call after call."""
    import asyncio

    app = f"sync-runner-{uuid.uuid4().hex[:8]}"
    runner, service = _runner(server.base_url, app)
    session = asyncio.run(service.create_session(app_name=app, user_id="ada"))
    for text in ("I like tea.", "Again.", "Once more."):
        message = types.Content(role="user", parts=[types.Part(text=text)])
        events = list(runner.run(user_id="ada", session_id=session.id, new_message=message))
        assert events
    stored = asyncio.run(service.get_session(app_name=app, user_id="ada", session_id=session.id))
    assert stored.state["visits"] == 3
    assert stored.state["app:turns"] == 3
