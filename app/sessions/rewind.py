"""Rewinding a session to before an invocation, as ADK's
`Runner.rewind_async` does it, done by the server: the history is read and
the marker event appended on the revision that was read, so an append that
comes in between makes the rewind fail (412) or, without If-Match, start
over on the newer history; it never reverts half of what it saw.

The marker is ADK's: an event of the user whose `actions` carry
`rewindBeforeInvocationId` and the state delta that reverts the session
scope to what the events before the invocation had set. Events stay in the
history (ADK's readers skip the rewound ones); `app:` and `user:` state is
shared, and left alone; the server stores no artifacts, so the marker's
`artifactDelta` is empty."""

from typing import Any

from ..core.errors import InvocationNotFound, SessionNotFound, StaleSession
from .domain import AppendOutcome, SessionKey
from .invocations import find_start, session_keys_written
from .service import SessionService
from .service_base import WRITE_ATTEMPTS
from .state import StateDict


def reverting_delta(
    deltas_state: StateDict, current: StateDict, written_since: set[str]
) -> StateDict:
    """The delta taking the session scope from `current` to what the events
    before the rewind point set (`deltas_state`), as ADK (2.15) computes it:
    keys those events set, with a value other than now's, get it back; a key
    the undone events wrote (`written_since`) that those before did not set
    is set to None. Other keys, those the session was created with among
    them, stay; a creation key an undone event overwrote is cleared too, as
    ADK has no record of its first value."""
    delta = {
        key: value
        for key, value in deltas_state.items()
        if key not in current or current[key] != value
    }
    for key in written_since:
        if key not in deltas_state and key in current:
            delta[key] = None
    return delta


def rewind_marker(
    event_id: str, invocation_id: str, before_invocation_id: str, delta: StateDict
) -> dict[str, Any]:
    """ADK's rewind event, as its JSON: by the user, in an invocation of its own."""
    return {
        "id": event_id,
        "invocationId": invocation_id,
        "author": "user",
        "actions": {
            "stateDelta": delta,
            "artifactDelta": {},
            "rewindBeforeInvocationId": before_invocation_id,
        },
    }


async def rewind_session(
    service: SessionService,
    key: SessionKey,
    before_invocation_id: str,
    expected_revision: int | None,
) -> AppendOutcome:
    """Appends the marker that rewinds the session to before the invocation's
    first event, computed from the history at the revision it is appended on.
    InvocationNotFound when no event carries the id; StaleSession when the
    session is not at `expected_revision` (given) or moved on meanwhile."""
    store = service.store
    for _ in range(WRITE_ATTEMPTS):
        session = await store.read_session(key, service.clock())
        if session is None:
            raise SessionNotFound.of(key)
        if expected_revision is not None and session.revision != expected_revision:
            raise StaleSession.moved_on()
        start = await find_start(store, key, session.revision, before_invocation_id)
        if start is None:
            raise InvocationNotFound.of(key, before_invocation_id)
        written_since = await session_keys_written(store, key, start.seq_before, session.revision)
        marker = rewind_marker(
            service.new_id(),
            f"e-{service.new_id()}",
            before_invocation_id,
            reverting_delta(start.deltas_state, session.state, written_since),
        )
        try:
            # On the revision read: the history it was computed from.
            return await service.append_event(key, marker, session.revision)
        except StaleSession:
            if expected_revision is not None:
                raise
    raise StaleSession.kept_changing("the session was rewound")
