"""`session-state import`: a dump loaded into the configured database.

Idempotent: what is already stored identically is skipped, what is stored
differently is a conflict, reported and left alone. A session is written
with all of its events in one transaction, or not at all, so an import that
was interrupted (or stopped at a bad line) leaves whole sessions only, and
running it again completes it. Values are compared as JSON (`1` is not `1.0`,
key order does not count)."""

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from ..admin.store import (
    AlreadyStored,
    ChannelValueRow,
    CheckpointRow,
    ForgottenMemory,
    ImportTransaction,
    OperatorStore,
    SessionRecord,
    StoredMemory,
    StoreItemRecord,
    ThreadRecord,
    ThreadRows,
    WriteRow,
)
from ..core.errors import InvalidInput
from ..core.limits import Limits
from ..langgraph.store.domain import joined
from ..sessions.domain import NewEvent, SessionKey
from ..sessions.events import restored_event
from ..sessions.state import find_refused_entry
from . import dump_format as dump

EVENT_BATCH = 1000
KEY_BATCH = 500
# Conflicts are counted; this many are described in the summary.
CONFLICTS_DESCRIBED = 100


@dataclass
class Outcome:
    added: int = 0
    skipped: int = 0
    conflicts: int = 0


@dataclass
class ImportSummary:
    sessions: Outcome = field(default_factory=Outcome)
    events: Outcome = field(default_factory=Outcome)
    state_keys: Outcome = field(default_factory=Outcome)
    memories: Outcome = field(default_factory=Outcome)
    forgotten: Outcome = field(default_factory=Outcome)
    threads: Outcome = field(default_factory=Outcome)
    store_items: Outcome = field(default_factory=Outcome)
    conflicts: list[str] = field(default_factory=list)

    def conflict(self, outcome: Outcome, description: str) -> None:
        outcome.conflicts += 1
        if len(self.conflicts) < CONFLICTS_DESCRIBED:
            self.conflicts.append(description)

    def as_dict(self) -> dict[str, Any]:
        parts = {
            "sessions": self.sessions,
            "events": self.events,
            "stateKeys": self.state_keys,
            "memories": self.memories,
            "forgotten": self.forgotten,
            "threads": self.threads,
            "storeItems": self.store_items,
        }
        return {
            **{name: dict(outcome.__dict__) for name, outcome in parts.items()},
            "conflicts": self.conflicts,
        }

    @property
    def conflict_count(self) -> int:
        return sum(
            outcome.conflicts
            for outcome in (
                self.sessions,
                self.state_keys,
                self.memories,
                self.forgotten,
                self.threads,
                self.store_items,
            )
        )


