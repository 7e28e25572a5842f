"""HttpSessionService(compacted_reads=True): an ADK Runner whose app compacts
its events (EventsCompactionConfig) sends its model exactly the requests it
sends with the whole history read, and that ADK's own InMemorySessionService
gets it to send, prompts and summaries alike, on both backends, while the
reads leave events out."""

import uuid

import pytest
from google.adk.apps import App
from google.adk.apps.app import EventsCompactionConfig
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService, InMemorySessionService

from session_state_client import AsyncSessionStateClient
from session_state_client.adk import HttpSessionService
from tests.client.adk_scripted_model import RecordingLlm, agent, message

# ADK marks EventsCompactionConfig experimental, and says so on every use.
pytestmark = pytest.mark.filterwarnings("ignore:.*EventsCompactionConfig:UserWarning")

# Turns that talk, use the tool (a call and its answer, which sets state),
# and come back to earlier topics.
TURNS = [
    "hello",
    "look up tea",
    "what about coffee",
    "look up coffee",
    "thanks",
    "look up water",
    "and juice?",
    "look up juice",
    "bye",
    "one more thing",
    "look up milk",
    "done",
]

CONFIGS = {
    "sliding window": lambda: EventsCompactionConfig(compaction_interval=2, overlap_size=1),
    "window overlapping its interval": lambda: EventsCompactionConfig(
        compaction_interval=2, overlap_size=2
    ),
    "window overlapping more than its interval": lambda: EventsCompactionConfig(
        compaction_interval=2, overlap_size=3
    ),
    "token threshold": lambda: EventsCompactionConfig(token_threshold=200, event_retention_size=2),
}


async def _requests(service: BaseSessionService, config: EventsCompactionConfig) -> tuple:
    """The requests the model got over a conversation, and its session id."""
    model = RecordingLlm()
    app = App(name="compacting", root_agent=agent(model), events_compaction_config=config)
    runner = Runner(app=app, session_service=service)
    session = await service.create_session(app_name="compacting", user_id=f"u-{uuid.uuid4()}")
    for text in TURNS:
        async for _ in runner.run_async(
            user_id=session.user_id, session_id=session.id, new_message=message(text)
        ):
            pass
    return model.requests, session


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("kind", sorted(CONFIGS))
async def test_compacted_reads_give_the_model_the_same_requests(backend, kind, request):
    server = request.getfixturevalue(f"{backend}_server")
    reference, _ = await _requests(InMemorySessionService(), CONFIGS[kind]())
    whole_reads = HttpSessionService(base_url=server.base_url)
    config = CONFIGS[kind]()
    compacted_reads = HttpSessionService(
        base_url=server.base_url, compacted_reads=True, compaction_overlap=config.overlap_size or 0
    )
    try:
        whole, _ = await _requests(whole_reads, CONFIGS[kind]())
        compacted, session = await _requests(compacted_reads, CONFIGS[kind]())
    finally:
        await whole_reads.close()
        await compacted_reads.close()
    # A request per turn, one more per tool call, and summaries.
    assert len(reference) > len(TURNS) + sum(text.startswith("look up") for text in TURNS)
    assert any("summary of" in str(contents) for contents in reference)
    assert whole == reference
    assert compacted == reference
    # The compacted reads did leave events out.
    async with AsyncSessionStateClient(base_url=server.base_url) as client:
        read = await client.get_session(
            app_name="compacting", user_id=session.user_id, session_id=session.id, compacted=True
        )
        full = await client.get_session(
            app_name="compacting", user_id=session.user_id, session_id=session.id
        )
    assert read.events_left_out and read.events_left_out > 0
    assert read.bytes_left_out and read.bytes_left_out > 0
    assert len(read.events) + read.events_left_out == len(full.events)


async def test_compacted_reads_are_off_by_default(sqlite_server):
    service = HttpSessionService(base_url=sqlite_server.base_url)
    try:
        assert service.compacted_reads is False
        _, session = await _requests(service, CONFIGS["sliding window"]())
        read = await service.get_session(
            app_name="compacting", user_id=session.user_id, session_id=session.id
        )
    finally:
        await service.close()
    assert read is not None
    async with AsyncSessionStateClient(base_url=sqlite_server.base_url) as client:
        full = await client.get_session(
            app_name="compacting", user_id=session.user_id, session_id=session.id
        )
    assert len(read.events) == len(full.events)
