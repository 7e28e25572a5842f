"""What each API call sends and how its answer is read, shared by the sync and
async clients, and when a failed attempt may be repeated."""

import functools
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeAlias, TypeVar
from urllib.parse import quote

import httpx
import pydantic_core

from session_state_client._constants import (
    INITIAL_RETRY_DELAY,
    MAX_RETRY_AFTER,
    MAX_RETRY_DELAY,
    RETRYABLE_STATUSES,
)
from session_state_client._exceptions import error_from_response
from session_state_client._models import (
    AppendResult,
    AppPage,
    BatchAppendResult,
    EventPage,
    MemoryEntriesResult,
    MemoryEventsResult,
    MemoryIngestResult,
    MemoryPage,
    RemovalResult,
    RewindResult,
    SearchMemoryResponse,
    Session,
    SessionPage,
    ThreadPage,
    UserPage,
)
from session_state_client._revisions import RevisionUse, SeenRevisions

T = TypeVar("T")


class WireAnswer:
    """An answer as the async client's transport (aiohttp) read it: status,
    headers (case-insensitive) and the whole body, decoded."""

    __slots__ = ("content", "headers", "method", "reason", "status_code", "url")

    def __init__(
        self,
        status_code: int,
        headers: Mapping[str, str],
        content: bytes,
        *,
        reason: str | None,
        method: str,
        url: object,
    ) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content
        self.reason = reason
        self.method = method
        self.url = url

    def to_httpx(self) -> httpx.Response:
        """The same answer as an httpx.Response with its request, as the sync
        client's errors carry it: built only for an error, which is rare."""
        # The body is already decoded: a Content-Encoding left in would make
        # httpx decode it a second time.
        headers = [(k, v) for k, v in self.headers.items() if k.lower() != "content-encoding"]
        return httpx.Response(
            self.status_code,
            headers=headers,
            content=self.content,
            request=httpx.Request(self.method, str(self.url)),
            extensions={"reason_phrase": (self.reason or "").encode("latin-1", "replace")},
        )


# An answer of either client: what the parsers below read.
Answer: TypeAlias = httpx.Response | WireAnswer


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[Answer], T]
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    # Safe to send again after an answer was possibly lost: reads, appends
    # (the event id makes the server deduplicate) and memory ingestion.
    repeatable: bool = False
    # The session (its path) whose revision the answer's ETag reports, and
    # what the call does with it (session_state_client._revisions).
    session: str | None = None
    revision_use: RevisionUse | None = None


def params_of(call: Call[Any], seen: SeenRevisions) -> dict[str, Any]:
    """The call's query parameters, a read's with the revision last seen."""
    return seen.params(call.revision_use, call.session, call.params)


def read_and_remember(call: Call[T], response: Answer, seen: SeenRevisions) -> T:
    """What `read` returns, the revision of a successful answer remembered."""
    result = read(call, response)
    seen.see(call.revision_use, call.session, _revision(response))
    return result


def _encoded_segment(value: str) -> str:
    encoded = quote(value, safe="")
    if encoded in (".", ".."):
        return encoded.replace(".", "%2E")
    return encoded


# A client names the same sessions again and again. Only values as long as
# the server's identifiers (128 characters) are kept: a longer one, which
# the server refuses anyway, is encoded each time, so the cache stays small.
_CACHED_SEGMENT_LENGTH = 128
_cached_segment = functools.lru_cache(maxsize=4096)(_encoded_segment)


def _segment(value: str) -> str:
    """One path segment: every character but letters, digits and `-._~`
    percent-encoded ('/' as %2F); "." and ".." escaped too, which URL
    libraries would otherwise resolve as the current and parent segment."""
    if len(value) > _CACHED_SEGMENT_LENGTH:
        return _encoded_segment(value)
    return _cached_segment(value)


def _session_path(app_name: str, user_id: str, session_id: str) -> str:
    if not session_id:
        # The path would be the list's URL ("sessions/"), which the server
        # redirects to the list; empty app and user names it refuses itself.
        raise ValueError("session_id must not be empty")
    return f"/apps/{_segment(app_name)}/users/{_segment(user_id)}/sessions/{_segment(session_id)}"


def appends_path(app_name: str) -> str:
    """Where appends to several sessions of the app go together."""
    return f"/apps/{_segment(app_name)}/appends"


