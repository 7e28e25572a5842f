"""The dump format: JSON Lines, one object per line, versioned by its first
line. docs/operations.md#the-dump-format describes it for readers of dumps;
the models here are what an import accepts (a dump is untrusted input: every
identifier, value and number is checked as the API checks it)."""

import base64
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    TypeAdapter,
    ValidationError,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from ..core import json_codec
from ..core.config import MAX_TTL_SECONDS
from ..core.identifiers import name_problem, session_id_problem
from ..core.json_rules import find_unstorable
from ..core.limits import MAX_INT64
from ..http.wire import held_to
from ..langgraph.checkpoints.schemas import MAX_TEXT_LENGTH, decode_base64
from ..langgraph.store.schemas import ItemNamespace, Key
from ..sessions.labels import labels_problem
from ..sessions.state import APP_PREFIX, TEMP_PREFIX, USER_PREFIX

FORMAT: Literal["session-state-dump"] = "session-state-dump"
VERSION: Literal[1] = 1
# Deeper than the API's default nesting limit would refuse values the API
# stored under a raised SESSION_STATE_MAX_JSON_DEPTH; the parsers stop near 1,000.
MAX_DEPTH = 512
# No line of a dump is longer: an event is at most 4 MiB as stored by default,
# and a scope's state 1 MiB; a longer line is refused, never read whole.
MAX_LINE_BYTES = 64 * 1024 * 1024


def _session_scope_only(state: dict[str, Any]) -> dict[str, Any]:
    if any(key.startswith((APP_PREFIX, USER_PREFIX, TEMP_PREFIX)) for key in state):
        raise PydanticCustomError(
            "scope",
            "a session's own state has no app:, user: or temp: keys (they belong to their scopes)",
        )
    return state


def _labels(labels: dict[str, str]) -> dict[str, str]:
    problem = labels_problem(labels)
    if problem is not None:
        raise PydanticCustomError("labels", problem.msg)
    return labels


# As the API takes them (app.sessions.labels); an empty object is no labels.
SessionLabels = Annotated[dict[str, str], AfterValidator(_labels)]
# A session's own keys: app: and user: keys live in their scopes' lines,
# temp: keys are never stored.
SessionState = Annotated[dict[str, Any], AfterValidator(_session_scope_only)]
Name = Annotated[str, held_to(name_problem, "identifier")]
SessionId = Annotated[str, held_to(session_id_problem, "identifier")]
EventId = Annotated[str, Field(min_length=1, max_length=128)]
Seconds = Annotated[float, Field(ge=0, le=253402300799, allow_inf_nan=False)]
# Integers a BIGINT column holds.
Count = Annotated[int, Field(ge=0, le=MAX_INT64)]


def _bytes_of_base64(text: Any) -> bytes:
    if isinstance(text, bytes):  # an export's own rows; JSON holds no bytes
        return text
    if not isinstance(text, str):
        raise PydanticCustomError("base64", "bytes are written as a base64 string")
    return decode_base64(text)


# LangGraph's serialized values: bytes, as standard base64 in a dump.
Blob = Annotated[
    bytes,
    BeforeValidator(_bytes_of_base64),
    PlainSerializer(lambda data: base64.b64encode(data).decode("ascii"), return_type=str),
]
Text = Annotated[str, Field(max_length=MAX_TEXT_LENGTH)]
Ttl = Annotated[float, Field(gt=0, le=MAX_TTL_SECONDS, allow_inf_nan=False)]


class _Line(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True
    )


class Header(_Line):
    format: Literal["session-state-dump"]
    version: Literal[1]
    exported_at: Seconds
    app: Name | None = None
    user: Name | None = None


class AppState(_Line):
    kind: Literal["app"]
    app: Name
    state: dict[str, Any]


class UserState(_Line):
    kind: Literal["user"]
    app: Name
    user: Name
    state: dict[str, Any]


class Session(_Line):
    kind: Literal["session"]
    app: Name
    user: Name
    id: SessionId
    state: SessionState
    # The session-scope state it was created with; None for sessions created
    # before that was recorded (migration 0007).
    initial_state: SessionState | None
    revision: Count
    create_time: Seconds
    update_time: Seconds
    expire_time: Seconds | None
    ttl_seconds: Ttl | None
    # How many event lines follow, in seq order.
    events: Count
    # Left out of the line when the session has none (dumps of unlabelled
    # sessions stay readable by versions before labels).
    labels: SessionLabels | None = None


