"""Drop-in ADK services backed by a session-state server (extra `adk`).

    session_service = HttpSessionService(base_url="http://sessions:8000")
    runner = Runner(agent=agent, app_name="app", session_service=session_service)

They behave as ADK's own DatabaseSessionService: the server's revision is kept
in the session's `_storage_update_marker` and sent as If-Match, so an append
from a stale session object raises ADK's StaleSessionError.

ADK's own servers (`adk web`, `adk api_server`, `adk run`) build their services
from `--session_service_uri` / `--memory_service_uri` through ADK's service
registry, as `Class(uri=uri, agents_dir=..., **kwargs)`: both classes take a
`session-state://host:port[/base-path]` URI (`session-state+https://` for
HTTPS) that way. Register the schemes with a `services.yaml` (see docs/clients.md)
or with `register()` in the agents directory's `services.py`.
"""

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Self
from urllib.parse import urlsplit, urlunsplit

from session_state_client._extras import extra_missing

try:
    from google.adk.errors._invocation_not_found_error import InvocationNotFoundError
    from google.adk.errors._stale_session_error import StaleSessionError
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError
    from google.adk.events._rewind_events import get_active_events
    from google.adk.events.event import Event
    from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
    from google.adk.memory.memory_entry import MemoryEntry
    from google.adk.sessions._session_util import make_json_safe_state
    from google.adk.sessions.base_session_service import (
        BaseSessionService,
        GetSessionConfig,
        ListSessionsResponse,
    )
    from google.adk.sessions.session import Session
    from google.genai import types
except ModuleNotFoundError as missing:
    raise extra_missing(__name__, "ADK", "adk", missing) from missing

from session_state_client import _exceptions
from session_state_client._adk_state_form import holds_bytes
from session_state_client._async_client import AsyncSessionStateClient
from session_state_client._models import Session as WireSession
from session_state_client._requests import encode
from session_state_client._session_options import session_options

__all__ = [
    "URI_SCHEMES",
    "HttpMemoryService",
    "HttpSessionService",
    "base_url_from_uri",
    "register",
]

# URI scheme -> the HTTP scheme it stands for.
URI_SCHEMES = {"session-state": "http", "session-state+https": "https"}


def base_url_from_uri(uri: str) -> str:
    """The server's base URL from a `session-state://host:port[/base-path]`
    URI (or a plain http(s) URL); the path is kept as the base path. An API
    key does not belong in a URI, which ADK prints in its logs: it comes from
    SESSION_STATE_API_KEY."""
    parts = urlsplit(uri)
    scheme = URI_SCHEMES.get(parts.scheme, parts.scheme)
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not a session-state URI: {uri!r} (expected session-state://host:port)")
    if parts.username or parts.password:
        raise ValueError("put the API key in SESSION_STATE_API_KEY, not in the URI")
    try:
        parts.port  # noqa: B018  (urllib checks the port only when it is read)
    except ValueError:
        raise ValueError(f"not a session-state URI: {uri!r} (bad port)") from None
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


class _ServerClient:
    """How both services reach the server: the client's constructor
    arguments, a ready `client`, or a `uri` (as ADK's service registry passes
    it, with `agents_dir`, which is not needed here)."""

    def __init__(
        self,
        *,
        uri: str | None = None,
        client: AsyncSessionStateClient | None = None,
        agents_dir: str | None = None,
        **options: Any,
    ) -> None:
        if client is None and uri is not None:
            options.setdefault("base_url", base_url_from_uri(uri))
        self.client = client or AsyncSessionStateClient(**options)

    async def close(self) -> None:
        """Closes the client's connections on every event loop that used it
        (a later call opens new ones), as ADK's DatabaseSessionService.close
        disposes of its engine."""
        await self.client.close()

    async def aclose(self) -> None:
        """The same as `close`."""
        await self.client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_exc_info: object) -> None:
        await self.client.close()

    def __enter__(self) -> Self:
        """For code that runs ADK's sync `Runner.run`: leaving the block
        closes the connections of every loop the service was used on."""
        return self

    def __exit__(self, *_exc_info: object) -> None:
        self.client.__exit__(None, None, None)


def register() -> None:
    """Registers the `session-state` and `session-state+https` URI schemes in
    ADK's service registry, for sessions and memory: the one line an agents
    directory's `services.py` needs."""
    # Imported here: only an agents directory's services.py needs ADK's CLI.
    from google.adk.cli.service_registry import get_service_registry

    registry = get_service_registry()
    for scheme in URI_SCHEMES:
        registry.register_session_service(scheme, _session_service_factory)
        registry.register_memory_service(scheme, _memory_service_factory)


