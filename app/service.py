"""The rules of the service: scopes, ``temp:``, revisions, preconditions and
idempotent appends. Routes call this; this calls the repository."""

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app import json_codec
from app.db import memory_repository, repository
from app.db.database import Database
from app.db.repository import SessionKey, SortOrder
from app.errors import (
    BadRequest,
    EventIdConflict,
    FieldError,
    InvalidInput,
    SessionAlreadyExists,
    SessionNotFound,
    StaleSession,
)
from app.events import NUL_MESSAGE, PreparedEvent, is_same_event, prepare_event
from app.pagination import decode_token, encode_token
from app.state import StateDict, find_nul_character, merge_scopes, split_delta

SESSIONS_TOKEN = "sessions"
EVENTS_TOKEN = "events"


@dataclass(frozen=True)
class SessionView:
    """A session as a reader sees it; `events_json` is the stored event JSON
    texts joined by commas (empty for none)."""

    id: str
    app_name: str
    user_id: str
    state: StateDict
    events_json: str
    last_update_time: float
    revision: int


@dataclass(frozen=True)
class SessionPage:
    sessions: list[SessionView]
    next_page_token: str | None


@dataclass(frozen=True)
class EventPage:
    events: list[str]
    next_page_token: str | None


@dataclass(frozen=True)
class AppendOutcome:
    """`revision` is None when the event was partial and not stored."""

    event: str
    revision: int | None
    created: bool


def new_uuid() -> str:
    return str(uuid.uuid4())