def same_json(left: Any, right: Any) -> bool:
    """Equal as JSON values: types count (1, 1.0 and true differ), the order
    of an object's keys does not (JSONB keeps its own)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same_json(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(same_json, left, right))
    return bool(left == right)


def _same_fields(stored: Any, imported: Any) -> bool:
    """Every field of two dataclasses equal as JSON (a dump holds what a row
    holds; bytes compare as bytes)."""
    return all(
        same_json(getattr(stored, column.name), getattr(imported, column.name))
        for column in fields(stored)
    )


Numbered = tuple[int, dump.Line]


async def parsed(texts: Iterator[tuple[int, str]]) -> AsyncIterator[Numbered]:
    """The lines of a dump file after its header (checked here), parsed."""
    first = next(texts, None)
    if first is None:
        raise dump.DumpError("the file is empty: not a session-state dump")
    dump.parse_header(first[1])
    for number, text in texts:
        if text.strip():
            yield number, dump.parse_line(text, number)


class _Lines:
    """Parsed lines with one line of lookahead."""

    def __init__(self, source: AsyncIterator[Numbered]) -> None:
        self.source = source

    async def next(self) -> Numbered | None:
        return await anext(self.source, None)

    async def next_event(self, number_of_session: int) -> tuple[int, dump.Event]:
        item = await self.next()
        if item is None or not isinstance(item[1], dump.Event):
            where = "the end of the dump" if item is None else f"line {item[0]}"
            raise dump.DumpError(
                f"{where}: the session of line {number_of_session} has fewer event lines "
                'than its "events" says (the dump is cut short or edited)'
            )
        return item[0], item[1]


@dataclass
class Importer:
    store: OperatorStore
    limits: Limits
    # Called with the number of event lines read since the last call.
    on_events: Callable[[int], object] = lambda _count: None
    summary: ImportSummary = field(default_factory=ImportSummary)

    async def run(
        self, source: AsyncIterator[Numbered], *, needs_end: bool = True
    ) -> ImportSummary:
        """DumpError for a line that does not belong to a dump; what was
        imported before it stays (whole sessions, whole scopes). `needs_end`:
        a dump file must end with its end line (else it was cut short)."""
        lines = _Lines(source)
        end: dump.End | None = None
        while (item := await lines.next()) is not None:
            number, line = item
            if end is not None:
                raise dump.DumpError(f"line {number}: a line after the end line")
            if isinstance(line, dump.Session):
                self._check_keys(number, {**line.state, **(line.initial_state or {})})
                await self._session(number, line, lines)
            elif isinstance(line, dump.AppState):
                self._check_keys(number, line.state)
                await self._scope(line.app, None, line.state)
            elif isinstance(line, dump.UserState):
                self._check_keys(number, line.state)
                await self._scope(line.app, line.user, line.state)
            elif isinstance(line, dump.Memory):
                await self._memory(line)
            elif isinstance(line, dump.Forgotten):
                await self._forgotten(line)
            elif isinstance(line, dump.Thread):
                await self._thread(line)
            elif isinstance(line, dump.StoreItem):
                await self._store_item(line)
            elif isinstance(line, dump.Event):
                raise dump.DumpError(f"line {number}: an event line that follows no session line")
            else:
                end = line
        if end is None and needs_end:
            raise dump.DumpError(
                "the dump ends without its end line: it was cut short (what it held so far "
                "is imported; import the complete dump to finish)"
            )
        return self.summary

    def _check_keys(self, number: int, state: dict[str, Any]) -> None:
        """State keys as long as an append may write (the destination's limit)."""
        long_key = find_refused_entry(state, self.limits)
        if long_key is not None:
            raise dump.DumpError(f"line {number}: {long_key.msg}")

    # -- sessions and their events -------------------------------------------

    async def _session(self, number: int, line: dump.Session, lines: _Lines) -> None:
        session = SessionRecord(
            app_name=line.app,
            user_id=line.user,
            id=line.id,
            state=line.state,
            initial_state=line.initial_state,
            revision=line.revision,
            create_time=line.create_time,
            update_time=line.update_time,
            expire_time=line.expire_time,
            ttl_seconds=line.ttl_seconds,
            labels=line.labels or None,
        )
        key = session.key
        try:
            async with self.store.importing() as transaction:
                stored = await transaction.find_session(key)
                if stored is not None:
                    same = _same_fields(stored, session)
                    same = (
                        await self._copy_events(transaction, key, number, line, lines, compare=True)
                        and same
                    )
                else:
                    await transaction.insert_session(session)
                    await self._copy_events(transaction, key, number, line, lines, compare=False)
            # Counted once committed.
            if stored is None:
                self.summary.sessions.added += 1
                self.summary.events.added += line.events
                return
        except AlreadyStored:
            # Created by someone else since it was looked up.
            self.summary.conflict(self.summary.sessions, _describe(key, "created meanwhile"))
            return
        if same:
            self.summary.sessions.skipped += 1
        else:
            self.summary.conflict(
                self.summary.sessions, _describe(key, "stored with other content; left as it is")
            )

    async def _copy_events(
        self,
        transaction: ImportTransaction,
        key: SessionKey,
        number: int,
        line: dump.Session,
        lines: _Lines,
        *,
        compare: bool,
    ) -> bool:
        """Reads the session's event lines and inserts them in batches, or
        (`compare`) tells whether they are the ones stored."""
        last_seq = 0
        same = True
        for start in range(0, line.events, EVENT_BATCH):
            batch: list[tuple[int, NewEvent]] = []
            for _ in range(min(EVENT_BATCH, line.events - start)):
                event_number, event_line = await lines.next_event(number)
                if not last_seq < event_line.seq <= line.revision:
                    raise dump.DumpError(
                        f"line {event_number}: seq {event_line.seq} is not after {last_seq} "
                        f"and at most the session's revision {line.revision}"
                    )
                last_seq = event_line.seq
                batch.append((event_line.seq, self._event(event_number, event_line)))
            self.on_events(len(batch))
            if not compare:
                try:
                    await transaction.insert_events(key, batch)
                except AlreadyStored:
                    raise dump.DumpError(
                        f"line {number}: the session's events repeat an event id "
                        "(a session stores each id once)"
                    ) from None
                continue
            stored = await transaction.stored_event_data(key, [seq for seq, _ in batch])
            matching = sum(stored.get(seq) == event.data for seq, event in batch)
            self.summary.events.skipped += matching
            same = same and matching == len(batch) and len(stored) == len(batch)
        return same

    def _event(self, number: int, line: dump.Event) -> NewEvent:
        try:
            return restored_event(line.event, self.limits)
        except InvalidInput as error:
            problem = error.errors[0]
            where = ".".join(str(part) for part in problem.loc[1:])
            raise dump.DumpError(f"line {number}: event.{where}: {problem.msg}") from None

    # -- app and user state --------------------------------------------------

    async def _scope(self, app_name: str, user_id: str | None, state: dict[str, Any]) -> None:
        keys = list(state)
        scope = f"app {app_name!r}" if user_id is None else f"user {user_id!r} of app {app_name!r}"
        try:
            async with self.store.importing() as transaction:
                for start in range(0, len(keys), KEY_BATCH):
                    chunk = keys[start : start + KEY_BATCH]
                    stored = await transaction.stored_values(app_name, user_id, chunk)
                    new = {key: state[key] for key in chunk if key not in stored}
                    for key in chunk:
                        if key not in stored:
                            continue
                        if same_json(stored[key], state[key]):
                            self.summary.state_keys.skipped += 1
                        else:
                            self.summary.conflict(
                                self.summary.state_keys,
                                f"state key {key!r} of the {scope}: stored with another value; "
                                "left as it is",
                            )
                    if new:
                        await transaction.insert_values(app_name, user_id, new)
                        self.summary.state_keys.added += len(new)
        except AlreadyStored:
            self.summary.conflict(
                self.summary.state_keys, f"state of the {scope}: written meanwhile; run it again"
            )

    # -- memory --------------------------------------------------------------

    async def _memory(self, line: dump.Memory) -> None:
        memory = StoredMemory(
            app_name=line.app,
            user_id=line.user,
            session_id=line.session,
            event_id=line.event_id,
            author=line.author,
            role=line.role,
            timestamp=line.timestamp,
            text=line.text,
            content=line.content,
            custom_metadata=line.custom_metadata,
        )
        what = (
            f"memory {line.event_id!r} of session {line.session!r}, user {line.user!r}, "
            f"app {line.app!r}"
        )
        try:
            async with self.store.importing() as transaction:
                existing = await transaction.find_memory(
                    line.app, line.user, line.session, line.event_id
                )
                if existing is None:
                    await transaction.insert_memory(memory)
                    self.summary.memories.added += 1
                    return
        except AlreadyStored:
            self.summary.conflict(self.summary.memories, f"{what}: written meanwhile")
            return
        if _same_fields(existing, memory):
            self.summary.memories.skipped += 1
        else:
            self.summary.conflict(self.summary.memories, f"{what}: stored with other content")

    # -- LangGraph -----------------------------------------------------------

    async def _thread(self, line: dump.Thread) -> None:
        """A thread is imported whole, in one transaction, or not at all."""
        thread = ThreadRecord(
            app_name=line.app,
            thread_id=line.id,
            user_id=line.user,
            create_time=line.create_time,
            update_time=line.update_time,
            expire_time=line.expire_time,
            ttl_seconds=line.ttl_seconds,
        )
        rows = _rows_of(line)
        what = f"LangGraph thread {line.id!r} of app {line.app!r}"
        try:
            async with self.store.importing() as transaction:
                existing = await transaction.find_thread(line.app, line.id)
                if existing is None:
                    await transaction.insert_thread(thread, rows)
                else:
                    stored_rows = await transaction.thread_rows(line.app, line.id)
        except AlreadyStored:
            self.summary.conflict(self.summary.threads, f"{what}: written meanwhile")
            return
        if existing is None:
            self.summary.threads.added += 1
        elif _same_fields(existing, thread) and _same_rows(stored_rows, rows):
            self.summary.threads.skipped += 1
        else:
            self.summary.conflict(
                self.summary.threads, f"{what}: stored with other content; left as it is"
            )

    async def _store_item(self, line: dump.StoreItem) -> None:
        item = StoreItemRecord(
            app_name=line.app,
            namespace=joined(tuple(line.namespace)),
            key=line.key,
            # The namespace's first label is the item's user (erasure).
            user_id=line.namespace[0],
            value=line.value,
            create_time=line.create_time,
            update_time=line.update_time,
            expire_time=line.expire_time,
            ttl_seconds=line.ttl_seconds,
        )
        what = f"store item {line.key!r} in namespace {line.namespace!r} of app {line.app!r}"
        try:
            async with self.store.importing() as transaction:
                existing = await transaction.find_store_item(
                    item.app_name, item.namespace, item.key
                )
                if existing is None:
                    await transaction.insert_store_item(item)
        except AlreadyStored:
            self.summary.conflict(self.summary.store_items, f"{what}: written meanwhile")
            return
        if existing is None:
            self.summary.store_items.added += 1
        elif _same_fields(existing, item):
            self.summary.store_items.skipped += 1
        else:
            self.summary.conflict(
                self.summary.store_items, f"{what}: stored with other content; left as it is"
            )

    async def _forgotten(self, line: dump.Forgotten) -> None:
        forgotten = ForgottenMemory(line.app, line.user, line.memory_id)
        async with self.store.importing() as transaction:
            if await transaction.is_forgotten(forgotten):
                self.summary.forgotten.skipped += 1
                return
            await transaction.insert_forgotten(forgotten)
            self.summary.forgotten.added += 1


def _same_rows(stored: ThreadRows, imported: ThreadRows) -> bool:
    # Both sorted here: the database's collation may order text otherwise.
    left, right = _sorted(stored), _sorted(imported)
    return all(
        len(getattr(left, part.name)) == len(getattr(right, part.name))
        and all(map(_same_fields, getattr(left, part.name), getattr(right, part.name)))
        for part in fields(ThreadRows)
    )


def _sorted(rows: ThreadRows) -> ThreadRows:
    """Each list in primary-key order."""
    return ThreadRows(
        checkpoints=sorted(
            rows.checkpoints, key=lambda row: (row.checkpoint_ns, row.checkpoint_id)
        ),
        channel_values=sorted(
            rows.channel_values, key=lambda row: (row.checkpoint_ns, row.channel, row.version)
        ),
        writes=sorted(
            rows.writes,
            key=lambda row: (row.checkpoint_ns, row.checkpoint_id, row.task_id, row.idx),
        ),
    )


def _rows_of(line: dump.Thread) -> ThreadRows:
    return ThreadRows(
        checkpoints=[CheckpointRow(**dict(row)) for row in line.checkpoints],
        channel_values=[ChannelValueRow(**dict(row)) for row in line.channel_values],
        writes=[WriteRow(**dict(row)) for row in line.writes],
    )


def _describe(key: SessionKey, what: str) -> str:
    return f"session {key.session_id!r} of user {key.user_id!r}, app {key.app_name!r}: {what}"
