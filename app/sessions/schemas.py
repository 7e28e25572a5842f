"""Wire models: request bodies, and the documented shape of every response.

Responses are rendered by `app.http.rendering` (stored event JSON is spliced in
verbatim); these models are what the OpenAPI spec shows for them.
"""

from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..core.config import MAX_TTL_SECONDS
from ..core.identifiers import (
    IDENTIFIER_MAX_LENGTH,
    NAME_PATTERN,
    NAME_RULE,
    SESSION_ID_PATTERN,
    SESSION_ID_RULE,
    name_problem,
    session_id_problem,
)
from ..core.limits import MAX_INT64
from ..http.problems import Problem
from ..http.wire import RequestBody, WireModel, held_to
from . import event_contract as contract
from .domain import Expiry
from .labels import LABEL_KEY_PATTERN, LABEL_RULE, LABEL_VALUE_PATTERN, MAX_LABELS, labels_problem


def _identifier_schema(pattern: str, rule: str) -> WithJsonSchema:
    return WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": IDENTIFIER_MAX_LENGTH,
            "pattern": pattern,
            "description": f"{rule}.",
        }
    )


SessionIdentifier = Annotated[
    str,
    held_to(session_id_problem, "identifier"),
    _identifier_schema(SESSION_ID_PATTERN, SESSION_ID_RULE),
]
# An app name or user id, as the path's rule has it (app.core.identifiers).
NameIdentifier = Annotated[
    str, held_to(name_problem, "identifier"), _identifier_schema(NAME_PATTERN, NAME_RULE)
]


def _labels(labels: dict[str, Any]) -> dict[str, str]:
    problem = labels_problem(labels)
    if problem is not None:
        raise PydanticCustomError("labels", problem.msg)
    return labels


LABELS_DESCRIPTION = f"Labels (GCP's label rules: {LABEL_RULE})."


SessionLabels = Annotated[
    dict[str, Any],
    AfterValidator(_labels),
    WithJsonSchema(
        {
            "type": "object",
            "maxProperties": MAX_LABELS,
            "propertyNames": {"pattern": LABEL_KEY_PATTERN},
            "additionalProperties": {"type": "string", "pattern": LABEL_VALUE_PATTERN},
            "description": LABELS_DESCRIPTION,
        }
    ),
]


TTL_DESCRIPTION = (
    "Idle timeout in seconds: the session expires this long after its last stored event "
    "(each append pushes it out). Null: no expiry."
)
EXPIRE_TIME_DESCRIPTION = (
    "Absolute expiry, epoch seconds, in the future. Null: no expiry. Give ttlSeconds or "
    "expireTime, not both."
)


def _ttl_field(description: str) -> Any:
    # Strict: "60" or true is refused, not read as a number.
    return Field(
        default=None,
        gt=0,
        le=MAX_TTL_SECONDS,
        strict=True,
        allow_inf_nan=False,
        description=description,
    )


class Expiring(RequestBody):
    """ttlSeconds or expireTime (at most one of them not null)."""

    ttl_seconds: float | None = _ttl_field(TTL_DESCRIPTION)
    expire_time: float | None = Field(
        default=None, strict=True, allow_inf_nan=False, description=EXPIRE_TIME_DESCRIPTION
    )

    @model_validator(mode="after")
    def _one_expiry(self) -> Self:
        if self.ttl_seconds is not None and self.expire_time is not None:
            raise ValueError("give ttlSeconds or expireTime, not both")
        return self

    def requested_expiry(self) -> Expiry | None:
        """The expiry asked for; None when neither field was given (a field
        given as null asks for no expiry)."""
        if not self.model_fields_set & {"ttl_seconds", "expire_time"}:
            return None
        return Expiry(self.ttl_seconds, self.expire_time)