class SessionService:
    def __init__(
        self,
        db: Database,
        *,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = new_uuid,
    ) -> None:
        self.db = db
        self.clock = clock
        self.new_id = new_id

    async def create_session(
        self, app_name: str, user_id: str, session_id: str | None, state: StateDict | None
    ) -> SessionView:
        key = SessionKey(app_name, user_id, session_id or self.new_id())
        if (nul_at := find_nul_character(state or {})) is not None:
            raise InvalidInput([FieldError(["body", "state", *nul_at], NUL_MESSAGE)])
        delta = split_delta(state or {})
        now = self.clock()
        async with self.db.write() as connection:
            if not await repository.insert_session(connection, key, delta.session, now):
                raise SessionAlreadyExists(f"session {key.session_id!r} already exists")
            await repository.upsert_app_state(connection, app_name, delta.app)
            await repository.upsert_user_state(connection, app_name, user_id, delta.user)
            app_state = await repository.read_app_state(connection, app_name)
            user_state = await repository.read_user_state(connection, app_name, user_id)
        return SessionView(
            id=key.session_id,
            app_name=app_name,
            user_id=user_id,
            state=merge_scopes(delta.session, app_state, user_state),
            events_json="",
            last_update_time=now,
            revision=0,
        )

    async def get_session(
        self,
        key: SessionKey,
        num_recent_events: int | None = None,
        after_timestamp: float | None = None,
    ) -> SessionView:
        snapshot: repository.SessionSnapshot | None
        if self.db.hot_path is not None:
            snapshot = await self.db.hot_path.read_snapshot(key, num_recent_events, after_timestamp)
        else:
            async with self.db.read() as connection:
                snapshot = await repository.read_snapshot(
                    connection, key, num_recent_events, after_timestamp
                )
        if snapshot is None:
            raise SessionNotFound(f"session {key.session_id!r} not found")
        session = snapshot.session
        return SessionView(
            id=key.session_id,
            app_name=key.app_name,
            user_id=key.user_id,
            state=merge_scopes(session.state, snapshot.app_state, snapshot.user_state),
            events_json=snapshot.events_json,
            last_update_time=session.update_time,
            revision=session.revision,
        )

    async def list_sessions(
        self, app_name: str, user_id: str | None, page_size: int, page_token: str | None
    ) -> SessionPage:
        after: repository.SessionCursor | None = None
        if page_token is not None:
            position = decode_token(page_token, SESSIONS_TOKEN)
            if not (
                len(position) == 3
                and isinstance(position[0], int | float)
                and all(isinstance(part, str) for part in position[1:])
            ):
                raise BadRequest("pageToken is not a valid page token")
            after = (float(position[0]), position[1], position[2])
        async with self.db.read() as connection:
            rows = await repository.page_sessions(
                connection, app_name, user_id, after, page_size + 1
            )
            page, more = rows[:page_size], len(rows) > page_size
            app_state = await repository.read_app_state(connection, app_name)
            user_states = await repository.read_user_states(
                connection, app_name, sorted({row.user_id for row in page})
            )
        sessions = [
            SessionView(
                id=row.id,
                app_name=app_name,
                user_id=row.user_id,
                state=merge_scopes(row.state, app_state, user_states[row.user_id]),
                events_json="",
                last_update_time=row.update_time,
                revision=row.revision,
            )
            for row in page
        ]
        token = None
        if more:
            last = page[-1]
            token = encode_token(SESSIONS_TOKEN, [last.update_time, last.user_id, last.id])
        return SessionPage(sessions, token)

    async def delete_session(self, key: SessionKey, *, delete_memories: bool = False) -> None:
        async with self.db.write() as connection:
            if not await repository.delete_session(connection, key):
                raise SessionNotFound(f"session {key.session_id!r} not found")
            if delete_memories:
                await memory_repository.delete_session_memories(connection, key)

    async def append_event(
        self, key: SessionKey, document: Any, expected_revision: int | None
    ) -> AppendOutcome:
        prepared = prepare_event(document, now=self.clock, new_id=self.new_id)
        if prepared.partial:
            return AppendOutcome(json_codec.dumps_text(document), None, created=False)
        try:
            revision = await self._store_event(key, prepared, expected_revision)
        except repository.AppendNotApplied:
            async with self.db.read() as connection:
                return await self._explain_unapplied_append(connection, key, prepared)
        return AppendOutcome(prepared.record.data, revision, created=True)

    async def _store_event(
        self, key: SessionKey, prepared: PreparedEvent, expected_revision: int | None
    ) -> int:
        if self.db.hot_path is not None:
            return await self.db.hot_path.append_event(key, prepared.record, expected_revision)
        async with self.db.write() as connection:
            return await repository.append_event(
                connection, key, prepared.record, expected_revision
            )

    async def _explain_unapplied_append(
        self, connection: Any, key: SessionKey, prepared: PreparedEvent
    ) -> AppendOutcome:
        # A retry is recognised before the precondition: the first attempt
        # may have moved the revision the client still holds.
        stored = await repository.find_event(connection, key, prepared.record.id)
        if stored is not None:
            if is_same_event(json_codec.loads(stored.data), prepared):
                return AppendOutcome(stored.data, stored.seq, created=False)
            raise EventIdConflict(
                f"event {prepared.record.id!r} is already stored with other content"
            )
        if await repository.read_session(connection, key) is None:
            raise SessionNotFound(f"session {key.session_id!r} not found")
        raise StaleSession("the session has been modified since the revision given in If-Match")

    async def patch_state(
        self, key: SessionKey, state_delta: StateDict, expected_revision: int | None
    ) -> SessionView:
        # Recorded as an event, as ADK's own PATCH endpoint does.
        event = {
            "id": self.new_id(),
            "invocationId": f"p-{self.new_id()}",
            "author": "user",
            "actions": {"stateDelta": state_delta},
            "timestamp": self.clock(),
        }
        await self.append_event(key, event, expected_revision)
        return await self.get_session(key)

    async def list_events(
        self,
        key: SessionKey,
        order: SortOrder,
        page_size: int,
        page_token: str | None,
        after_timestamp: float | None,
    ) -> EventPage:
        after_seq: int | None = None
        if page_token is not None:
            position = decode_token(page_token, EVENTS_TOKEN)
            if not (len(position) == 2 and position[0] == order and isinstance(position[1], int)):
                raise BadRequest("pageToken does not belong to this list")
            after_seq = position[1]
        async with self.db.read() as connection:
            if await repository.read_session(connection, key) is None:
                raise SessionNotFound(f"session {key.session_id!r} not found")
            rows = await repository.page_events(
                connection, key, order, after_seq, after_timestamp, page_size + 1
            )
        page = rows[:page_size]
        token = None
        if len(rows) > page_size:
            token = encode_token(EVENTS_TOKEN, [order, page[-1].seq])
        return EventPage([row.data for row in page], token)

    async def get_user_state(self, app_name: str, user_id: str) -> StateDict:
        async with self.db.read() as connection:
            return await repository.read_user_state(connection, app_name, user_id)

    async def get_app_state(self, app_name: str) -> StateDict:
        async with self.db.read() as connection:
            return await repository.read_app_state(connection, app_name)
