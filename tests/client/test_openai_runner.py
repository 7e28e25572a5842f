"""The OpenAI Agents SDK's real `Runner` over a session, with a scripted model
(no network): what a turn stores, and that another reader of the same session
id, in this process or another, sees it; on the SDK's SQLiteSession (the
reference) and on SessionStateSession over each backend."""

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
from agents import RunConfig, Runner, SQLiteSession
from agents.memory import Session

from tests.client.openai_scripted import ScriptedModel, scripted_agent
from tests.client.openai_stores import Stores, finish, run_worker

# No trace export: it would try the network (and warns without OPENAI_API_KEY).
NO_TRACING = RunConfig(tracing_disabled=True)


@pytest.fixture(params=["reference", "sqlite", "postgresql"])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    """The SDK's SQLiteSession (the reference), then SessionStateSession on a
    server of each backend."""
    server = None
    if request.param != "reference":
        server = request.getfixturevalue(f"{request.param}_server")
    opened = Stores(request.param, tmp_path, server)
    yield opened
    await opened.close()


def _check_turn(items: list[dict[str, Any]], fact: str) -> None:
    user, call, output, answer = items
    assert user == {"content": fact, "role": "user"}
    assert call["type"] == "function_call"
    assert call["name"] == "remember"
    assert json.loads(call["arguments"]) == {"fact": fact}
    assert call["arguments"] == json.dumps({"fact": fact})
    assert output["type"] == "function_call_output"
    assert output["call_id"] == call["call_id"]
    assert output["output"] == f"remembered {fact}"
    assert answer["type"] == "message"
    assert answer["role"] == "assistant"
    assert answer["status"] == "completed"
    assert [part["text"] for part in answer["content"]] == [f"Noted: {fact}"]


async def two_turns(session: Session) -> list[dict[str, Any]]:
    """Two turns of the Runner, each calling a tool; the items stored."""
    first = await Runner.run(scripted_agent(), "likes tea", session=session, run_config=NO_TRACING)
    assert first.final_output == "Noted: likes tea"
    second = await Runner.run(
        scripted_agent(), "likes jazz", session=session, run_config=NO_TRACING
    )
    assert second.final_output == "Noted: likes jazz"
    # Plain dicts: the SDK types them as a union of TypedDicts.
    return cast(list[dict[str, Any]], await session.get_items())


async def test_runner_stores_each_turn_in_the_session(stores: Stores) -> None:
    session_id = f"conv-{uuid.uuid4().hex[:12]}"
    session = stores.open(session_id)

    items = await two_turns(session)
    assert len(items) == 8
    _check_turn(items[:4], "likes tea")
    _check_turn(items[4:], "likes jazz")
    # The scripted model numbers items by their 1-based place in the history.
    assert [(item["call_id"], item["id"]) for item in (items[1], items[5])] == [
        ("call_2", "fc_2"),
        ("call_6", "fc_6"),
    ]
    assert [items[3]["id"], items[7]["id"]] == ["msg_4", "msg_8"]

    reader = stores.open(session_id)
    assert await reader.get_items() == items
    assert await reader.get_items(limit=4) == items[4:]
    # Another process reading the same session sees the same items.
    assert finish(run_worker(stores, session_id, "read")) == items


async def test_a_turn_continues_from_the_history_another_process_wrote(stores: Stores) -> None:
    """A turn run in one process, the next in another session object (as
    after a restart): the model is given the whole history."""
    session_id = f"conv-{uuid.uuid4().hex[:12]}"
    await Runner.run(
        scripted_agent(), "likes tea", session=stores.open(session_id), run_config=NO_TRACING
    )
    agent = scripted_agent()
    await Runner.run(agent, "likes jazz", session=stores.open(session_id), run_config=NO_TRACING)
    model = cast(ScriptedModel, agent.model)
    first_input = cast(list[dict[str, Any]], model.inputs[0])
    assert [item.get("content") for item in first_input[:1]] == ["likes tea"]
    assert len(first_input) == 5  # four items of the first turn, then the new message


async def test_the_items_of_a_tool_calling_turn_are_those_the_sdk_stores(
    stores: Stores, tmp_path: Path
) -> None:
    reference = SQLiteSession("reference", tmp_path / "reference.db")
    try:
        expected = await two_turns(reference)
    finally:
        reference.close()
    assert await two_turns(stores.open(f"conv-{uuid.uuid4().hex[:12]}")) == expected


async def test_session_settings_given_as_a_dict_limit_what_the_runner_reads(
    stores: Stores,
) -> None:
    """`session_settings={"limit": 2}` is coerced as the SDK does: the second
    turn is given the last two items of the history (of which the SDK drops
    the tool output whose call is cut off), then its own."""
    session_id = f"conv-{uuid.uuid4().hex[:12]}"
    session = stores.open(session_id, {"limit": 2})
    await Runner.run(scripted_agent(), "likes tea", session=session, run_config=NO_TRACING)
    agent = scripted_agent()
    second = await Runner.run(agent, "likes jazz", session=session, run_config=NO_TRACING)
    assert second.final_output == "Noted: likes jazz"
    first_input = cast(list[dict[str, Any]], cast(ScriptedModel, agent.model).inputs[0])
    assert [(item.get("type", "message"), item.get("role")) for item in first_input] == [
        ("message", "assistant"),
        ("message", "user"),
    ]
    assert first_input[-1]["content"] == "likes jazz"
    assert len(await stores.open(session_id).get_items()) == 8
