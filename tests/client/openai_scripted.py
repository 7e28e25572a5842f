"""A scripted model for the OpenAI Agents SDK: no network, deterministic output.

Each turn it first calls the `remember` tool with the last user message as the
fact, then, once the tool's output is in the input, answers "Noted: <fact>".
Output item ids ("fc_<n>", "msg_<n>") and call ids ("call_<n>") take n from the
1-based position the item will have in the conversation (len(input) + 1): they
depend on the history only, not on the model instance, and a session's call
ids do not repeat (with a session, the Runner passes the whole history in).
"""

import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

from agents import Agent, function_tool
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.model_settings import ModelSettings
from agents.models.interface import Model, ModelTracing
from agents.tool import Tool
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_prompt_param import ResponsePromptParam

TOOL_NAME = "remember"


def _field(item: Any, name: str) -> Any:
    """A field of an input item, whether it is a dict or a pydantic model."""
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, name, None)


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable):
        return "".join(str(_field(part, "text") or "") for part in content)
    return ""


def _last_user_turn(items: list[TResponseInputItem]) -> tuple[str, list[TResponseInputItem]]:
    """The text of the last user message and the items after it."""
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if _field(item, "role") == "user":
            return _text_of(_field(item, "content")), items[index + 1 :]
    raise ValueError("ScriptedModel: the input has no user message")


class ScriptedModel(Model):
    """Calls `remember(fact=<last user text>)`, then answers "Noted: <fact>"."""

    def __init__(self) -> None:
        self.inputs: list[list[TResponseInputItem]] = []
        """Every input this model was called with, in order."""

    def respond(self, input: str | list[TResponseInputItem]) -> ModelResponse:
        items: list[TResponseInputItem] = (
            [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        )
        self.inputs.append(items)
        fact, after = _last_user_turn(items)
        n = len(items) + 1
        if not any(_field(item, "type") == "function_call_output" for item in after):
            call = ResponseFunctionToolCall(
                id=f"fc_{n}",
                call_id=f"call_{n}",
                name=TOOL_NAME,
                arguments=json.dumps({"fact": fact}),
                type="function_call",
                status="completed",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=f"resp_{n}")
        message = ResponseOutputMessage(
            id=f"msg_{n}",
            role="assistant",
            status="completed",
            type="message",
            content=[ResponseOutputText(type="output_text", text=f"Noted: {fact}", annotations=[])],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=f"resp_{n}")

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        return self.respond(input)

    def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("ScriptedModel supports Runner.run only, not run_streamed")


@function_tool
def remember(fact: str) -> str:
    """Remember a fact about the user.

    Args:
        fact: The fact to remember.
    """
    return f"remembered {fact}"


def scripted_agent() -> Agent:
    return Agent(
        name="assistant",
        instructions="Remember every fact the user tells you, then confirm it.",
        model=ScriptedModel(),
        tools=[remember],
    )
