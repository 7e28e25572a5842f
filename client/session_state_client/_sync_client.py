# Generated from _async_client.py by client/tools/unasync.py: do not edit.
# Change the async client and run `python client/tools/unasync.py`.
"""SessionStateClient: one method per API call, generated from the async
client (_async_client.py)."""

import time
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from session_state_client import _requests
from session_state_client._client import (
    JSON_HEADERS,
    EventJSON,
    Order,
    Timeout,
    TokenSource,
    client_settings,
    token_headers,
)
from session_state_client._coalescing import DirectAppends
from session_state_client._constants import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    RETRYABLE_STATUSES,
)
from session_state_client._exceptions import APIStatusError, NotFoundError
from session_state_client._models import (
    AppendResult,
    AppInfo,
    AppPage,
    BatchAppendResult,
    EventPage,
    MemoryEntriesResult,
    MemoryEntry,
    MemoryEventsResult,
    MemoryIngestResult,
    MemoryPage,
    RemovalResult,
    RewindResult,
    SearchMemoryResponse,
    SearchMode,
    Session,
    SessionPage,
    ThreadInfo,
    ThreadPage,
    UserInfo,
    UserPage,
)
from session_state_client._paging import pages
from session_state_client._requests import Answer, Call
from session_state_client._revisions import SeenRevisions
from session_state_client._streams import StreamMessage, StreamReader
from session_state_client._transport import HTTPX_ERRORS, HttpxTransport, httpx_failure

__all__ = ["SessionStateClient"]

T = TypeVar("T")


