"""What newer ADK releases (2.x) ask of a session service, through
HttpSessionService on both backends and, side by side, ADK's own
InMemorySessionService: Runner.rewind_async, events carrying the newer fields
(compaction, node_info, output, transfer_reason, route), and flush()."""

from collections.abc import AsyncGenerator

import httpx
import orjson
import pytest
from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event, EventActions
from google.adk.events.event import NodeInfo
from google.adk.events.event_actions import EventCompaction
from google.adk.runners import Runner
from google.genai import types

from session_state_client.adk import HttpSessionService


class CountingAgent(BaseAgent):
    """Each turn adds one to a session key and records the turn's text."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        turns = ctx.session.state.get("turns", 0) + 1
        text = ctx.user_content.parts[0].text if ctx.user_content else ""
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            content=types.Content(role="model", parts=[types.Part(text=f"turn {turns}")]),
            actions=EventActions(state_delta={"turns": turns, f"said_{turns}": text}),
        )


def _message(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def _turn(runner: Runner, session_id: str, text: str) -> str:
    invocation_ids = {
        event.invocation_id
        async for event in runner.run_async(
            user_id="u", session_id=session_id, new_message=_message(text)
        )
    }
    (invocation_id,) = invocation_ids
    return invocation_id


async def test_rewind_async_restores_the_state_before_an_invocation(service, app):
    runner = Runner(agent=CountingAgent(name="counter"), app_name=app, session_service=service)
    session = await service.create_session(app_name=app, user_id="u", state={"kept": True})
    await _turn(runner, session.id, "first")
    second = await _turn(runner, session.id, "second")
    await _turn(runner, session.id, "third")

    await runner.rewind_async(
        user_id="u", session_id=session.id, rewind_before_invocation_id=second
    )

    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    # As ADK (2.15) rewinds: keys that only the undone events set are set to
    # None, the initial state no event wrote stays; the rest as before `second`.
    assert stored.state == {
        "kept": True,
        "turns": 1,
        "said_1": "first",
        "said_2": None,
        "said_3": None,
    }
    rewind = stored.events[-1]
    assert rewind.actions.rewind_before_invocation_id == second
    # Three turns of two events (the user's message, the answer) and the rewind.
    assert len(stored.events) == 7
    # The session keeps going from the restored state.
    await _turn(runner, session.id, "again")
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert stored.state["turns"] == 2
    assert stored.state["said_2"] == "again"


def _event_with_newer_fields() -> Event:
    compacted = types.Content(role="model", parts=[types.Part(text="summary of turns 1-3")])
    return Event(
        author="workflow",
        invocation_id="inv-newer",
        content=types.Content(role="model", parts=[types.Part(text="routed")]),
        output={"score": 0.5, "labels": ["a", "b"], "nested": {"ok": True}},
        node_info=NodeInfo(path="wf/A@1/B@1", output_for=["wf/A@1"], message_as_output=True),
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=1.0, end_timestamp=2.5, compacted_content=compacted
            ),
            transfer_to_agent="billing",
            transfer_reason="the user asked about an invoice",
            route=["billing", 2, True],
            state_delta={"step": "routed"},
        ),
    )


async def test_events_with_newer_fields_round_trip(service, app):
    session = await service.create_session(app_name=app, user_id="u")
    event = await service.append_event(session, _event_with_newer_fields())
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert stored.events == [event]
    assert stored.events[0].model_dump(mode="json") == event.model_dump(mode="json")


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_newer_fields_are_stored_byte_for_byte(backend, app, request):
    server = request.getfixturevalue(f"{backend}_server")
    service = HttpSessionService(base_url=server.base_url)
    try:
        session = await service.create_session(app_name=app, user_id="u")
        event = await service.append_event(session, _event_with_newer_fields())
    finally:
        await service.close()
    # What HttpSessionService sends, as compact JSON.
    sent = orjson.dumps(event.model_dump(mode="json", by_alias=True, exclude_none=True))
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        response = await http.get(f"/apps/{app}/users/u/sessions/{session.id}")
    # The event comes back as those exact bytes, key order and all.
    assert sent.decode() in response.text
    assert b'"nodeInfo":{"path":"wf/A@1/B@1"' in sent and b'"transferReason"' in sent


async def test_flush_is_harmless(service, app):
    session = await service.create_session(app_name=app, user_id="u")
    await service.append_event(
        session,
        Event(author="a", invocation_id="i", actions=EventActions(state_delta={"k": 1})),
    )
    await service.flush()
    await service.flush()
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert stored.state == {"k": 1} and len(stored.events) == 1
