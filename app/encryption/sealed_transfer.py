"""Export and import with encryption at rest: the operator store's reads of
content opened, its import writes sealed, as the API's store does
(`sealed_store`). A dump holds plaintext, as the API returns it: it is moved
between deployments that may hold other keys, and is protected as a file
(docs/security.md); the importing deployment seals it under its own key."""

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from ..admin.store import SessionRecord, StateEntry, StoredMemory
from ..core import json_codec
from ..core.encryption import is_sealed_text
from ..sessions.domain import NewEvent, SessionKey, StoredEvent
from .sealing import MEMORY, Sealer


def _open_value(sealer: Sealer, value: Any) -> Any:
    return sealer.open_state({"": value})[""] if is_sealed_text(value) else value


def _open_json(sealer: Sealer, text: Any) -> Any:
    """A memory's content or metadata: left as sealed text by the repository."""
    if not is_sealed_text(text):
        return text
    return json_codec.loads(sealer.open_text(text, MEMORY))


def _open_session(sealer: Sealer, session: SessionRecord) -> SessionRecord:
    initial = session.initial_state
    return replace(
        session,
        state=sealer.open_state(session.state),
        initial_state=None if initial is None else sealer.open_state(initial),
    )


def _open_memory(sealer: Sealer, memory: StoredMemory) -> StoredMemory:
    return replace(
        memory,
        text=sealer.open_memory_text(memory.text),
        content=_open_json(sealer, memory.content),
        custom_metadata=_open_json(sealer, memory.custom_metadata),
    )


def _seal_memory(sealer: Sealer, memory: StoredMemory) -> StoredMemory:
    cipher = sealer.cipher
    if cipher is None:
        return memory

    def sealed(value: Any) -> Any:
        return None if value is None else cipher.seal_text(json_codec.dumps_text(value), MEMORY)

    return replace(
        memory,
        text=cipher.seal_text(memory.text, MEMORY),
        content=sealed(memory.content),
        custom_metadata=sealed(memory.custom_metadata),
        indexed_text=memory.text if sealer.memory_search == "full" else "",
    )


class SealedOperatorStore:
    """The operator store (app.admin.sql_store), sealing and opening."""

    def __init__(self, inner: Any, sealer: Sealer) -> None:
        self._inner = inner
        self.sealer = sealer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def app_state_entries(self, app_name: str | None) -> AsyncIterator[StateEntry]:
        async for entry in self._inner.app_state_entries(app_name):
            yield replace(entry, value=_open_value(self.sealer, entry.value))

    async def user_state_entries(
        self, app_name: str | None, user_id: str | None
    ) -> AsyncIterator[StateEntry]:
        async for entry in self._inner.user_state_entries(app_name, user_id):
            yield replace(entry, value=_open_value(self.sealer, entry.value))

    async def live_sessions(
        self, app_name: str | None, user_id: str | None, now: float
    ) -> AsyncIterator[SessionRecord]:
        async for session in self._inner.live_sessions(app_name, user_id, now):
            yield _open_session(self.sealer, session)

    async def read_events(
        self, key: SessionKey, after_seq: int, up_to_seq: int, limit: int
    ) -> list[StoredEvent]:
        events = await self._inner.read_events(key, after_seq, up_to_seq, limit)
        return self.sealer.open_events(events)

    async def memories(
        self, app_name: str | None, user_id: str | None
    ) -> AsyncIterator[StoredMemory]:
        async for memory in self._inner.memories(app_name, user_id):
            yield _open_memory(self.sealer, memory)

    @asynccontextmanager
    async def importing(self) -> AsyncIterator["SealedImport"]:
        async with self._inner.importing() as transaction:
            yield SealedImport(transaction, self.sealer)


class SealedImport:
    """One import transaction, sealing what it writes."""

    def __init__(self, inner: Any, sealer: Sealer) -> None:
        self._inner = inner
        self.sealer = sealer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def find_session(self, key: SessionKey) -> SessionRecord | None:
        found = await self._inner.find_session(key)
        return None if found is None else _open_session(self.sealer, found)

    async def insert_session(self, session: SessionRecord) -> None:
        sealer, initial = self.sealer, session.initial_state
        await self._inner.insert_session(
            replace(
                session,
                state=sealer.seal_state(session.state),
                initial_state=None if initial is None else sealer.seal_state(initial),
            )
        )

    async def insert_events(self, key: SessionKey, events: Sequence[tuple[int, NewEvent]]) -> None:
        sealer = self.sealer
        await self._inner.insert_events(
            key, [(seq, sealer.seal_event(event)) for seq, event in events]
        )

    async def stored_event_data(self, key: SessionKey, seqs: Sequence[int]) -> dict[int, str]:
        stored = await self._inner.stored_event_data(key, seqs)
        opened = self.sealer.open_events([StoredEvent(seq, data) for seq, data in stored.items()])
        return {event.seq: event.data for event in opened}

    async def stored_values(
        self, app_name: str, user_id: str | None, keys: Sequence[str]
    ) -> dict[str, Any]:
        stored = await self._inner.stored_values(app_name, user_id, keys)
        return self.sealer.open_state(stored)

    async def insert_values(
        self, app_name: str, user_id: str | None, entries: dict[str, Any]
    ) -> None:
        await self._inner.insert_values(app_name, user_id, self.sealer.seal_state(entries))

    async def find_memory(
        self, app_name: str, user_id: str, session_id: str, event_id: str
    ) -> StoredMemory | None:
        found = await self._inner.find_memory(app_name, user_id, session_id, event_id)
        return None if found is None else _open_memory(self.sealer, found)

    async def insert_memory(self, memory: StoredMemory) -> None:
        await self._inner.insert_memory(_seal_memory(self.sealer, memory))


def sealed_operator_store(store: Any, sealer: Sealer) -> Any:
    """`store` (an app.admin.sql_store.SqlOperatorStore) sealing and opening."""
    return SealedOperatorStore(store, sealer)
