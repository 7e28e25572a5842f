"""`session-state export`: the stored data as a dump, streamed: every table
is read in keyset pages and written line by line, so memory does not grow
with the data. Expired sessions are absent, as they are for the API."""

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from sqlalchemy import Row, Table
from sqlalchemy.ext.asyncio import AsyncEngine

from .. import json_codec
from ..db import transfer_repository as sql
from ..db.sqlite_statements import count_events, read_events_after
from ..db.tables import app_states, forgotten_memories, memories, sessions, user_states
from ..domain import SessionKey
from . import dump_format as dump

PAGE_ROWS = 1000


@dataclass
class ExportError(Exception):
    """The database changed under the export in a way the dump cannot hold."""


class Counts:
    apps: int = 0
    users: int = 0
    sessions: int = 0
    events: int = 0
    memories: int = 0
    forgotten: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class Exporter:
    engine: AsyncEngine
    out: TextIO
    app_name: str | None
    user_id: str | None
    now: float
    # Called with the number of events written since the last call.
    on_events: Callable[[int], object] = lambda _count: None
    counts: Counts = field(default_factory=Counts)

    async def run(self) -> Counts:
        self._write(
            dump.Header(
                format=dump.FORMAT,
                version=dump.VERSION,
                exported_at=self.now,
                app=self.app_name,
                user=self.user_id,
            )
        )
        # App state is every user's: a dump of one user leaves it out.
        if self.user_id is None:
            await self._scopes(app_states, ("app_name", "key", "value"), self._app_line)
        await self._scopes(user_states, ("app_name", "user_id", "key", "value"), self._user_line)
        await self._sessions()
        await self._memories()
        await self._forgotten()
        self._write(dump.End(kind="end", counts=self.counts.as_dict()))
        return self.counts

    def _write(self, line: Any) -> None:
        self.out.write(dump.encode(line))

    async def _rows(
        self, table: Table, columns: Sequence[str], *, live_at: float | None = None
    ) -> AsyncIterator[Row[Any]]:
        """The rows of the table in primary-key order, a page per transaction
        (a dump of a live database is consistent per page, not as a whole)."""
        key_positions = [list(columns).index(column.name) for column in table.primary_key.columns]
        user_id = self.user_id if "user_id" in table.c else None
        after: tuple[Any, ...] | None = None
        while True:
            async with self.engine.connect() as connection:
                rows = await sql.page_in_key_order(
                    connection,
                    table,
                    columns,
                    self.app_name,
                    user_id,
                    after,
                    PAGE_ROWS,
                    live_at=live_at,
                )
            for row in rows:
                yield row
            if len(rows) < PAGE_ROWS:
                return
            after = tuple(rows[-1][position] for position in key_positions)

    async def _scopes(
        self,
        table: Table,
        columns: Sequence[str],
        line_of: Callable[[tuple[str, ...], dict[str, Any]], Any],
    ) -> None:
        """One line per app (or user) with its whole state: rows come in key
        order, so each owner's keys are consecutive."""
        owner: tuple[str, ...] | None = None
        state: dict[str, Any] = {}
        async for row in self._rows(table, columns):
            *row_owner, key, value = tuple(row)
            if tuple(row_owner) != owner:
                if owner is not None:
                    self._write(line_of(owner, state))
                owner, state = tuple(row_owner), {}
            state[key] = value
        if owner is not None:
            self._write(line_of(owner, state))

    def _app_line(self, owner: tuple[str, ...], state: dict[str, Any]) -> dump.AppState:
        self.counts.apps += 1
        return dump.AppState(kind="app", app=owner[0], state=state)

    def _user_line(self, owner: tuple[str, ...], state: dict[str, Any]) -> dump.UserState:
        self.counts.users += 1
        return dump.UserState(kind="user", app=owner[0], user=owner[1], state=state)

    async def _sessions(self) -> None:
        async for row in self._rows(sessions, sql.SESSION_COLUMNS, live_at=self.now):
            values = dict(zip(sql.SESSION_COLUMNS, row, strict=True))
            key = SessionKey(values["app_name"], values["user_id"], values["id"])
            # The events up to the revision read: a session's revision is not
            # its number of events once events have been removed.
            async with self.engine.connect() as connection:
                count = await count_events(connection, key, values["revision"])
            self._write(
                dump.Session(
                    kind="session",
                    app=values["app_name"],
                    user=values["user_id"],
                    id=values["id"],
                    state=values["state"],
                    initial_state=values["initial_state"],
                    revision=values["revision"],
                    create_time=values["create_time"],
                    update_time=values["update_time"],
                    expire_time=values["expire_time"],
                    ttl_seconds=values["ttl_seconds"],
                    events=count,
                )
            )
            self.counts.sessions += 1
            written = await self._events(key, values["revision"])
            if written != count:
                raise ExportError(
                    f"events of session {key.session_id!r} were removed while it was exported: "
                    "export again"
                )

    async def _events(self, key: SessionKey, up_to_seq: int) -> int:
        """Writes the session's events up to `up_to_seq`; how many."""
        after_seq = 0
        written = 0
        while True:
            async with self.engine.connect() as connection:
                batch = await read_events_after(connection, key, after_seq, PAGE_ROWS, up_to_seq)
            if not batch:
                return written
            written += len(batch)
            for stored in batch:
                # The stored text is the server's own encoding of the event:
                # read and written again by the same codec, it comes back
                # byte for byte.
                self._write(
                    dump.Event(kind="event", seq=stored.seq, event=json_codec.loads(stored.data))
                )
            self.counts.events += len(batch)
            self.on_events(len(batch))
            after_seq = batch[-1].seq

    async def _memories(self) -> None:
        async for row in self._rows(memories, sql.MEMORY_COLUMNS):
            values = dict(zip(sql.MEMORY_COLUMNS, row, strict=True))
            self._write(
                dump.Memory(
                    kind="memory",
                    app=values["app_name"],
                    user=values["user_id"],
                    session=values["session_id"],
                    event_id=values["event_id"],
                    author=values["author"],
                    role=values["role"],
                    timestamp=values["timestamp"],
                    text=values["text"],
                    content=_json_or_none(values["content"]),
                    custom_metadata=_json_or_none(values["custom_metadata"]),
                )
            )
            self.counts.memories += 1

    async def _forgotten(self) -> None:
        columns = ("app_name", "user_id", "memory_id")
        async for row in self._rows(forgotten_memories, columns):
            app_name, user_id, memory_id = tuple(row)
            self._write(
                dump.Forgotten(kind="forgotten", app=app_name, user=user_id, memory_id=memory_id)
            )
            self.counts.forgotten += 1


def _json_or_none(text: str | None) -> Any:
    return None if text is None else json_codec.loads(text)
