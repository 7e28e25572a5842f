"""Every field of the installed ADK's EventActions, one event each, through
HttpSessionService on both backends and ADK's InMemorySessionService side by
side: stored and read back unchanged, and kept by a compacted read even when
a summary covers the event (an action may matter beyond the prompt). The
cases are generated from EventActions.model_fields: a field ADK adds fails
here until tests/adk_events.action_samples gives it a value."""

import pytest
from google.adk.events import Event, EventActions
from google.adk.events.event_actions import EventCompaction
from google.adk.sessions import InMemorySessionService
from google.genai import types

from session_state_client.adk import HttpSessionService
from tests.adk_events import action_samples


def _said(moment: float) -> Event:
    text = types.Content(role="model", parts=[types.Part(text=f"at {moment}")])
    return Event(author="agent", invocation_id=f"i{moment}", timestamp=moment, content=text)


def _summary(start: float, end: float, moment: float) -> Event:
    content = types.Content(role="model", parts=[types.Part(text=f"{start}-{end}")])
    compaction = EventCompaction(
        start_timestamp=start, end_timestamp=end, compacted_content=content
    )
    return Event(author="user", timestamp=moment, actions=EventActions(compaction=compaction))


@pytest.mark.parametrize("field", sorted(EventActions.model_fields))
async def test_each_event_action_round_trips(service, app, field):
    samples = action_samples()
    assert field in samples, f"ADK's EventActions has a new field {field!r}: give it a sample"
    acting = Event(
        author="agent",
        invocation_id="inv-1",
        timestamp=1.5,
        content=types.Content(role="model", parts=[types.Part(text="acting")]),
        actions=EventActions(**{field: samples[field]}),
    )
    session = await service.create_session(app_name=app, user_id="u")
    # Two summaries: the first covers the acting event, the second is the newest.
    history = [_said(1.0), acting, _said(2.0), _summary(1.0, 2.0, 2.5), _said(3.0)]
    history += [_summary(3.0, 3.0, 3.5), _said(4.0)]
    for event in history:
        await service.append_event(session, event)
    stored = await service.get_session(app_name=app, user_id="u", session_id=session.id)
    assert stored is not None
    assert stored.events[1] == acting
    assert stored.events[1].model_dump(mode="json") == acting.model_dump(mode="json")
    if isinstance(service, InMemorySessionService):
        return
    compacting = HttpSessionService(client=service.client, compacted_reads=True)
    compacted = await compacting.get_session(app_name=app, user_id="u", session_id=session.id)
    assert compacted is not None
    kept = [event.id for event in compacted.events]
    # The plain events the first summary covers are left out, the acting one stays.
    assert history[0].id not in kept and history[2].id not in kept
    assert acting.id in kept
