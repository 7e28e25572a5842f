"""Where an invocation starts in a session's history, as ADK finds it for a
rewind: the first stored event carrying its invocation id (rewound events
count: ADK searches the whole history), what came before that event, and
which session keys the events from it on wrote."""

from dataclasses import dataclass, field

from ..core import json_codec
from . import adk_events, history
from .adk_events import Document
from .domain import SessionKey
from .state import APP_PREFIX, TEMP_PREFIX, USER_PREFIX, StateDict
from .store import SessionStore

# Keys a rewind leaves alone: the app's and the user's are shared with other
# sessions, temp: keys are never stored.
NOT_SESSION_KEYS = (APP_PREFIX, USER_PREFIX, TEMP_PREFIX)


@dataclass
class InvocationStart:
    """What precedes an invocation's first event: the seq of the event just
    before it (0: none), and the session-scope keys the deltas of the events
    before it leave, built as ADK's rewind builds them (from no state, not
    from the state the session was created with)."""

    seq_before: int = 0
    deltas_state: StateDict = field(default_factory=dict)

    def passed(self, document: Document, seq: int) -> None:
        """One more event before the invocation's first."""
        for key, value in adk_events.state_delta(document).items():
            if key.startswith(NOT_SESSION_KEYS):
                continue
            if value is None:
                self.deltas_state.pop(key, None)
            else:
                self.deltas_state[key] = value
        self.seq_before = seq


async def find_start(
    store: SessionStore, key: SessionKey, up_to_seq: int, invocation_id: str
) -> InvocationStart | None:
    """The start of the invocation among the session's events up to
    `up_to_seq`, read in batches; None when no event carries its id."""
    start = InvocationStart()
    async for batch in history.batches(store, key, up_to_seq):
        for stored in batch:
            document = json_codec.loads(stored.data)
            if adk_events.invocation_id(document) == invocation_id:
                return start
            start.passed(document, stored.seq)
    return None


async def session_keys_written(
    store: SessionStore, key: SessionKey, after_seq: int, up_to_seq: int
) -> set[str]:
    """The session-scope keys the state deltas of the events after
    `after_seq` (up to `up_to_seq`) wrote, removals included."""
    written: set[str] = set()
    async for batch in history.batches(store, key, up_to_seq, after_seq):
        for stored in batch:
            delta = adk_events.state_delta(json_codec.loads(stored.data))
            written.update(k for k in delta if not k.startswith(NOT_SESSION_KEYS))
    return written
