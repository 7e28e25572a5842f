"""Small builders for the operator store contract tests: whole rows as an
export holds them, written through an import transaction."""

from collections.abc import AsyncIterator
from typing import Any, TypeVar

from session_state.admin.store import (
    ForgottenMemory,
    OperatorStore,
    SessionRecord,
    StoredMemory,
    StoreItemRecord,
    ThreadRecord,
    ThreadRows,
)
from session_state.sessions.labels import Labels
from session_state.sessions.state import StateDict

T = TypeVar("T")

NOW = 1_800_000_000.0
APP = "ops"


def session(
    session_id: str,
    user_id: str = "ada",
    app_name: str = APP,
    *,
    update_time: float = NOW,
    state: StateDict | None = None,
    expire_time: float | None = None,
    labels: Labels | None = None,
    revision: int = 0,
) -> SessionRecord:
    return SessionRecord(
        app_name=app_name,
        user_id=user_id,
        id=session_id,
        state={} if state is None else state,
        initial_state=None,
        revision=revision,
        create_time=NOW - 100,
        update_time=update_time,
        expire_time=expire_time,
        ttl_seconds=None,
        labels=labels,
    )


def memory(
    event_id: str, user_id: str = "ada", app_name: str = APP, session_id: str = "s1"
) -> StoredMemory:
    return StoredMemory(
        app_name=app_name,
        user_id=user_id,
        session_id=session_id,
        event_id=event_id,
        author="planner",
        role="model",
        timestamp=NOW,
        text=f"a flight to paris, {event_id}",
        content={"role": "model", "parts": [{"text": event_id}]},
        custom_metadata=None,
    )


def forgotten(memory_id: str, user_id: str = "ada", app_name: str = APP) -> ForgottenMemory:
    return ForgottenMemory(app_name, user_id, memory_id)


def thread_record(
    thread_id: str, user_id: str = "ada", app_name: str = APP, expire_time: float | None = None
) -> ThreadRecord:
    return ThreadRecord(app_name, thread_id, user_id, NOW - 100, NOW, expire_time, None)


def item(
    namespace: str,
    key: str,
    value: dict[str, Any] | None = None,
    app_name: str = APP,
    expire_time: float | None = None,
) -> StoreItemRecord:
    return StoreItemRecord(
        app_name=app_name,
        namespace=namespace,
        key=key,
        user_id=namespace.split(".")[0],
        value={"v": key} if value is None else value,
        create_time=NOW - 100,
        update_time=NOW,
        expire_time=expire_time,
        ttl_seconds=None if expire_time is None else 60.0,
    )


NO_ROWS = ThreadRows([], [], [])


async def collect(rows: AsyncIterator[T]) -> list[T]:
    return [row async for row in rows]


async def import_sessions(operator: OperatorStore, *records: SessionRecord) -> None:
    async with operator.importing() as transaction:
        for record in records:
            await transaction.insert_session(record)