class Event(_Line):
    kind: Literal["event"]
    seq: Annotated[int, Field(ge=1, le=MAX_INT64)]
    event: dict[str, Any]


class Memory(_Line):
    kind: Literal["memory"]
    app: Name
    user: Name
    session: SessionId | Literal[""]
    event_id: EventId
    author: str
    role: str | None
    timestamp: Seconds
    text: str
    content: dict[str, Any] | None
    custom_metadata: dict[str, Any] | None


class Forgotten(_Line):
    kind: Literal["forgotten"]
    app: Name
    user: Name
    memory_id: EventId


class Checkpoint(_Line):
    checkpoint_ns: Text
    checkpoint_id: Name
    parent_checkpoint_id: Text | None
    run_id: Text | None
    checkpoint_type: Text
    checkpoint: Blob
    channel_versions: dict[str, Any]
    metadata: dict[str, Any]


class ChannelValue(_Line):
    checkpoint_ns: Text
    channel: Text
    version: Text
    value_type: Text
    value: Blob | None


class Write(_Line):
    checkpoint_ns: Text
    checkpoint_id: Name
    task_id: Text
    idx: Annotated[int, Field(ge=-(2**31), lt=2**31)]
    task_path: Text
    channel: Text
    value_type: Text
    value: Blob


class Thread(_Line):
    """A LangGraph thread whole, in one line: its rows are what a thread is
    (a checkpoint without its channel values is not one)."""

    kind: Literal["thread"]
    app: Name
    id: Name
    user: Name
    create_time: Seconds
    update_time: Seconds
    expire_time: Seconds | None
    ttl_seconds: Ttl | None
    checkpoints: list[Checkpoint]
    channel_values: list[ChannelValue]
    writes: list[Write]


class StoreItem(_Line):
    kind: Literal["storeItem"]
    app: Name
    namespace: ItemNamespace
    key: Key
    value: dict[str, Any]
    create_time: Seconds
    update_time: Seconds
    expire_time: Seconds | None
    ttl_seconds: Ttl | None


class End(_Line):
    kind: Literal["end"]
    counts: dict[str, Count]


Line = AppState | UserState | Session | Event | Memory | Forgotten | Thread | StoreItem | End
_LINE: TypeAdapter[Line] = TypeAdapter(Annotated[Line, Field(discriminator="kind")])


class DumpError(ValueError):
    """A line that is not part of a valid dump; the message names the line."""


def encode(line: _Line) -> str:
    document = line.model_dump(by_alias=True)
    if isinstance(line, Session) and not line.labels:
        del document["labels"]
    return json_codec.dumps_text(document) + "\n"


def parse_header(text: str) -> Header:
    document = _document(text, 1)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise DumpError(f'line 1: not a session-state dump (no "format": "{FORMAT}")')
    if document.get("version") != VERSION:
        raise DumpError(
            f"line 1: dump format version {document.get('version')!r}; "
            f"this version of session-state reads version {VERSION}"
        )
    try:
        return Header.model_validate(document)
    except ValidationError as error:
        raise DumpError(f"line 1: {_first_problem(error)}") from None


def parse_line(text: str, number: int) -> Line:
    document = _document(text, number)
    try:
        return _LINE.validate_python(document)
    except ValidationError as error:
        raise DumpError(f"line {number}: {_first_problem(error)}") from None


def _document(text: str, number: int) -> Any:
    try:
        document = json_codec.loads(text)
    except json_codec.InvalidJSON as error:
        raise DumpError(f"line {number}: not JSON ({error})") from None
    problem = find_unstorable(document, MAX_DEPTH)
    if problem is not None:
        where = ".".join(str(part) for part in problem.loc)
        raise DumpError(f"line {number}: {where}: {problem.msg}")
    return document


def _first_problem(error: ValidationError) -> str:
    detail = error.errors()[0]
    where = ".".join(str(part) for part in detail["loc"])
    return f"{where}: {detail['msg']}" if where else str(detail["msg"])
