"""What memory takes of a session stored here, as ADK's memory services
(2.15) take a session: the events no rewind undid, each with a text part;
the memories of the events a rewind undid are deleted, so that a session
added again after a rewind no longer answers with what was taken back."""

from collections.abc import Callable, Sequence

from ..core import json_codec
from ..sessions import adk_events
from ..sessions.domain import MemoryRecord, StoredEvent
from ..sessions.rewound import first_events, live_indexes
from .records import memory_record
from .rules import event_memory_id


class SessionIngestion:
    """One ingestion of one session (app.memory.store.SessionIngestion):
    the first reading notes each event's invocation and rewind target, the
    second keeps the memories of the events left; `finish` completes a
    batch's records (their vectors)."""

    def __init__(
        self, session_id: str, finish: Callable[[list[MemoryRecord]], list[MemoryRecord]]
    ) -> None:
        self.session_id = session_id
        self.finish = finish
        self._seqs: list[int] = []
        self._memory_ids: list[str] = []
        self._invocations: list[str | None] = []
        self._rewind_targets: list[str | None] = []
        self._undone: set[int] | None = None

    def note(self, events: Sequence[StoredEvent]) -> None:
        for stored in events:
            document = json_codec.loads(stored.data)
            facts = adk_events.facts(document)
            self._seqs.append(stored.seq)
            self._memory_ids.append(event_memory_id(document))
            self._invocations.append(facts.invocation)
            self._rewind_targets.append(facts.rewind_target)

    def memories_of(self, events: Sequence[StoredEvent]) -> list[MemoryRecord]:
        undone = self._undone_seqs()
        records = [
            record
            for stored in events
            if stored.seq not in undone
            and (record := memory_record(self.session_id, json_codec.loads(stored.data)))
            is not None
        ]
        return self.finish(records) if records else records

    def undone_event_ids(self) -> list[str]:
        undone = self._undone_seqs()
        return [
            memory_id
            for seq, memory_id in zip(self._seqs, self._memory_ids, strict=True)
            if seq in undone
        ]

    def _undone_seqs(self) -> set[int]:
        if self._undone is None:
            if not any(self._rewind_targets):
                self._undone = set()
            else:
                live = live_indexes(self._rewind_targets, first_events(self._invocations))
                self._undone = {seq for index, seq in enumerate(self._seqs) if index not in live}
        return self._undone
