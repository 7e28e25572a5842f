"""`session-state export`: the stored data as a dump, streamed: every table
is read in keyset pages and written line by line, so memory does not grow
with the data. Expired sessions are absent, as they are for the API."""

from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

from pydantic.alias_generators import to_camel

from ..admin.store import OperatorStore, StateEntry, ThreadRecord
from ..core import json_codec
from ..langgraph.store.domain import split
from ..sessions.domain import SessionKey
from . import dump_format as dump

# Events read per transaction.
EVENT_PAGE = 1000


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
    threads: int = 0
    store_items: int = 0

    def as_dict(self) -> dict[str, int]:
        return {to_camel(name): count for name, count in self.__dict__.items()}


@dataclass
class Exporter:
    store: OperatorStore
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
            await self._scopes(self.store.app_state_entries(self.app_name))
        await self._scopes(self.store.user_state_entries(self.app_name, self.user_id))
        await self._sessions()
        await self._memories()
        await self._forgotten()
        await self._threads()
        await self._store_items()
        self._write(dump.End(kind="end", counts=self.counts.as_dict()))
        return self.counts

    def _write(self, line: Any) -> None:
        self.out.write(dump.encode(line))

    async def _scopes(self, entries: AsyncIterator[StateEntry]) -> None:
        """One line per app (or user) with its whole state: entries come in
        key order, so each owner's keys are consecutive."""
        owner: tuple[str, str | None] | None = None
        state: dict[str, Any] = {}
        async for entry in entries:
            if (entry.app_name, entry.user_id) != owner:
                if owner is not None:
                    self._write_scope(*owner, state)
                owner, state = (entry.app_name, entry.user_id), {}
            state[entry.key] = entry.value
        if owner is not None:
            self._write_scope(*owner, state)

    def _write_scope(self, app_name: str, user_id: str | None, state: dict[str, Any]) -> None:
        if user_id is None:
            self.counts.apps += 1
            self._write(dump.AppState(kind="app", app=app_name, state=state))
        else:
            self.counts.users += 1
            self._write(dump.UserState(kind="user", app=app_name, user=user_id, state=state))

    async def _sessions(self) -> None:
        async for session in self.store.live_sessions(self.app_name, self.user_id, self.now):
            key = session.key
            # The events up to the revision read: a session's revision is not
            # its number of events once events have been removed.
            count = await self.store.count_events(key, session.revision)
            self._write(
                dump.Session(
                    kind="session",
                    app=session.app_name,
                    user=session.user_id,
                    id=session.id,
                    state=session.state,
                    initial_state=session.initial_state,
                    revision=session.revision,
                    create_time=session.create_time,
                    update_time=session.update_time,
                    expire_time=session.expire_time,
                    ttl_seconds=session.ttl_seconds,
                    events=count,
                    labels=session.labels or None,
                )
            )
            self.counts.sessions += 1
            written = await self._events(key, session.revision)
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
            batch = await self.store.read_events(key, after_seq, up_to_seq, EVENT_PAGE)
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
        async for memory in self.store.memories(self.app_name, self.user_id):
            self._write(
                dump.Memory(
                    kind="memory",
                    app=memory.app_name,
                    user=memory.user_id,
                    session=memory.session_id,
                    event_id=memory.event_id,
                    author=memory.author,
                    role=memory.role,
                    timestamp=memory.timestamp,
                    text=memory.text,
                    content=memory.content,
                    custom_metadata=memory.custom_metadata,
                )
            )
            self.counts.memories += 1

    async def _forgotten(self) -> None:
        async for forgotten in self.store.forgotten_memories(self.app_name, self.user_id):
            self._write(
                dump.Forgotten(
                    kind="forgotten",
                    app=forgotten.app_name,
                    user=forgotten.user_id,
                    memory_id=forgotten.memory_id,
                )
            )
            self.counts.forgotten += 1

    # -- LangGraph -----------------------------------------------------------

    async def _threads(self) -> None:
        async for thread in self.store.live_threads(self.app_name, self.user_id, self.now):
            self._write(await self._thread(thread))
            self.counts.threads += 1

    async def _thread(self, thread: ThreadRecord) -> dump.Thread:
        rows = await self.store.thread_rows(thread.app_name, thread.thread_id)
        return dump.Thread(
            kind="thread",
            app=thread.app_name,
            id=thread.thread_id,
            user=thread.user_id,
            create_time=thread.create_time,
            update_time=thread.update_time,
            expire_time=thread.expire_time,
            ttl_seconds=thread.ttl_seconds,
            checkpoints=[dump.Checkpoint(**asdict(row)) for row in rows.checkpoints],
            channel_values=[dump.ChannelValue(**asdict(row)) for row in rows.channel_values],
            writes=[dump.Write(**asdict(row)) for row in rows.writes],
        )

    async def _store_items(self) -> None:
        async for item in self.store.live_store_items(self.app_name, self.user_id, self.now):
            self._write(
                dump.StoreItem(
                    kind="storeItem",
                    app=item.app_name,
                    namespace=list(split(item.namespace)),
                    key=item.key,
                    value=item.value,
                    create_time=item.create_time,
                    update_time=item.update_time,
                    expire_time=item.expire_time,
                    ttl_seconds=item.ttl_seconds,
                )
            )
            self.counts.store_items += 1