def event_stream_path(app_name: str, user_id: str, session_id: str) -> str:
    return _session_path(app_name, user_id, session_id) + "/events/stream"


def _params(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def _revision(response: Answer) -> int | None:
    etag = response.headers.get("etag")
    if etag is None:
        return None
    return int(etag.strip('W/"'))


def _json(response: Answer) -> Any:
    # pydantic_core's parser: faster than the standard library's,
    # exact for floats and arbitrary-size integers.
    return pydantic_core.from_json(response.content)


def encode(document: Any) -> bytes:
    """The body's JSON; bytes are JSON already encoded, sent as they are."""
    if isinstance(document, bytes):
        return document
    return pydantic_core.to_json(document)


def _session(response: Answer) -> Session:
    session = Session.model_validate(_json(response))
    session.revision = _revision(response)
    return session


def _nothing(_response: Answer) -> None:
    return None


def _state(response: Answer) -> dict[str, Any]:
    state: dict[str, Any] = _json(response)["state"]
    return state


def _expiry(ttl_seconds: float | None, expire_time: float | None) -> dict[str, Any]:
    """The expiry fields to send: none when neither is given (the server's
    defaults apply)."""
    return _params(ttlSeconds=ttl_seconds, expireTime=expire_time)


def create_session(
    app_name: str,
    user_id: str,
    session_id: str | None,
    state: Mapping[str, Any] | None,
    ttl_seconds: float | None = None,
    expire_time: float | None = None,
    labels: Mapping[str, str] | None = None,
) -> Call[Session]:
    body: dict[str, Any] = _expiry(ttl_seconds, expire_time)
    if labels:
        body["labels"] = dict(labels)
    if session_id is not None:
        body["sessionId"] = session_id
    if state is not None:
        body["state"] = dict(state)
    path = f"/apps/{_segment(app_name)}/users/{_segment(user_id)}/sessions"
    # A session created again after a delete starts again at revision 0.
    session = None if session_id is None else _session_path(app_name, user_id, session_id)
    return Call("POST", path, _session, json=body, session=session, revision_use="restart")


def set_expiry(
    app_name: str,
    user_id: str,
    session_id: str,
    ttl_seconds: float | None,
    expire_time: float | None,
    if_match: int | None,
) -> Call[Session]:
    # Both null asks for no expiry.
    body = {"ttlSeconds": ttl_seconds, "expireTime": expire_time}
    session = _session_path(app_name, user_id, session_id)
    return Call(
        "PATCH",
        session,
        _session,
        json=body,
        headers=_if_match(if_match),
        # Setting an expiry again sets the same one (the revision does not move).
        repeatable=True,
        session=session,
        revision_use="note",
    )


def fork_session(
    app_name: str,
    user_id: str,
    session_id: str,
    new_session_id: str | None,
    up_to_event_id: str | None,
    ttl_seconds: float | None,
    expire_time: float | None,
    labels: Mapping[str, str] | None = None,
    before_invocation_id: str | None = None,
) -> Call[Session]:
    body = _expiry(ttl_seconds, expire_time) | _params(
        sessionId=new_session_id,
        upToEventId=up_to_event_id,
        beforeInvocationId=before_invocation_id,
    )
    if labels is not None:  # {}: the fork has none; None: the source's
        body["labels"] = dict(labels)
    return Call("POST", f"{_session_path(app_name, user_id, session_id)}/fork", _session, json=body)


def get_session(
    app_name: str,
    user_id: str,
    session_id: str,
    num_recent_events: int | None,
    after_timestamp: float | None,
    compacted: bool = False,
    keep_invocations: int = 0,
) -> Call[Session]:
    params = _params(
        numRecentEvents=num_recent_events,
        afterTimestamp=after_timestamp,
        compacted="true" if compacted else None,
        keepInvocations=keep_invocations if compacted and keep_invocations else None,
    )
    session = _session_path(app_name, user_id, session_id)
    parse = _compacted_session if compacted else _session
    return Call(
        "GET", session, parse, params, repeatable=True, session=session, revision_use="bound"
    )


def _compacted_session(response: Answer) -> Session:
    session = _session(response)
    session.events_left_out = int(response.headers.get("session-state-events-left-out", "0"))
    session.bytes_left_out = int(response.headers.get("session-state-bytes-left-out", "0"))
    return session


def rewind_session(
    app_name: str,
    user_id: str,
    session_id: str,
    before_invocation_id: str,
    if_match: int | None,
) -> Call[RewindResult]:
    def parse(response: Answer) -> RewindResult:
        body = _json(response)
        event = body.pop("rewindEvent")
        session = Session.model_validate(body)
        session.revision = _revision(response)
        return RewindResult(session=session, event=event)

    # Not repeated after a lost answer: a second rewind appends a second
    # event (with If-Match it would fail with a 412 instead).
    session = _session_path(app_name, user_id, session_id)
    return Call(
        "POST",
        session + "/rewind",
        parse,
        json={"beforeInvocationId": before_invocation_id},
        headers=_if_match(if_match),
        session=session,
        revision_use="note",
    )


def set_labels(
    app_name: str,
    user_id: str,
    session_id: str,
    labels: Mapping[str, str] | None,
    if_match: int | None,
) -> Call[Session]:
    session = _session_path(app_name, user_id, session_id)
    return Call(
        "PATCH",
        session,
        _session,
        json={"labels": dict(labels or {})},
        headers=_if_match(if_match),
        # Setting the same labels again changes nothing (the revision does not move).
        repeatable=True,
        session=session,
        revision_use="note",
    )


@dataclass(frozen=True)
class SessionFilter:
    """What a session list keeps (GET .../sessions query parameters)."""

    labels: Mapping[str, str | None] | None = None
    updated_after: float | None = None
    updated_before: float | None = None
    order: Literal["asc", "desc"] | None = None
    include_state: bool | None = None

    def params(self) -> dict[str, Any]:
        # label=key:value, or label=key (has the key) for a value of None.
        labels = [
            key if value is None else f"{key}:{value}" for key, value in (self.labels or {}).items()
        ]
        include = None if self.include_state is None else str(self.include_state).lower()
        return _params(
            label=labels or None,
            updatedAfter=self.updated_after,
            updatedBefore=self.updated_before,
            order=self.order,
            includeState=include,
        )


def list_sessions(
    app_name: str,
    user_id: str | None,
    page_size: int | None,
    page_token: str | None,
    where: SessionFilter | None = None,
) -> Call[SessionPage]:
    path = f"/apps/{_segment(app_name)}/sessions"
    if user_id is not None:
        path = f"/apps/{_segment(app_name)}/users/{_segment(user_id)}/sessions"
    params = _params(pageSize=page_size, pageToken=page_token)
    if where is not None:
        params.update(where.params())
    return Call(
        "GET",
        path,
        lambda response: SessionPage.model_validate(_json(response)),
        params,
        repeatable=True,
    )


def list_apps(page_size: int | None, page_token: str | None) -> Call[AppPage]:
    params = _params(pageSize=page_size, pageToken=page_token)
    return Call(
        "GET",
        "/apps",
        lambda response: AppPage.model_validate(_json(response)),
        params,
        repeatable=True,
    )


def list_users(app_name: str, page_size: int | None, page_token: str | None) -> Call[UserPage]:
    params = _params(pageSize=page_size, pageToken=page_token)
    return Call(
        "GET",
        f"/apps/{_segment(app_name)}/users",
        lambda response: UserPage.model_validate(_json(response)),
        params,
        repeatable=True,
    )


def list_threads(
    app_name: str, user_id: str | None, page_size: int | None, page_token: str | None
) -> Call[ThreadPage]:
    params = _params(userId=user_id, pageSize=page_size, pageToken=page_token)
    return Call(
        "GET",
        f"/apps/{_segment(app_name)}/threads",
        lambda response: ThreadPage.model_validate(_json(response)),
        params,
        repeatable=True,
    )


def delete_session(
    app_name: str, user_id: str, session_id: str, delete_memories: bool
) -> Call[None]:
    params = {"deleteMemories": "true"} if delete_memories else {}
    session = _session_path(app_name, user_id, session_id)
    return Call("DELETE", session, _nothing, params, session=session, revision_use="forget")


def with_event_id(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event with an id, so that every attempt sends the same one."""
    document = dict(event)
    if not document.get("id"):
        document["id"] = str(uuid.uuid4())
    return document


def _if_match(revision: int | None) -> dict[str, str]:
    return {} if revision is None else {"If-Match": f'"{revision}"'}


def append_event(
    app_name: str,
    user_id: str,
    session_id: str,
    event: dict[str, Any] | bytes,
    if_match: int | None,
) -> Call[AppendResult]:
    def parse(response: Answer) -> AppendResult:
        persisted = response.headers.get("session-state-persisted") != "false"
        # Built without validation: the server returns the event it stored.
        return AppendResult.model_construct(
            event=_json(response),
            revision=_revision(response),
            persisted=persisted,
            replayed=persisted and response.status_code == 200,
        )

    session = _session_path(app_name, user_id, session_id)
    return Call(
        "POST",
        session + "/events",
        parse,
        json=event,
        headers=_if_match(if_match),
        repeatable=True,
        session=session,
        revision_use="note",
    )


def append_events(
    app_name: str,
    user_id: str,
    session_id: str,
    events: list[dict[str, Any]],
    if_match: int | None,
) -> Call[BatchAppendResult]:
    def parse(response: Answer) -> BatchAppendResult:
        return BatchAppendResult.model_construct(
            events=_json(response)["events"],
            revision=_revision(response),
            replayed=response.status_code == 200,
        )

    session = _session_path(app_name, user_id, session_id)
    return Call(
        "POST",
        session + "/events/batch",
        parse,
        json={"events": events},
        headers=_if_match(if_match),
        repeatable=True,
        session=session,
        revision_use="note",
    )


def remove_events(
    app_name: str,
    user_id: str,
    session_id: str,
    after: str | None,
    last: int | None,
    if_match: int | None,
    return_removed: bool = False,
) -> Call[RemovalResult]:
    def parse(response: Answer) -> RemovalResult:
        removed = int(response.headers.get("session-state-removed-events", "0"))
        body = _json(response)
        removed_events = body.pop("removedEvents", None)
        session = Session.model_validate(body)
        session.revision = _revision(response)
        return RemovalResult(session=session, removed=removed, removed_events=removed_events)

    # Not repeated after a lost answer: a second removal would take more
    # events (with If-Match it would fail with a 412 instead).
    session = _session_path(app_name, user_id, session_id)
    return Call(
        "DELETE",
        session + "/events",
        parse,
        _params(after=after, last=last, returnRemoved="true" if return_removed else None),
        headers=_if_match(if_match),
        session=session,
        revision_use="note",
    )


def patch_state(
    app_name: str,
    user_id: str,
    session_id: str,
    state_delta: Mapping[str, Any],
    if_match: int | None,
    labels: Mapping[str, str] | None = None,
) -> Call[Session]:
    session = _session_path(app_name, user_id, session_id)
    body: dict[str, Any] = {"stateDelta": dict(state_delta)}
    if labels is not None:  # {}: clears them, with the event
        body["labels"] = dict(labels)
    return Call(
        "PATCH",
        session,
        _session,
        json=body,
        headers=_if_match(if_match),
        session=session,
        revision_use="note",
    )


def list_events(
    app_name: str,
    user_id: str,
    session_id: str,
    order: str,
    page_size: int | None,
    page_token: str | None,
    after_timestamp: float | None,
) -> Call[EventPage]:
    params = _params(
        order=order, pageSize=page_size, pageToken=page_token, afterTimestamp=after_timestamp
    )
    session = _session_path(app_name, user_id, session_id)
    return Call(
        "GET",
        session + "/events",
        lambda response: EventPage.model_validate(_json(response)),
        params,
        repeatable=True,
        session=session,
        revision_use="bound",
    )


def get_user_state(app_name: str, user_id: str) -> Call[dict[str, Any]]:
    path = f"/apps/{_segment(app_name)}/users/{_segment(user_id)}/state"
    return Call("GET", path, _state, repeatable=True)


def get_app_state(app_name: str) -> Call[dict[str, Any]]:
    return Call("GET", f"/apps/{_segment(app_name)}/state", _state, repeatable=True)


def _memory_path(app_name: str, user_id: str) -> str:
    return f"/apps/{_segment(app_name)}/users/{_segment(user_id)}/memory"


def add_session_to_memory(app_name: str, user_id: str, session_id: str) -> Call[MemoryIngestResult]:
    return Call(
        "POST",
        _memory_path(app_name, user_id),
        lambda response: MemoryIngestResult.model_validate(_json(response)),
        json={"sessionId": session_id},
        repeatable=True,
    )


def search_memory(
    app_name: str, user_id: str, query: str, limit: int | None, mode: str | None = None
) -> Call[SearchMemoryResponse]:
    return Call(
        "GET",
        _memory_path(app_name, user_id),
        lambda response: SearchMemoryResponse.model_validate(_json(response)),
        _params(query=query, limit=limit, mode=mode),
        repeatable=True,
    )


def list_memories(
    app_name: str, user_id: str, page_size: int | None, page_token: str | None
) -> Call[MemoryPage]:
    return Call(
        "GET",
        _memory_path(app_name, user_id) + "/entries",
        lambda response: MemoryPage.model_validate(_json(response)),
        _params(pageSize=page_size, pageToken=page_token),
        repeatable=True,
    )


def add_events_to_memory(
    app_name: str,
    user_id: str,
    events: list[dict[str, Any]],
    session_id: str | None,
    custom_metadata: Mapping[str, Any] | None,
    rewound_event_ids: Sequence[str] = (),
) -> Call[MemoryEventsResult]:
    body: dict[str, Any] = {"events": events}
    if session_id is not None:
        body["sessionId"] = session_id
    if custom_metadata is not None:
        body["customMetadata"] = dict(custom_metadata)
    if rewound_event_ids:
        body["rewoundEventIds"] = list(rewound_event_ids)
    return Call(
        "POST",
        f"{_memory_path(app_name, user_id)}/events",
        lambda response: MemoryEventsResult.model_validate(_json(response)),
        json=body,
        repeatable=True,  # events are taken once per (session, id)
    )


def add_memory(
    app_name: str,
    user_id: str,
    memories: list[dict[str, Any]],
    custom_metadata: Mapping[str, Any] | None,
) -> Call[MemoryEntriesResult]:
    # An id for every entry, chosen here: a repeat after a lost answer then
    # rewrites the same entries instead of adding them twice.
    entries = [{**entry, "id": entry.get("id") or uuid.uuid4().hex} for entry in memories]
    body: dict[str, Any] = {"memories": entries}
    if custom_metadata is not None:
        body["customMetadata"] = dict(custom_metadata)
    return Call(
        "POST",
        f"{_memory_path(app_name, user_id)}/entries",
        lambda response: MemoryEntriesResult.model_validate(_json(response)),
        json=body,
        repeatable=True,
    )


def delete_memory(app_name: str, user_id: str, memory_id: str) -> Call[None]:
    path = f"{_memory_path(app_name, user_id)}/{_segment(memory_id)}"
    return Call("DELETE", path, _nothing, repeatable=True)


def forget_user_memory(app_name: str, user_id: str) -> Call[None]:
    return Call("DELETE", _memory_path(app_name, user_id), _nothing)


def erase_user(app_name: str, user_id: str) -> Call[None]:
    # Erasing again erases nothing more: safe to repeat.
    path = f"/apps/{_segment(app_name)}/users/{_segment(user_id)}"
    return Call("DELETE", path, _nothing, repeatable=True)


def erase_app(app_name: str) -> Call[None]:
    # The server asks for the app's name twice; a call naming the method
    # `erase_app` is that confirmation.
    path = f"/apps/{_segment(app_name)}"
    return Call("DELETE", path, _nothing, params={"confirm": app_name}, repeatable=True)


# -- retries ----------------------------------------------------------------


def may_retry_status(call: Call[Any], response: Answer) -> bool:
    return call.repeatable and response.status_code in RETRYABLE_STATUSES


def may_retry_error(call: Call[Any], *, sent: bool) -> bool:
    """After a failure without an answer; `sent`: the request may have reached
    the server (each transport tells which of its errors mean it did not)."""
    # A request that never reached the server can always be sent again.
    return not sent or call.repeatable


def retry_delay(attempt: int, response: Answer | None) -> float:
    """Exponential backoff with full jitter, or the server's Retry-After."""
    if response is not None:
        retry_after = response.headers.get("retry-after")
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), MAX_RETRY_AFTER)
            except ValueError:
                pass
    ceiling = min(MAX_RETRY_DELAY, INITIAL_RETRY_DELAY * 2**attempt)
    return random.uniform(0, ceiling)


def read(call: Call[T], response: Answer) -> T:
    if response.status_code >= 400:
        if isinstance(response, WireAnswer):
            response = response.to_httpx()
        raise error_from_response(response)
    return call.parse(response)
