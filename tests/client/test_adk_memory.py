"""ADK's load_memory tool served by HttpMemoryService: a fact told in one
session is found by a scripted model in the next one."""

import uuid
from collections.abc import AsyncGenerator

import pytest
from google.adk.agents import BaseAgent, LlmAgent
from google.adk.agents.context import Context
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import Session
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


# ADK 2.13's memory service, side by side: ADK's InMemoryMemoryService is the
# reference, HttpMemoryService on each backend must behave the same.


@pytest.fixture(params=["in_memory", "http-sqlite", "http-postgresql"])
async def memory_service(request):
    if request.param == "in_memory":
        yield InMemoryMemoryService()
        return
    server = request.getfixturevalue(f"{request.param.removeprefix('http-')}_server")
    service = HttpMemoryService(base_url=server.base_url)
    yield service
    await service.close()


def _told(text: str, event_id: str | None = None) -> Event:
    event = Event(author="user", invocation_id="i", content=_say(text))
    if event_id:
        event.id = event_id
    return event


async def _texts(service, app: str, query: str, user: str = "ada") -> list[str]:
    found = await service.search_memory(app_name=app, user_id=user, query=query)
    return sorted(part.text for entry in found.memories for part in entry.content.parts)


async def test_a_session_kept_anywhere_is_added_from_its_events(memory_service, app):
    # Never stored on the server: the session object is what is taken.
    session = Session(id="elsewhere", app_name=app, user_id="ada", events=[_told("Kestrels hover")])
    await memory_service.add_session_to_memory(session)
    assert await _texts(memory_service, app, "kestrels") == ["Kestrels hover"]


async def test_events_added_twice_are_one_memory(memory_service, app):
    events = [_told("Badgers dig setts", "b1"), _told("Badgers eat worms", "b2")]
    for _ in range(2):
        await memory_service.add_events_to_memory(
            app_name=app, user_id="ada", events=events, session_id="s"
        )
    assert await _texts(memory_service, app, "badgers") == [
        "Badgers dig setts",
        "Badgers eat worms",
    ]


async def test_a_deleted_memory_stays_deleted_when_its_session_is_added_again(memory_service, app):
    session = Session(
        id="s",
        app_name=app,
        user_id="ada",
        events=[_told("Otters hold hands", "o1"), _told("Otters use stones", "o2")],
    )
    await memory_service.add_session_to_memory(session)
    found = await memory_service.search_memory(app_name=app, user_id="ada", query="hold hands")
    hold = next(entry for entry in found.memories if "hands" in entry.content.parts[0].text)
    await memory_service.delete_memory(app_name=app, user_id="ada", memory_id=hold.id)
    await memory_service.add_session_to_memory(session)
    assert await _texts(memory_service, app, "otters") == ["Otters use stones"]
    # No id, or an unknown one: nothing happens.
    await memory_service.delete_memory(app_name=app, user_id="ada", memory_id=None)
    await memory_service.delete_memory(app_name=app, user_id="ada", memory_id="unknown")
    assert await _texts(memory_service, app, "otters") == ["Otters use stones"]


@pytest.mark.parametrize("query", ["", "   "])
async def test_an_empty_query_finds_no_memories(memory_service, app, query):
    await memory_service.add_events_to_memory(
        app_name=app, user_id="ada", events=[_told("Anything")]
    )
    assert (
        await memory_service.search_memory(app_name=app, user_id="ada", query=query)
    ).memories == []


async def test_memories_keep_every_part_of_their_content(memory_service, app):
    call = types.Part(function_call=types.FunctionCall(name="book", args={"city": "Oslo"}))
    event = _told("Booking Oslo")
    event.content.parts.append(call)
    await memory_service.add_events_to_memory(
        app_name=app, user_id="ada", events=[event], session_id="s"
    )
    (entry,) = (
        await memory_service.search_memory(app_name=app, user_id="ada", query="Oslo")
    ).memories
    assert entry.content == event.content
    assert entry.id == event.id and entry.author == "user"


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_add_memory_writes_entries_directly(backend, request, app):
    """InMemoryMemoryService does not implement add_memory (NotImplementedError);
    ours writes the entries, kept as given."""
    server = request.getfixturevalue(f"{backend}_server")
    service = HttpMemoryService(base_url=server.base_url)
    entry = MemoryEntry(
        id="diet",
        author="curator",
        timestamp="2024-05-01T10:00:00+00:00",
        content=types.Content(parts=[types.Part(text="Ada is vegetarian")]),
        custom_metadata={"source": "profile"},
    )
    try:
        await service.add_memory(app_name=app, user_id="ada", memories=[entry])
        await service.add_memory(
            app_name=app,
            user_id="ada",
            memories=[MemoryEntry(content=types.Content(parts=[types.Part(text="Ada cycles")]))],
        )
        found = await service.search_memory(app_name=app, user_id="ada", query="vegetarian")
        assert found.memories == [entry]
        assert await _texts(service, app, "cycles") == ["Ada cycles"]
        await service.delete_memory(app_name=app, user_id="ada", memory_id="diet")
        assert await _texts(service, app, "vegetarian") == []
    finally:
        await service.close()


class RememberingAgent(BaseAgent):
    """Answers, then adds only this turn's events to memory through ADK's
    context (ctx.add_events_to_memory, new in ADK 2.13)."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        answer = Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            content=types.Content(role="model", parts=[types.Part(text="Noted: puffins")]),
        )
        yield answer
        turn = [event for event in ctx.session.events if event.invocation_id == ctx.invocation_id]
        await Context(ctx).add_events_to_memory(events=turn)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_adks_context_adds_a_turns_events(backend, request, app):
    server = request.getfixturevalue(f"{backend}_server")
    sessions = HttpSessionService(base_url=server.base_url)
    memory = HttpMemoryService(base_url=server.base_url)
    runner = Runner(
        app_name=app,
        agent=RememberingAgent(name="rememberer"),
        session_service=sessions,
        memory_service=memory,
    )
    try:
        session = await sessions.create_session(app_name=app, user_id="ada")
        async for _ in runner.run_async(
            user_id="ada", session_id=session.id, new_message=_say("I saw puffins")
        ):
            pass
        found = await memory.search_memory(app_name=app, user_id="ada", query="puffins")
        assert sorted(entry.content.parts[0].text for entry in found.memories) == [
            "I saw puffins",
            "Noted: puffins",
        ]
        assert {entry.custom_metadata["sessionId"] for entry in found.memories} == {session.id}
    finally:
        await sessions.close()
        await memory.close()
