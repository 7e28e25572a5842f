"""What is sealed, and how, for sessions and memory: an event's JSON whole, a
state value one by one (so that SQL still merges state key by key, with
`||` and per-key rows), a memory's text, content and metadata.

Opening takes either kind: a value stored before encryption was turned on is
plaintext and comes back as it is (`session-state reencrypt` seals it
later). A sealed value read without the key that sealed it is
EncryptionKeyMissing naming the key id, logged; never garbage. With no keys
configured (`cipher` None) nothing is sealed, and a sealed value found is
that same error."""

import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from ..core import json_codec
from ..core.encryption import (
    ENVELOPE_TEXT_PREFIX,
    DamagedCiphertext,
    EncryptionKeyMissing,
    ValueCipher,
    is_sealed_text,
)
from ..memory.store import SessionIngestion
from ..sessions.domain import MemoryRecord, NewEvent, StoredEvent
from ..sessions.state import ScopedDelta, StateDict

logger = logging.getLogger("session_state.encryption")

# Bound to each sealed value (GCM's associated data): a value cannot be
# opened as another kind.
EVENT = b"event"
STATE = b"state"
MEMORY = b"memory"

MemorySearch = Literal["vectors-only", "off", "full"]
_FIRST = ENVELOPE_TEXT_PREFIX[0]
_DECODER = json.JSONDecoder()
_NO_VECTOR: dict[str, Any] = {"embedding_model": None, "embedding": None, "embedding_bits": None}


class Sealer:
    def __init__(self, cipher: ValueCipher | None, memory_search: MemorySearch) -> None:
        self.cipher = cipher
        self.memory_search: MemorySearch = memory_search

    # -- opening ---------------------------------------------------------------

    def open_text(self, text: str, purpose: bytes) -> str:
        """The plaintext of a sealed text; a plaintext one as it is."""
        if not text.startswith(ENVELOPE_TEXT_PREFIX):
            return text
        try:
            if self.cipher is None:
                raise EncryptionKeyMissing(ValueCipher.key_id_of(text))
            return self.cipher.open_text(text, purpose)
        except (EncryptionKeyMissing, DamagedCiphertext) as error:
            logger.error("a stored value cannot be opened: %s", error)
            raise

    def open_event(self, event: StoredEvent) -> StoredEvent:
        if event.data[:1] != _FIRST:
            return event
        return StoredEvent(event.seq, self.open_text(event.data, EVENT))

    def open_events(self, events: list[StoredEvent]) -> list[StoredEvent]:
        return [self.open_event(event) for event in events]

    def open_events_json(self, joined: str) -> str:
        """Event JSON texts joined with commas (a session read's), opened:
        a sealed text runs to the next comma (base64 has none), a plaintext
        event to the end of its JSON."""
        if _FIRST not in joined:
            return joined
        parts: list[str] = []
        at, end = 0, len(joined)
        while at < end:
            if joined.startswith(ENVELOPE_TEXT_PREFIX, at):
                stop = joined.find(",", at)
                stop = end if stop < 0 else stop
                parts.append(self.open_text(joined[at:stop], EVENT))
            else:
                stop = _DECODER.raw_decode(joined, at)[1]
                parts.append(joined[at:stop])
            at = stop + 1
        return ",".join(parts)

    def open_state(self, state: StateDict) -> StateDict:
        if not any(is_sealed_text(value) for value in state.values()):
            return state
        return {
            key: json_codec.loads(self.open_text(value, STATE)) if is_sealed_text(value) else value
            for key, value in state.items()
        }

    def open_memory(self, record: MemoryRecord) -> MemoryRecord:
        if not any(
            _looks_sealed(text) for text in (record.text, record.content, record.custom_metadata)
        ):
            return record
        return replace(
            record,
            text=self.open_memory_text(record.text),
            content=self.open_memory_text(record.content),
            custom_metadata=self.open_memory_text(record.custom_metadata),
        )

    def open_memory_text(self, text: Any) -> Any:
        # A memory text is anyone's words, not a value the API refuses: one
        # that only looks sealed (its envelope does not parse) is plaintext.
        return self.open_text(text, MEMORY) if _looks_sealed(text) else text

    # -- sealing -----------------------------------------------------------------

    def seal_event(self, event: NewEvent) -> NewEvent:
        if self.cipher is None:
            return event
        return replace(
            event,
            data=self.cipher.seal_text(event.data, EVENT),
            delta=self.seal_delta(event.delta),
        )

    def seal_state(self, state: StateDict) -> StateDict:
        cipher = self.cipher
        if cipher is None or not state:
            return state
        return {
            key: cipher.seal_text(json_codec.dumps(value).decode(), STATE)
            for key, value in state.items()
        }

    def seal_delta(self, delta: ScopedDelta) -> ScopedDelta:
        if self.cipher is None or delta.is_empty():
            return delta
        return ScopedDelta(
            self.seal_state(delta.app), self.seal_state(delta.user), self.seal_state(delta.session)
        )

    def seal_memory(self, record: MemoryRecord) -> MemoryRecord:
        cipher = self.cipher
        if cipher is None:
            return record
        return replace(
            record,
            text=cipher.seal_text(record.text, MEMORY),
            content=None if record.content is None else cipher.seal_text(record.content, MEMORY),
            custom_metadata=None
            if record.custom_metadata is None
            else cipher.seal_text(record.custom_metadata, MEMORY),
            indexed_text=record.text if self.memory_search == "full" else "",
            **(_NO_VECTOR if self.memory_search == "off" else {}),
        )

    def sealing(self, ingestion: SessionIngestion) -> SessionIngestion:
        """`ingestion` over opened events, its records sealed."""
        return _SealingIngestion(self, ingestion)


class _SealingIngestion:
    def __init__(self, sealer: "Sealer", ingestion: SessionIngestion) -> None:
        self.sealer = sealer
        self.ingestion = ingestion

    def note(self, events: Sequence[StoredEvent]) -> None:
        self.ingestion.note(self.sealer.open_events(list(events)))

    def memories_of(self, events: Sequence[StoredEvent]) -> list[MemoryRecord]:
        opened = self.sealer.open_events(list(events))
        return [self.sealer.seal_memory(record) for record in self.ingestion.memories_of(opened)]

    def undone_event_ids(self) -> list[str]:
        return self.ingestion.undone_event_ids()


def _looks_sealed(text: object) -> bool:
    if not is_sealed_text(text):
        return False
    try:
        ValueCipher.key_id_of(str(text))
    except DamagedCiphertext:
        return False
    return True
