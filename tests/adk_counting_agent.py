"""The scripted ADK agent of the threaded-Runner scenario, shared by its
test (tests/client/test_adk_threads.py) and its benchmark
(bench/adk_threads.py), so that both measure the same turns."""

from collections.abc import AsyncGenerator

from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event, EventActions
from google.genai import types


class CountingAgent(BaseAgent):
    """Counts its turns in session state and in user state (and in a `temp:`
    key, never stored); says the count."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        turns = ctx.session.state.get("turns", 0) + 1
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            content=types.Content(role="model", parts=[types.Part(text=f"turn {turns} done")]),
            actions=EventActions(
                state_delta={"turns": turns, "user:turns": turns, "temp:scratch": turns}
            ),
        )
