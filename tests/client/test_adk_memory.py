"""ADK's load_memory tool served by HttpMemoryService: a fact told in one
session is found by a scripted model in the next one."""

import uuid
from collections.abc import AsyncGenerator

import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools import load_memory
from google.genai import types

from session_state_client.adk import HttpMemoryService, HttpSessionService


class RecallingLlm(BaseLlm):
    """Asks load_memory, then repeats what it was given."""

    model: str = "recalling"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        responses = [
            part.function_response.response
            for content in llm_request.contents
            for part in content.parts or []
            if part.function_response
        ]
        if not responses:
            call = types.FunctionCall(name="load_memory", args={"query": "favourite colour"})
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(function_call=call)])
            )
            return
        # The tool's return value, as ADK hands it to the model.
        memories = responses[-1]["result"].memories
        texts = [part.text for memory in memories for part in memory.content.parts]
        reply = texts[0] if texts else "I do not know."
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=reply)]))


def _say(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_load_memory_finds_a_fact_from_an_earlier_session(backend, request):
    server = request.getfixturevalue(f"{backend}_server")
    app = f"memory-{uuid.uuid4().hex[:8]}"
    sessions = HttpSessionService(base_url=server.base_url)
    memory = HttpMemoryService(base_url=server.base_url)
    agent = LlmAgent(name="recaller", model=RecallingLlm(), tools=[load_memory])
    runner = Runner(app_name=app, agent=agent, session_service=sessions, memory_service=memory)

    first = await sessions.create_session(app_name=app, user_id="ada")
    await sessions.append_event(
        first,
        # What the user said in the first session, stored as ADK stores it.
        Event(author="user", invocation_id="first", content=_say("My favourite colour is teal.")),
    )
    await memory.add_session_to_memory(first)

    second = await sessions.create_session(app_name=app, user_id="ada")
    replies = [
        event.content.parts[0].text
        async for event in runner.run_async(
            user_id="ada", session_id=second.id, new_message=_say("What is my favourite colour?")
        )
        if event.content and event.content.parts and event.content.parts[0].text
    ]
    assert replies[-1] == "My favourite colour is teal."

    stranger = await sessions.create_session(app_name=app, user_id="bob")
    found = await memory.search_memory(app_name=app, user_id="bob", query="favourite colour")
    assert found.memories == []
    assert stranger.state == {}
    await sessions.close()
    await memory.close()


async def test_http_memory_entries_have_the_shape_of_adks_own(sqlite_server):
    app = f"memory-{uuid.uuid4().hex[:8]}"
    sessions = HttpSessionService(base_url=sqlite_server.base_url)
    memory = HttpMemoryService(base_url=sqlite_server.base_url)
    reference = InMemoryMemoryService()
    session = await sessions.create_session(app_name=app, user_id="ada")
    await sessions.append_event(
        session, Event(author="user", invocation_id="i", content=_say("Owls hoot at night."))
    )
    await memory.add_session_to_memory(session)
    await reference.add_session_to_memory(session)
    ours = (await memory.search_memory(app_name=app, user_id="ada", query="owls")).memories
    theirs = (await reference.search_memory(app_name=app, user_id="ada", query="owls")).memories
    assert [entry.content.parts[0].text for entry in ours] == [
        entry.content.parts[0].text for entry in theirs
    ]
    assert ours[0].author == theirs[0].author == "user"
    await sessions.close()
    await memory.close()