class CreateSessionRequest(Expiring):
    session_id: SessionIdentifier | None = Field(default=None, description="Omit to get a uuid4.")
    state: dict[str, Any] | None = Field(
        default=None, description="Initial state; app: and user: keys go to their scopes."
    )
    ttl_seconds: float | None = _ttl_field(
        f"{TTL_DESCRIPTION} Omitted (with expireTime): the app's or the "
        "deployment's default (SESSION_STATE_APP_TTL_SECONDS, SESSION_STATE_DEFAULT_TTL_SECONDS)."
    )
    labels: SessionLabels | None = Field(
        default=None, description=f"{LABELS_DESCRIPTION} Omitted or null: none."
    )


class PatchSessionRequest(Expiring):
    state_delta: dict[str, Any] | None = Field(
        default=None, description="Recorded as an event of author 'user'."
    )
    labels: SessionLabels | None = Field(
        default=None,
        description=f"{LABELS_DESCRIPTION} Replaces all of them; null or {{}} clears them. "
        "With stateDelta: one write, the event appended and the labels replaced, or "
        "neither.",
    )

    @model_validator(mode="after")
    def _changes_something(self) -> Self:
        if not self.model_fields_set & {"state_delta", "ttl_seconds", "expire_time", "labels"}:
            raise ValueError("give stateDelta, labels, ttlSeconds or expireTime")
        if "state_delta" in self.model_fields_set and self.state_delta is None:
            raise ValueError("stateDelta must be an object")
        return self

    def requested_labels(self) -> dict[str, str] | None:
        """The labels asked for ({} clears them); None when not given."""
        if "labels" not in self.model_fields_set:
            return None
        return self.labels or {}


class ForkSessionRequest(Expiring):
    session_id: SessionIdentifier | None = Field(
        default=None, description="The new session's id. Omit to get a uuid4."
    )
    up_to_event_id: str | None = Field(
        default=None,
        min_length=contract.ID_MIN_LENGTH,
        max_length=contract.ID_MAX_LENGTH,
        description="Copy the events up to and including this one. Omit (with "
        "beforeInvocationId) to copy them all.",
    )
    before_invocation_id: str | None = Field(
        default=None,
        min_length=1,
        description="Copy the events before the first event of this invocation (as ADK's "
        "rewind finds it), instead of up to an event: give upToEventId or this, not both.",
    )
    ttl_seconds: float | None = _ttl_field(
        f"{TTL_DESCRIPTION} Omitted (with expireTime): the defaults, as at creation."
    )
    labels: SessionLabels | None = Field(
        default=None,
        description=f"{LABELS_DESCRIPTION} Omitted: the source's; null or {{}}: none.",
    )

    @model_validator(mode="after")
    def _one_fork_point(self) -> Self:
        if self.up_to_event_id is not None and self.before_invocation_id is not None:
            raise ValueError("give upToEventId or beforeInvocationId, not both")
        return self

    def requested_labels(self) -> dict[str, str] | None:
        """The fork's labels; None: the source's."""
        if "labels" not in self.model_fields_set:
            return None
        return self.labels or {}


class EventActions(WireModel):
    model_config = ConfigDict(extra="allow")

    state_delta: dict[str, Any] | None = Field(
        default=None, description=contract.STATE_DELTA_DESCRIPTION
    )


class Event(WireModel):
    """ADK's Event JSON. Every field, known here or not, is stored verbatim."""

    # The fields checked and their bounds are event_contract's, which the
    # validator (events.py) uses too.
    model_config = ConfigDict(extra="allow")

    id: str | None = Field(
        default=None,
        min_length=contract.ID_MIN_LENGTH,
        max_length=contract.ID_MAX_LENGTH,
        description=contract.ID_DESCRIPTION,
    )
    invocation_id: str | None = None
    author: str
    timestamp: float | None = Field(
        default=None,
        ge=contract.TIMESTAMP_MINIMUM,
        le=contract.TIMESTAMP_MAXIMUM,
        description=contract.TIMESTAMP_DESCRIPTION,
    )
    partial: bool | None = Field(default=None, description=contract.PARTIAL_DESCRIPTION)
    actions: EventActions | None = None


