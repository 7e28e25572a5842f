"""A model for ADK agents that needs no network and records every request it
is sent, for tests that compare the requests two setups make: it answers
from the request alone, so equal requests get equal answers."""

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import Field

# How ADK's LlmEventSummarizer starts the prompt it sends for a summary.
SUMMARY_PROMPT = "The following is a conversation history"


class RecordingLlm(BaseLlm):
    """Looks things up with the `look_up` tool when asked to, summarises
    when ADK's compactor asks, answers with text otherwise; every request's
    contents are kept in `requests`, as JSON."""

    model: str = "scripted"
    requests: list[list[dict[str, Any]]] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = [
            content.model_dump(mode="json", exclude_none=True) for content in llm_request.contents
        ]
        self.requests.append(contents)
        last = llm_request.contents[-1]
        text = " ".join(part.text for part in last.parts or [] if part.text)
        answered = [part.function_response for part in last.parts or [] if part.function_response]
        # The prompt's size stands for its tokens: the token-threshold compactor reads it.
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=len(str(contents)) // 4
        )
        if text.startswith(SUMMARY_PROMPT):
            part = types.Part(text=f"summary of {text.count(chr(10))} lines")
        elif answered:
            part = types.Part(text=f"found {answered[0].response}")
        elif text.startswith("look up "):
            call = types.FunctionCall(name="look_up", args={"topic": text.removeprefix("look up ")})
            part = types.Part(function_call=call)
        else:
            part = types.Part(text=f"heard {text!r} after {len(contents)} contents")
        yield LlmResponse(content=types.Content(role="model", parts=[part]), usage_metadata=usage)


def look_up(topic: str, tool_context: ToolContext) -> dict[str, str]:
    """Looks a topic up."""
    tool_context.state["last_topic"] = topic
    return {"topic": topic, "answer": f"all about {topic}"}


def agent(model: RecordingLlm) -> LlmAgent:
    return LlmAgent(name="helper", model=model, instruction="Help the user.", tools=[look_up])


def message(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])