class SessionStateClient:
    """Synchronous client of a session-state server (transport: httpx).

    Reads of a session and its events send the newest revision this client
    has seen of it (`minRevision`), so a server reading from replicas never
    answers with an older one: the client reads its own writes.

    Args:
        base_url: the server, default $SESSION_STATE_BASE_URL or http://127.0.0.1:8000.
        api_key: sent as a bearer token, default $SESSION_STATE_API_KEY;
            ValueError if it is not printable ASCII (a CR or LF in it).
        token: an end-user token (a JWT) sent in place of an API key: a
            string, or a callable called before each request that returns
            a valid one (cache it and refresh it near its expiry there).
            The server then lets the client reach that user's data only.
        timeout: seconds or an httpx.Timeout: a bound on connecting and on
            each read (and write), not on the whole request. Default 30 s,
            5 s to connect.
        max_retries: extra attempts on connection errors, 429, 502, 503, 504
            (only for requests that are safe to repeat; never on 409 or 412).
        http_client: an httpx.Client to use (its base URL, if it has one,
            and its timeout are kept).
        appends_together: whether the async client sends the appends its
            callers make at once in one request (POST /apps/{app}/appends);
            False: every append a request of its own (for a gateway that
            passes only the single append's route). The sync client sends
            each append alone either way.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        token: TokenSource | None = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.Client | None = None,
        appends_together: bool = True,
    ) -> None:
        url, headers = client_settings(base_url, api_key, token)
        self._credentials = token_headers(token)
        self.max_retries = max_retries
        self._http = HttpxTransport(url, headers, timeout, http_client)
        self._revisions = SeenRevisions()
        self._appends = DirectAppends(self._send, self._revisions, together=appends_together)

    def _send(self, call: Call[T]) -> T:
        """The call made, and retried while `_requests` allows it."""
        content = None if call.json is None else _requests.encode(call.json)
        json_headers = JSON_HEADERS if call.json is not None else {}
        headers = {**self._credentials(), **json_headers, **call.headers}
        params = _requests.params_of(call, self._revisions)
        attempt = 0
        while True:
            response: Answer | None = None
            try:
                response = self._http.send(call.method, call.path, params, content, headers)
            except HTTPX_ERRORS as error:
                failure, sent = httpx_failure(error, call.method, self._http.url_of(call.path))
                if attempt >= self.max_retries or not _requests.may_retry_error(call, sent=sent):
                    raise failure from error
            else:
                if attempt >= self.max_retries or not _requests.may_retry_status(call, response):
                    return _requests.read_and_remember(call, response, self._revisions)
            time.sleep(_requests.retry_delay(attempt, response))
            attempt += 1

    def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str | None = None,
        state: Mapping[str, Any] | None = None,
        ttl_seconds: float | None = None,
        expire_time: float | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Session:
        """Creates a session; AlreadyExistsError if the id is taken. It
        expires `ttl_seconds` after its last event, or at `expire_time`
        (epoch seconds); neither: the server's default for the app.
        `labels`: GCP's label rules (ValidationError naming a bad one)."""
        return self._send(
            _requests.create_session(
                app_name, user_id, session_id, state, ttl_seconds, expire_time, labels
            )
        )

    def set_labels(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        labels: Mapping[str, str] | None,
        if_match: int | None = None,
    ) -> Session:
        """Replaces the session's labels whole (None or {}: none); no event
        is written and the revision does not move."""
        return self._send(_requests.set_labels(app_name, user_id, session_id, labels, if_match))

    def set_expiry(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        ttl_seconds: float | None = None,
        expire_time: float | None = None,
        if_match: int | None = None,
    ) -> Session:
        """Replaces the session's expiry (neither given: it never expires);
        the session's events and revision are unchanged."""
        return self._send(
            _requests.set_expiry(app_name, user_id, session_id, ttl_seconds, expire_time, if_match)
        )

    def fork_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        new_session_id: str | None = None,
        up_to_event_id: str | None = None,
        ttl_seconds: float | None = None,
        expire_time: float | None = None,
        labels: Mapping[str, str] | None = None,
        before_invocation_id: str | None = None,
    ) -> Session:
        """A new session of the same user with copies of the events up to and
        including `up_to_event_id`, or those before the first event of the
        invocation `before_invocation_id` (at most one of them; neither: all),
        and the state they leave; returned without events. AlreadyExistsError
        if the new id is taken, InvocationNotFoundError if no event has that
        invocation id. `labels`: the fork's (None: the source's; {}: none)."""
        return self._send(
            _requests.fork_session(
                app_name,
                user_id,
                session_id,
                new_session_id,
                up_to_event_id,
                ttl_seconds,
                expire_time,
                labels,
                before_invocation_id,
            )
        )

    def rewind_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        before_invocation_id: str,
        if_match: int | None = None,
    ) -> RewindResult:
        """Rewinds the session to before the invocation, as ADK's
        `Runner.rewind_async` does, on the server: it appends ADK's rewind
        event, reverting the session's own keys to what the events before the
        invocation set (app: and user: state stays). InvocationNotFoundError
        if no event has that invocation id; `if_match`: only if the session
        is still at that revision (StaleSessionError otherwise)."""
        return self._send(
            _requests.rewind_session(app_name, user_id, session_id, before_invocation_id, if_match)
        )

    def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        num_recent_events: int | None = None,
        after_timestamp: float | None = None,
        compacted: bool = False,
        keep_invocations: int = 0,
    ) -> Session:
        """The session with its events and merged state; NotFoundError if
        missing. `compacted`: the events as ADK's prompt builder uses them
        once compaction has summarised some (those a summary covers left
        out; `events_left_out` and `bytes_left_out` say how many), with the
        newest `keep_invocations` invocations a summary covers kept whole
        (a sliding window's overlap_size, when larger than its interval)."""
        return self._send(
            _requests.get_session(
                app_name,
                user_id,
                session_id,
                num_recent_events,
                after_timestamp,
                compacted,
                keep_invocations,
            )
        )

    def list_sessions(
        self,
        *,
        app_name: str,
        user_id: str | None = None,
        page_size: int | None = None,
        page_token: str | None = None,
        labels: Mapping[str, str | None] | None = None,
        updated_after: float | None = None,
        updated_before: float | None = None,
        order: Order | None = None,
        include_state: bool | None = None,
    ) -> SessionPage:
        """One page of sessions (no events), of one user or of the whole app:
        those holding every label of `labels` (a value of None: the key,
        any value), last updated in [updated_after, updated_before), by last
        update time ("asc", the default, or "desc"). `include_state=False`:
        states left out. A page token is only good with the same filter."""
        where = _requests.SessionFilter(labels, updated_after, updated_before, order, include_state)
        return self._send(_requests.list_sessions(app_name, user_id, page_size, page_token, where))

    def iter_sessions(
        self,
        *,
        app_name: str,
        user_id: str | None = None,
        page_size: int | None = None,
        labels: Mapping[str, str | None] | None = None,
        updated_after: float | None = None,
        updated_before: float | None = None,
        order: Order | None = None,
        include_state: bool | None = None,
    ) -> Iterator[Session]:
        """Every session list_sessions selects, page after page: one walk,
        following the server's page tokens as they are. Each session that
        matched when the walk began and was not changed during it comes
        once; none comes twice; sessions created or changed during the walk
        are left to the next walk (the server pins the walk's end at its
        first page unless `updated_before` is given)."""
        for page in pages(
            lambda token: self.list_sessions(
                app_name=app_name,
                user_id=user_id,
                page_size=page_size,
                page_token=token,
                labels=labels,
                updated_after=updated_after,
                updated_before=updated_before,
                order=order,
                include_state=include_state,
            )
        ):
            yield from page.sessions

    def list_apps(self, *, page_size: int | None = None, page_token: str | None = None) -> AppPage:
        """One page of the apps this client's key may use that have live
        sessions, by name, with their session counts."""
        return self._send(_requests.list_apps(page_size, page_token))

    def iter_apps(self, *, page_size: int | None = None) -> Iterator[AppInfo]:
        """Every app list_apps gives, page after page."""
        for page in pages(lambda token: self.list_apps(page_size=page_size, page_token=token)):
            yield from page.apps

    def list_users(
        self, *, app_name: str, page_size: int | None = None, page_token: str | None = None
    ) -> UserPage:
        """One page of the app's users that have live sessions, by id, with
        their session counts and latest update."""
        return self._send(_requests.list_users(app_name, page_size, page_token))

    def iter_users(self, *, app_name: str, page_size: int | None = None) -> Iterator[UserInfo]:
        """Every user list_users gives, page after page."""
        for page in pages(
            lambda token: self.list_users(app_name=app_name, page_size=page_size, page_token=token)
        ):
            yield from page.users

    def list_threads(
        self,
        *,
        app_name: str,
        user_id: str | None = None,
        page_size: int | None = None,
        page_token: str | None = None,
    ) -> ThreadPage:
        """One page of the app's live LangGraph threads (of `user_id` only,
        when given; an end-user token must give its own), latest write first."""
        return self._send(_requests.list_threads(app_name, user_id, page_size, page_token))

    def iter_threads(
        self, *, app_name: str, user_id: str | None = None, page_size: int | None = None
    ) -> Iterator[ThreadInfo]:
        """Every thread list_threads gives, page after page: each thread not
        written during the walk comes once, none twice (a thread written
        during it moves ahead of the walk and may be left to the next one)."""
        for page in pages(
            lambda token: self.list_threads(
                app_name=app_name, user_id=user_id, page_size=page_size, page_token=token
            )
        ):
            yield from page.threads

    def delete_session(
        self, *, app_name: str, user_id: str, session_id: str, delete_memories: bool = False
    ) -> None:
        """Deletes the session and its events; NotFoundError if missing."""
        self._send(_requests.delete_session(app_name, user_id, session_id, delete_memories))

    def append_event(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        event: EventJSON | bytes,
        if_match: int | None = None,
    ) -> AppendResult:
        """Appends an ADK event (JSON). An id is assigned first if it has none,
        so retries are deduplicated; an event given as encoded JSON (bytes) is
        sent as it is, and must carry its id. `if_match`: the revision the write
        is based on (StaleSessionError when the session moved on)."""
        document = event if isinstance(event, bytes) else _requests.with_event_id(event)
        return self._appends.send(app_name, user_id, session_id, document, if_match)

    def append_events(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        events: Sequence[EventJSON],
        if_match: int | None = None,
    ) -> BatchAppendResult:
        """Appends several ADK events (JSON) in order, all or none, in one
        request. Events without an id get one first, so a retried batch is
        recognised and stored once. `if_match`: the revision the batch is
        based on (StaleSessionError when the session moved on)."""
        documents = [_requests.with_event_id(event) for event in events]
        return self._send(
            _requests.append_events(app_name, user_id, session_id, documents, if_match)
        )

    def remove_events(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        after: str | None = None,
        last: int | None = None,
        if_match: int | None = None,
        return_removed: bool = False,
    ) -> RemovalResult:
        """Removes the session's newest `last` events, or those after the
        event `after`, or (neither) all of them; the session state becomes
        what the remaining events leave (app: and user: state stays).
        `if_match`: remove only if the session is still at that revision.
        `return_removed` (with `last` at most 100): the result's
        `removed_events` are the events removed, oldest first."""
        return self._send(
            _requests.remove_events(
                app_name, user_id, session_id, after, last, if_match, return_removed
            )
        )

    def patch_state(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        state_delta: Mapping[str, Any],
        if_match: int | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Session:
        """Changes state without an agent turn (recorded as an event of the
        user); with `labels`, replaces the labels in the same write ({}
        clears them): both or neither."""
        return self._send(
            _requests.patch_state(app_name, user_id, session_id, state_delta, if_match, labels)
        )

    def list_events(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        order: Order = "asc",
        page_size: int | None = None,
        page_token: str | None = None,
        after_timestamp: float | None = None,
    ) -> EventPage:
        """One page of the session's event history."""
        return self._send(
            _requests.list_events(
                app_name, user_id, session_id, order, page_size, page_token, after_timestamp
            )
        )

    def stream_events(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        after: int | None = None,
    ) -> Iterator[StreamMessage]:
        """Follows the session: its changes after revision `after` (None: from
        now on), then each as it is stored, by any server process, until it
        is deleted. A dropped connection is resumed by itself after the last
        revision received, so nothing is missed or repeated (connection
        failures in a row: at most `max_retries` before the error is raised).
        NotFoundError if the session does not exist; leave the loop to stop.
        """
        path = _requests.event_stream_path(app_name, user_id, session_id)
        reader = StreamReader(after)
        attempt = 0
        while True:
            reader.restart()
            try:
                stream_headers = {**self._credentials(), **reader.headers()}
                for line in self._http.stream_lines(path, stream_headers):
                    reader.opened = True
                    message = reader.feed(line)
                    if message is None:
                        continue
                    attempt = 0
                    yield message
                    if message.event == "deleted":
                        return
            except HTTPX_ERRORS as error:
                if attempt >= self.max_retries:
                    raise httpx_failure(error, "GET", self._http.url_of(path))[0] from error
            except NotFoundError:
                if not reader.opened:
                    raise
                yield reader.deleted_while_away(session_id)  # deleted while we were away
                return
            except APIStatusError as error:
                if attempt >= self.max_retries or error.status_code not in RETRYABLE_STATUSES:
                    raise
            time.sleep(_requests.retry_delay(attempt, None))
            attempt += 1

    def iter_events(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        order: Order = "asc",
        page_size: int | None = None,
        after_timestamp: float | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every event of the session, page after page."""
        for page in pages(
            lambda token: self.list_events(
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                order=order,
                page_size=page_size,
                page_token=token,
                after_timestamp=after_timestamp,
            )
        ):
            yield from page.events

    def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's state in the app, keys without the user: prefix."""
        return self._send(_requests.get_user_state(app_name, user_id))

    def get_app_state(self, *, app_name: str) -> dict[str, Any]:
        """The app's state, keys without the app: prefix."""
        return self._send(_requests.get_app_state(app_name))

    def add_session_to_memory(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> MemoryIngestResult:
        """Takes the stored session's event texts into the user's memory."""
        return self._send(_requests.add_session_to_memory(app_name, user_id, session_id))

    def search_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        query: str,
        limit: int | None = None,
        mode: SearchMode | None = None,
    ) -> SearchMemoryResponse:
        """The user's memories best matching the query, best first, each with
        the side that found it and its score (`MemoryEntry`). `mode`: "hybrid"
        (the server's default), "keyword" or "semantic"."""
        return self._send(_requests.search_memory(app_name, user_id, query, limit, mode))

    def list_memories(
        self,
        *,
        app_name: str,
        user_id: str,
        page_size: int | None = None,
        page_token: str | None = None,
    ) -> MemoryPage:
        """One page of the user's memories, the last added first (no question)."""
        return self._send(_requests.list_memories(app_name, user_id, page_size, page_token))

    def iter_memories(
        self, *, app_name: str, user_id: str, page_size: int | None = None
    ) -> Iterator[MemoryEntry]:
        """Every memory list_memories gives, page after page: each memory
        there throughout the walk comes once (one added during it is ahead
        of the walk, left to the next one)."""
        for page in pages(
            lambda token: self.list_memories(
                app_name=app_name, user_id=user_id, page_size=page_size, page_token=token
            )
        ):
            yield from page.memories

    def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: list[dict[str, Any]],
        session_id: str | None = None,
        custom_metadata: Mapping[str, Any] | None = None,
        rewound_event_ids: Sequence[str] = (),
    ) -> MemoryEventsResult:
        """Takes the texts of these events (ADK Event JSON) into the user's
        memory; an event already taken (same session and id) is skipped.
        `rewound_event_ids`: events of the session a rewind undid, whose
        memories are deleted first (ADK 2.15's add_session_to_memory)."""
        return self._send(
            _requests.add_events_to_memory(
                app_name, user_id, events, session_id, custom_metadata, rewound_event_ids
            )
        )

    def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: list[dict[str, Any]],
        custom_metadata: Mapping[str, Any] | None = None,
    ) -> MemoryEntriesResult:
        """Writes memory entries (ADK MemoryEntry JSON) directly; an id given
        again replaces its entry."""
        return self._send(_requests.add_memory(app_name, user_id, memories, custom_metadata))

    def delete_memory(self, *, app_name: str, user_id: str, memory_id: str) -> None:
        """Deletes one memory by the id search returned; unknown ids are a no-op."""
        self._send(_requests.delete_memory(app_name, user_id, memory_id))

    def forget_user_memory(self, *, app_name: str, user_id: str) -> None:
        """Deletes everything in the user's memory."""
        self._send(_requests.forget_user_memory(app_name, user_id))

    def erase_user(self, *, app_name: str, user_id: str) -> None:
        """Erases everything of the user in the app: sessions, events, user
        state, memories. Erasing a user with nothing stored is a no-op."""
        self._send(_requests.erase_user(app_name, user_id))

    def erase_app(self, *, app_name: str) -> None:
        """Erases everything of the app: every user's sessions, events, state
        and memories, and the app state."""
        self._send(_requests.erase_app(app_name))

    def close(self) -> None:
        """Closes the connections the client opened (not an `http_client` given)."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