class Session(WireModel):
    id: str
    app_name: str
    user_id: str
    state: dict[str, Any] | None = Field(
        default=None,
        description="Merged view: session, app: and user: keys. Absent from a list "
        "asked for with includeState=false.",
    )
    events: list[Event] | None = Field(
        default=None,
        description="Oldest first. Empty in a list; absent from a fork's and a rewind's "
        "answer (read them with a get or GET .../events).",
    )
    last_update_time: float
    expire_time: float | None = Field(
        default=None,
        description="When the session expires (epoch seconds); present only if it does.",
    )
    labels: dict[str, str] | None = Field(
        default=None, description=f"{LABELS_DESCRIPTION} Present only when there are some."
    )


class SessionAfterRemoval(Session):
    removed_events: list[Event] | None = Field(
        default=None,
        description="The removed events, oldest first: present only with returnRemoved=true.",
    )


class RewindSessionRequest(RequestBody):
    before_invocation_id: str = Field(
        min_length=1,
        description="The invocation to rewind to before: the session goes back to the state "
        "the events before its first event left (session keys; app: and user: keys stay).",
    )


class SessionAfterRewind(Session):
    rewind_event: Event = Field(
        description="The event the rewind appended, as stored: author user, "
        "actions.rewindBeforeInvocationId and the reverting actions.stateDelta."
    )


class SessionList(WireModel):
    sessions: list[Session]
    next_page_token: str | None


class EventList(WireModel):
    events: list[Event]
    next_page_token: str | None


class EventBatchRequest(RequestBody):
    events: list[Event] = Field(
        min_length=1,
        max_length=contract.MAX_BATCH_EVENTS,
        description="Stored in this order, all or none; partial events and an id given "
        "twice are refused.",
    )


class EventBatch(WireModel):
    events: list[Event] = Field(description="The events as stored, in order.")


class SessionAppend(RequestBody):
    """One append of a request to several sessions: what a single append's
    path, If-Match header and body say."""

    user_id: NameIdentifier
    session_id: SessionIdentifier
    if_match: int | None = Field(
        default=None,
        ge=0,
        le=MAX_INT64,
        strict=True,
        description="The revision the append is based on, as If-Match names it (412 in its "
        "result when the session moved past it). Null or absent: no condition.",
    )
    # Checked by the append's own rules, so that its problems are its
    # result's, not the request's.
    event: Annotated[
        Any,
        WithJsonSchema(
            {
                "type": "object",
                "description": "The event, as a single append's body (the Event schema).",
            }
        ),
    ]


class SessionAppendsRequest(RequestBody):
    appends: list[SessionAppend] = Field(
        min_length=1,
        max_length=contract.MAX_APPENDS_PER_REQUEST,
        description="Each stored as its own append; a session's appends in this order.",
    )


class StateResponse(WireModel):
    state: dict[str, Any] = Field(description="Keys without their scope prefix.")


class IngestMemoryRequest(WireModel):
    session_id: SessionIdentifier = Field(description="A stored session of this app and user.")


class IngestMemoryResponse(WireModel):
    session_id: str
    memories_added: int = Field(description="Events newly taken into memory (0 on a repeat).")


class MemoryPart(WireModel):
    model_config = ConfigDict(extra="allow")

    text: str | None = None


class MemoryContent(WireModel):
    """ADK's (google.genai) Content: every part as added, not only text."""

    model_config = ConfigDict(extra="allow")

    role: str | None = None
    parts: list[MemoryPart]


class StoredMemory(WireModel):
    """ADK's MemoryEntry, camelCase, as stored."""

    id: str = Field(description="The memory's id: its event's id, or the id it was added with.")
    author: str
    timestamp: str = Field(description="ISO 8601, UTC.")
    content: MemoryContent
    custom_metadata: dict[str, Any] = Field(
        description="As added; for a memory taken from a session's event, its sessionId."
    )


class MemoryList(WireModel):
    memories: list[StoredMemory] = Field(description="The last added first.")
    next_page_token: str | None