def _session_service_factory(uri: str, **kwargs: Any) -> "HttpSessionService":
    return HttpSessionService(uri=uri, **kwargs)


def _memory_service_factory(uri: str, **kwargs: Any) -> "HttpMemoryService":
    return HttpMemoryService(uri=uri, **kwargs)


_STALE_MESSAGE = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)


def _adk_session(wire: WireSession) -> Session:
    session = Session(
        id=wire.id,
        app_name=wire.app_name,
        user_id=wire.user_id,
        state=wire.state,
        events=[Event.model_validate(event) for event in wire.events],
        last_update_time=wire.last_update_time,
    )
    session._storage_update_marker = None if wire.revision is None else str(wire.revision)
    return session


# What one memory request carries at most, below the server's default body
# limit (8 MiB): a long session is sent in several.
_BATCH_BYTES = 4 * 1024 * 1024


def _batches(documents: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    size = 0
    for document in documents:
        document_size = len(encode(document))
        if batch and size + document_size > _BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(document)
        size += document_size
    if batch:
        yield batch


def _event_json(event: Event) -> dict[str, Any]:
    return _event_document(event, holds_bytes(event.actions.state_delta))


def _event_document(event: Event, delta_holds_bytes: bool) -> dict[str, Any]:
    document: dict[str, Any] = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    if delta_holds_bytes:
        # In the form ADK's persistent services store state (_adk_state_form).
        document["actions"]["stateDelta"] = make_json_safe_state(event.actions.state_delta)
    return document


_EVENT_SERIALIZER = Event.__pydantic_serializer__


def _event_bytes(event: Event) -> dict[str, Any] | bytes:
    """The event as the body of its append: dumped once, straight to JSON
    bytes (no dict in between; the same bytes as encoding `_event_json`).
    An event without an id goes as a dict, which the client gives one, and
    so does a state delta holding bytes, in the form state keeps them."""
    delta_holds_bytes = holds_bytes(event.actions.state_delta)
    if not event.id or delta_holds_bytes:
        return _event_document(event, delta_holds_bytes)
    return _EVENT_SERIALIZER.to_json(event, by_alias=True, exclude_none=True)


def _if_match(session: Session) -> int | None:
    """The revision the session object was read at (None: not read from
    the server), sent as If-Match."""
    marker = session._storage_update_marker
    return int(marker) if marker is not None else None


@contextmanager
def _append_errors(session: Session) -> Iterator[None]:
    """The client's errors of an append, as ADK's services raise them."""
    try:
        yield
    except _exceptions.StaleSessionError as error:
        raise StaleSessionError(_STALE_MESSAGE) from error
    except _exceptions.NotFoundError as error:
        raise SessionNotFoundError(f"Session {session.id} not found.") from error
    except _exceptions.ValidationError as error:
        if not _refuses_identifiers(error):
            raise
        raise SessionNotFoundError(f"Session {session.id} not found.") from error


def _session_id(session_id: str | None) -> str | None:
    """As ADK's own services: surrounding whitespace stripped, and a blank id
    is no id (on create, the server generates one)."""
    return (session_id.strip() or None) if session_id else None


def _refuses_identifiers(error: _exceptions.ValidationError, *, in_body: bool = False) -> bool:
    """Whether the server refused the app name, user id or session id (in the
    path, or `sessionId` of a create's body): ADK takes any string, the server
    cannot store an empty one, control characters or more than 128 characters."""
    identifiers = [["path"], ["body", "sessionId"]] if in_body else [["path"]]
    errors = error.body.get("errors")
    for item in errors if isinstance(errors, list) else []:
        loc = item.get("loc") if isinstance(item, dict) else None
        if isinstance(loc, list) and (loc[:1] in identifiers or loc in identifiers):
            return True
    return False


class HttpSessionService(_ServerClient, BaseSessionService):
    """ADK's BaseSessionService over HTTP (constructor: `_ServerClient`'s
    arguments, `compacted_reads` and `compaction_overlap`)."""

    def __init__(
        self, *, compacted_reads: bool = False, compaction_overlap: int = 0, **options: Any
    ) -> None:
        """`compacted_reads`: sessions are read as ADK's prompt builder uses
        them once `EventsCompactionConfig` has summarised some of their
        events: those a summary covers are left out (the server's
        `compacted=true`), and a Runner builds the same model requests from
        what is left. Off by default: `session.events` is then every event.
        `compaction_overlap`: the app's sliding-window `overlap_size`, needed
        when it is larger than its `compaction_interval` (the reads then keep
        that many covered invocations whole, for the next summary to re-read).
        `rewind_session` reaches invocations a compacted read no longer
        shows, which Runner.rewind_async cannot find."""
        super().__init__(**options)
        if compaction_overlap < 0:
            raise ValueError("compaction_overlap must be 0 or more")
        self.compacted_reads = compacted_reads
        self.compaction_overlap = compaction_overlap

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
        **options: Any,
    ) -> Session:
        """As ADK's services; `options` are those of ADK's
        VertexAiSessionService, so code written for it runs unchanged:
        `ttl` ("7200s", seconds or a timedelta: the session expires that
        long after its last event), `expire_time` or `expireTime` (RFC 3339
        text, an aware datetime or epoch seconds) and `labels` (GCP's label
        rules). ValueError for any other option, for `display_name` (the
        server keeps no display names: a label can hold one) and for both
        `ttl` and an expiry time."""
        session_id = _session_id(session_id)
        lifetime = session_options(options)
        try:
            wire = await self.client.create_session(
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                state=make_json_safe_state(state) if state else state,
                ttl_seconds=lifetime.ttl_seconds,
                expire_time=lifetime.expire_time,
                labels=lifetime.labels,
            )
        except _exceptions.AlreadyExistsError as error:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from error
        except _exceptions.ValidationError as error:
            if not _refuses_identifiers(error, in_body=True):
                raise
            raise ValueError(
                f"session-state cannot store a session of app {app_name!r}, user {user_id!r}"
                f" and id {session_id!r}: {error.body.get('detail')}"
            ) from error
        return _adk_session(wire)

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        stripped = _session_id(session_id)
        if stripped is None:
            return None
        try:
            wire = await self.client.get_session(
                app_name=app_name,
                user_id=user_id,
                session_id=stripped,
                num_recent_events=config.num_recent_events if config else None,
                after_timestamp=config.after_timestamp if config else None,
                compacted=self.compacted_reads,
                keep_invocations=self.compaction_overlap,
            )
        except _exceptions.NotFoundError:
            return None
        except _exceptions.ValidationError as error:
            if _refuses_identifiers(error):
                return None  # no session can have such identifiers
            raise
        return _adk_session(wire)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        try:
            sessions = [
                _adk_session(wire)
                async for wire in self.client.iter_sessions(
                    app_name=app_name, user_id=user_id, page_size=1000
                )
            ]
        except _exceptions.ValidationError as error:
            if _refuses_identifiers(error):
                return ListSessionsResponse(sessions=[])
            raise
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        stripped = _session_id(session_id)
        if stripped is None:
            return
        try:
            await self.client.delete_session(
                app_name=app_name, user_id=user_id, session_id=stripped
            )
        except _exceptions.NotFoundError:
            return
        except _exceptions.ValidationError as error:
            if not _refuses_identifiers(error):
                raise

    async def rewind_session(
        self, *, app_name: str, user_id: str, session_id: str, rewind_before_invocation_id: str
    ) -> Event:
        """Rewinds the session to before the invocation on the server, as
        ADK's `Runner.rewind_async` does on the client (which works through
        this service too): one request, computed from the history it is
        appended on. Returns the rewind event appended; session objects read
        before it are stale. The server keeps no artifacts: the event's
        artifact delta is empty (Runner.rewind_async restores artifacts
        through the runner's artifact service). InvocationNotFoundError (ADK's)
        when no event has that invocation id, SessionNotFoundError when there
        is no such session."""
        stripped = _session_id(session_id)
        missing = SessionNotFoundError(f"Session {session_id} not found.")
        if stripped is None:
            raise missing
        try:
            rewound = await self.client.rewind_session(
                app_name=app_name,
                user_id=user_id,
                session_id=stripped,
                before_invocation_id=rewind_before_invocation_id,
            )
        except _exceptions.InvocationNotFoundError as error:
            raise InvocationNotFoundError(
                f"Invocation ID not found: {rewind_before_invocation_id}"
            ) from error
        except _exceptions.NotFoundError as error:
            raise missing from error
        except _exceptions.ValidationError as error:
            if not _refuses_identifiers(error):
                raise
            raise missing from error
        return Event.model_validate(rewound.event)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await self.client.get_user_state(app_name=app_name, user_id=user_id)

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        # As ADK: temp: keys reach the caller's session state, never storage.
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        with _append_errors(session):
            appended = await self.client.append_event(
                app_name=session.app_name,
                user_id=session.user_id,
                session_id=session.id,
                event=_event_bytes(event),
                if_match=_if_match(session),
            )
        return self._commit_appended(session, [event], appended.revision, appended.replayed)[0]

    async def append_events(self, session: Session, events: list[Event]) -> list[Event]:
        """ADK's batch append (google-adk 2.15; `BufferedSessionService`
        sends a session's queued events through it): the events go in one
        request (the server's batch append, at most 1,000 events), stored in
        order, all or none, on the revision `session` was read at. The
        session and the returned events are as `append_event` for each
        would leave them; partial events are returned and not stored."""
        stored: list[Event] = []
        for event in events:
            if event.partial:
                continue
            self._apply_temp_state(session, event)
            stored.append(self._trim_temp_delta_state(event))
        if not stored:
            return list(events)
        with _append_errors(session):
            appended = await self.client.append_events(
                app_name=session.app_name,
                user_id=session.user_id,
                session_id=session.id,
                events=[_event_json(event) for event in stored],
                if_match=_if_match(session),
            )
        committed = iter(
            self._commit_appended(session, stored, appended.revision, appended.replayed)
        )
        return [event if event.partial else next(committed) for event in events]

    def _commit_appended(
        self, session: Session, events: list[Event], revision: int | None, replayed: bool
    ) -> list[Event]:
        """Applies stored events to the caller's session, in order, as ADK's
        own services do; the session takes the revision the last one made."""
        held = {known.id for known in session.events} if replayed else set()
        committed = []
        for event in events:
            if event.id in held:
                # A re-delivery of an event this session already holds: as
                # ADK's own services, apply nothing twice.
                committed.append(event)
                continue
            session.last_update_time = event.timestamp
            if revision is not None:
                session._storage_update_marker = str(revision)
            committed.append(self._commit_event_to_session(session, event))
        return committed


