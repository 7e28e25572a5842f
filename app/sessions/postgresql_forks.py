"""The PostgreSQL storage of a fork (`forking.fork_session`'s statements, in
one transaction) and of the reads a fork is derived from."""

from dataclasses import dataclass

import asyncpg

from . import forking
from . import postgresql_statements as sql
from .domain import Expiry, ForkSource, SessionKey, StoredEvent
from .labels import Labels
from .postgresql_session_deletion import PostgresSessionDeletion
from .postgresql_statements import session_values
from .state import StateDict
from .state_sizes import session_state_bytes
from .store import ForkOutcome


class PostgresForks(PostgresSessionDeletion):
    async def read_initial_state(self, key: SessionKey, now: float) -> StateDict | None:
        statement = sql.INITIAL_STATE
        async with self._connection() as connection:
            row = await connection.fetchrow(
                statement.text, *statement.arguments(session_values(key, now=now))
            )
        if row is None or not row["has_initial_state"]:
            return None
        state: StateDict = row["initial_state"]
        return state

    async def read_events(
        self, key: SessionKey, after_seq: int, up_to_seq: int, limit: int
    ) -> list[StoredEvent]:
        statement = sql.EVENTS_BETWEEN
        values = session_values(key, after_seq=after_seq, up_to_seq=up_to_seq, limit=limit)
        async with self._connection() as connection:
            rows = await connection.fetch(statement.text, *statement.arguments(values))
        return [StoredEvent(row["seq"], row["data"]) for row in rows]

    async def fork_session(
        self,
        source: ForkSource,
        session_id: str,
        now: float,
        expiry: Expiry,
        *,
        forget_expired_memories: bool,
    ) -> ForkOutcome:
        async with self._transaction() as connection:
            return await forking.fork_session(
                _ForkStatements(connection, self),
                source,
                session_id,
                now,
                expiry,
                forget_expired_memories=forget_expired_memories,
            )


@dataclass(frozen=True)
class _ForkStatements:
    """A fork's statements (`forking.ForkStatements`) on one connection."""

    connection: asyncpg.Connection
    storage: PostgresSessionDeletion

    async def lock_source(self, key: SessionKey, now: float) -> forking.LockedSource | None:
        statement = sql.FORK_SOURCE
        found = await self.connection.fetchrow(
            statement.text, *statement.arguments(session_values(key, now=now))
        )
        if found is None:
            return None
        return forking.LockedSource(
            found["state"], found["revision"], found["initial_state"], found["labels"]
        )

    async def event_exists(self, key: SessionKey, seq: int) -> bool:
        statement = sql.EVENT_AT_SEQ
        values = session_values(key, seq=seq)
        return bool(await self.connection.fetchval(statement.text, *statement.arguments(values)))

    async def insert_fork(
        self,
        key: SessionKey,
        source: forking.LockedSource,
        state: StateDict,
        revision: int,
        now: float,
        expiry: Expiry,
        labels: Labels,
    ) -> bool:
        statement = sql.INSERT_FORK
        values = session_values(
            key,
            state=state,
            initial_state=source.initial_state,
            state_bytes=session_state_bytes(state),
            revision=revision,
            now=now,
            expire_time=expiry.time_after(now),
            ttl_seconds=expiry.ttl_seconds,
            labels=labels or None,
        )
        created = await self.connection.fetchval(statement.text, *statement.arguments(values))
        return created is not None

    async def delete_if_expired(self, key: SessionKey, now: float, with_memories: bool) -> bool:
        return await self.storage._delete_if_expired(self.connection, key, now, with_memories)

    async def copy_events(
        self, source: SessionKey, session_id: str, after_seq: int, up_to_seq: int
    ) -> None:
        statement = sql.COPY_EVENTS
        values = session_values(
            source, after_seq=after_seq, up_to_seq=up_to_seq, fork_id=session_id
        )
        await self.connection.execute(statement.text, *statement.arguments(values))
