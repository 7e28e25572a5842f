"""The server's rewind (HttpSessionService.rewind_session, POST .../rewind)
leaves a session exactly as ADK's own client-side rewind (Runner.rewind_async
on InMemorySessionService) leaves it on the same history, on both backends:
the same state, the same events (ids and times aside), and the same model
requests afterwards; Runner.rewind_async keeps working through the adapter."""

import uuid
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.errors._invocation_not_found_error import InvocationNotFoundError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events import Event, EventActions
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService, InMemorySessionService, Session
from google.genai import types

from session_state_client.adk import HttpSessionService
from tests.client.adk_scripted_model import RecordingLlm, agent, message


class StateAgent(BaseAgent):
    """Each turn writes every scope and, on even turns, deletes a key."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        turn = (ctx.session.state.get("turn") or 0) + 1
        text = ctx.user_content.parts[0].text if ctx.user_content else ""
        delta: dict[str, Any] = {
            "turn": turn,
            f"said_{turn}": text,
            "app:turns_everywhere": (ctx.session.state.get("app:turns_everywhere") or 0) + 1,
            "user:last_said": text,
            "temp:scratch": turn,
        }
        if turn % 2 == 0:
            delta["said_1"] = None
        if turn == 3:
            delta["overwritten"] = "by turn 3"
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            content=types.Content(role="model", parts=[types.Part(text=f"turn {turn}")]),
            actions=EventActions(state_delta=delta),
        )


async def _conversation(
    service: BaseSessionService, runner: Runner, app: str, texts: list[str]
) -> tuple[Session, list[str]]:
    session = await service.create_session(
        app_name=app,
        user_id="u",
        state={"from_creation": "x", "overwritten": "x", "user:tier": "gold"},
    )
    invocations = []
    for text in texts:
        seen = {
            event.invocation_id
            async for event in runner.run_async(
                user_id="u", session_id=session.id, new_message=message(text)
            )
        }
        invocations.append(seen.pop())
    return session, invocations


def _comparable(session: Session) -> list[dict[str, Any]]:
    """The events without what differs from run to run (ids, times), their
    invocations named by their order of appearance."""
    order: dict[str, int] = {}
    for event in session.events:
        order.setdefault(event.invocation_id, len(order))
    comparable = []
    for event in session.events:
        dumped = event.model_dump(mode="json", exclude={"id", "timestamp", "invocation_id"})
        dumped["invocation"] = order[event.invocation_id]
        target = event.actions.rewind_before_invocation_id
        if target is not None:
            dumped["actions"]["rewind_before_invocation_id"] = order[target]
        comparable.append(dumped)
    return comparable


async def _rewound(
    service: BaseSessionService, *, on_server: bool, before: int, texts: list[str]
) -> Session:
    app = f"rw-{uuid.uuid4().hex[:8]}"
    runner = Runner(agent=StateAgent(name="stater"), app_name=app, session_service=service)
    session, invocations = await _conversation(service, runner, app, texts)
    if on_server:
        assert isinstance(service, HttpSessionService)
        await service.rewind_session(
            app_name=app,
            user_id="u",
            session_id=session.id,
            rewind_before_invocation_id=invocations[before],
        )
    else:
        await runner.rewind_async(
            user_id="u", session_id=session.id, rewind_before_invocation_id=invocations[before]
        )
    # The session goes on from the rewound state.
    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message("on")):
        pass
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert stored is not None
    return stored


TEXTS = ["one", "two", "three", "four"]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("how", ["server", "runner"])
@pytest.mark.parametrize("before", range(len(TEXTS)))
async def test_a_rewind_leaves_the_session_as_adks_own_rewind_does(backend, how, before, request):
    server = request.getfixturevalue(f"{backend}_server")
    reference = await _rewound(
        InMemorySessionService(), on_server=False, before=before, texts=TEXTS
    )
    service = HttpSessionService(base_url=server.base_url)
    try:
        stored = await _rewound(service, on_server=how == "server", before=before, texts=TEXTS)
    finally:
        await service.close()
    assert stored.state == reference.state
    assert _comparable(stored) == _comparable(reference)
    marker = stored.events[-3]
    assert marker.actions.rewind_before_invocation_id is not None
    # As ADK (2.15) rewinds: a creation key no undone event wrote stays; one
    # an undone event overwrote is set to None (its first value is in no
    # event), unless the turn after the rewind, turn before + 1, wrote it again.
    assert reference.state["from_creation"] == "x"
    assert reference.state["overwritten"] == ("by turn 3" if before >= 2 else None)
    assert reference.state["user:tier"] == "gold"


async def _llm_turns(service: BaseSessionService, *, on_server: bool) -> list[Any]:
    """A conversation with a model, rewound before its third turn, then
    taken on: the requests the model got."""
    model = RecordingLlm()
    app = f"rw-{uuid.uuid4().hex[:8]}"
    runner = Runner(agent=agent(model), app_name=app, session_service=service)
    session, invocations = await _conversation(
        service, runner, app, ["hello", "look up tea", "look up coffee", "thanks"]
    )
    where = {"user_id": "u", "session_id": session.id}
    if on_server:
        assert isinstance(service, HttpSessionService)
        await service.rewind_session(
            app_name=app, **where, rewind_before_invocation_id=invocations[2]
        )
    else:
        await runner.rewind_async(**where, rewind_before_invocation_id=invocations[2])
    async for _ in runner.run_async(**where, new_message=message("look up water")):
        pass
    return model.requests


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_after_a_server_rewind_the_model_sees_what_adks_rewind_leaves(backend, request):
    server = request.getfixturevalue(f"{backend}_server")
    reference = await _llm_turns(InMemorySessionService(), on_server=False)
    service = HttpSessionService(base_url=server.base_url)
    try:
        requests = await _llm_turns(service, on_server=True)
    finally:
        await service.close()
    assert requests == reference
    # The rewound turns ("look up coffee", "thanks") are not in the last prompt.
    assert "coffee" not in str(requests[-1]) and "tea" in str(requests[-1])


async def test_rewind_errors_are_adks(sqlite_server):
    service = HttpSessionService(base_url=sqlite_server.base_url)
    try:
        session = await service.create_session(app_name="rw", user_id="u")
        with pytest.raises(InvocationNotFoundError):
            await service.rewind_session(
                app_name="rw", user_id="u", session_id=session.id, rewind_before_invocation_id="x"
            )
        with pytest.raises(SessionNotFoundError):
            await service.rewind_session(
                app_name="rw", user_id="u", session_id="none", rewind_before_invocation_id="x"
            )
        with pytest.raises(SessionNotFoundError):
            await service.rewind_session(
                app_name="rw", user_id="u", session_id=" ", rewind_before_invocation_id="x"
            )
    finally:
        await service.close()