class HttpMemoryService(_ServerClient, BaseMemoryService):
    """ADK's BaseMemoryService over HTTP (constructor: `_ServerClient`), with
    ADK 2.15's add_events_to_memory, add_memory and delete_memory. The
    sessions given may be kept anywhere: their events are sent."""

    async def add_session_to_memory(self, session: Session) -> None:
        """As ADK's memory services (2.15): the events no rewind undid are
        taken, and the session's memories of those a rewind undid deleted."""
        live = get_active_events(session.events)
        live_ids = {event.id for event in live}
        await self._add_events(
            session.app_name,
            user_id=session.user_id,
            events=live,
            session_id=session.id,
            rewound_event_ids=[event.id for event in session.events if event.id not in live_ids],
        )

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        await self._add_events(app_name, user_id, events, session_id, custom_metadata)

    async def _add_events(
        self,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None,
        custom_metadata: Mapping[str, object] | None = None,
        rewound_event_ids: Sequence[str] = (),
    ) -> None:
        # As ADK's services: only events with content parts can be memories.
        documents = [
            _event_json(event) for event in events if event.content and event.content.parts
        ]
        # The rewound events' memories go with the first request (or alone).
        batches = list(_batches(documents)) or ([[]] if rewound_event_ids else [])
        for index, batch in enumerate(batches):
            await self.client.add_events_to_memory(
                app_name=app_name,
                user_id=user_id,
                events=batch,
                session_id=session_id,
                custom_metadata=custom_metadata,
                rewound_event_ids=rewound_event_ids if index == 0 else (),
            )

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        entries = [
            memory.model_dump(mode="json", by_alias=True, exclude_none=True) for memory in memories
        ]
        for batch in _batches(entries):
            await self.client.add_memory(
                app_name=app_name,
                user_id=user_id,
                memories=batch,
                custom_metadata=custom_metadata,
            )

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        if not memory_id:
            return
        await self.client.delete_memory(app_name=app_name, user_id=user_id, memory_id=memory_id)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        found = await self.client.search_memory(app_name=app_name, user_id=user_id, query=query)
        return SearchMemoryResponse(
            memories=[
                MemoryEntry(
                    id=entry.id,
                    author=entry.author,
                    timestamp=entry.timestamp,
                    content=types.Content.model_validate(
                        entry.content.model_dump(by_alias=True, exclude_none=True)
                    ),
                    custom_metadata=entry.custom_metadata,
                )
                for entry in found.memories
            ]
        )