class MemoryEntry(StoredMemory):
    """ADK's MemoryEntry, camelCase, as a search found it."""

    matched_by: Literal["keyword", "meaning", "both"] = Field(
        description="Which side of the search found it: keyword (it holds a term of the "
        "question; every result of mode=keyword), meaning (by meaning alone; every result of "
        "mode=semantic), both."
    )
    score: float = Field(
        description="Found by meaning (meaning, both): its relevance, the cosine similarity "
        "of question and memory less the higher of their similarities to unrelated text "
        "(-1 to 1). Found by keyword alone: "
        "the share of the question's terms it holds (above 0, 1: every term). Rounded to 6 "
        "decimals. Comparable only within one response, a relevance with a relevance and a "
        "share with a share; results come in the search's order, not the score's.",
    )


# The rule of the path segment that deletes it (DELETE .../memory/{memoryId}):
# an id a body could store but no path could name would be undeletable.
MemoryId = NameIdentifier


class MemoryEvent(WireModel):
    """An ADK Event as JSON: only what memory reads is checked."""

    model_config = ConfigDict(extra="allow")

    id: Literal[""] | MemoryId | None = Field(
        default=None,
        description="Without one (or empty), a hash of author, timestamp and content.",
    )
    author: str | None = None
    # Strict: the event is stored as sent, so "5" or true is refused, not read as 5.0.
    timestamp: float | None = Field(
        default=None,
        ge=0,
        le=253402300799,
        strict=True,
        description="Epoch seconds; server time if missing.",
    )
    content: dict[str, Any] | None = Field(
        default=None, description="ADK's Content; events without a text part are not taken."
    )


class AddMemoryEventsRequest(WireModel):
    """ADK's add_events_to_memory: the events are a delta, never the whole
    session; an event already in memory (same session and id) is kept as first
    added, one deleted with delete_memory is not taken again."""

    session_id: SessionIdentifier | None = Field(
        default=None, description="The session the events belong to, if any."
    )
    events: list[MemoryEvent]
    custom_metadata: dict[str, Any] | None = Field(
        default=None, description="Accepted as ADK passes it; no key is interpreted."
    )
    rewound_event_ids: list[MemoryId] = Field(
        default_factory=list,
        description="Events of the session a rewind undid (ADK 2.15's memory services delete "
        "them when a session is added): the session's memories of them are deleted, not "
        "forgotten (the ids may be taken again).",
    )


class AddMemoryEventsResponse(WireModel):
    memories_added: int = Field(description="Events newly taken into memory.")


class NewMemoryEntry(WireModel):
    """ADK's MemoryEntry, as add_memory writes it."""

    id: MemoryId | None = Field(default=None, description="Generated (uuid4 hex) when missing.")
    author: str | None = None
    timestamp: str | None = Field(
        default=None, description="ISO 8601 (UTC when no zone is given); server time if missing."
    )
    content: MemoryContent = Field(description="Needs at least one text part to be found.")
    custom_metadata: dict[str, Any] | None = None


class AddMemoriesRequest(WireModel):
    """ADK's add_memory: entries written directly. An id given again replaces
    its memory; an id deleted before is written again."""

    memories: list[NewMemoryEntry]
    custom_metadata: dict[str, Any] | None = Field(
        default=None, description="Accepted as ADK passes it; no key is interpreted."
    )


class AddMemoriesResponse(WireModel):
    memory_ids: list[str] = Field(description="The entries' ids, in the order sent.")


class SearchMemoryResponse(WireModel):
    """ADK's SearchMemoryResponse, camelCase."""

    memories: list[MemoryEntry]


class SessionAppendResult(WireModel):
    """One append's answer, as a single append would have been answered."""

    status: int = Field(
        description="A single append's status: 201 stored, 200 a retry or a partial event, "
        "or the error's (404, 409, 412, 413, 422, 503)."
    )
    revision: int | None = Field(
        default=None,
        description="The revision the event produced (a single append's ETag); absent for "
        "a partial event (not stored) and for an error.",
    )
    event: Event | None = Field(
        default=None, description="The stored event (or the partial one as sent)."
    )
    problem: Problem | None = Field(default=None, description="The error, as its own answer.")


class SessionAppendResults(WireModel):
    results: list[SessionAppendResult] = Field(description="In the order of the appends.")
