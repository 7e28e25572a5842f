"""The PostgreSQL storage of a fork (`forking.fork_session`'s statements, in
one transaction) and of the reads a fork is derived from."""

from dataclasses import dataclass

import asyncpg

from . import forking
from . import postgresql_statements as sql
from .domain import Expiry, ForkSource, SessionKey, StoredEvent
from .labels import Labels
from .postgresql_session_deletion import PostgresSessionDeletion
from .state import StateDict
from .state_sizes import session_state_bytes
from .store import ForkOutcome


class PostgresForks(PostgresSessionDeletion):
    async def read_initial_state(self, key: SessionKey, now: float) -> StateDict | None:
        async with self._connection() as connection:
            row = await connection.fetchrow(
                sql.INITIAL_STATE, key.app_name, key.user_id, key.session_id, now
            )
        if row is None or not row[0]:
            return None
        state: StateDict = row[1]
        return state

    async def read_events(
        self, key: SessionKey, after_seq: int, up_to_seq: int, limit: int
    ) -> list[StoredEvent]:
        async with self._connection() as connection:
            rows = await connection.fetch(
                sql.EVENTS_BETWEEN,
                key.app_name,
                key.user_id,
                key.session_id,
                after_seq,
                up_to_seq,
                limit,
            )
        return [StoredEvent(seq, data) for seq, data in rows]

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
        found = await self.connection.fetchrow(sql.FORK_SOURCE, *_session_of(key), now)
        return None if found is None else forking.LockedSource(*found)

    async def event_exists(self, key: SessionKey, seq: int) -> bool:
        return bool(await self.connection.fetchval(sql.EVENT_AT_SEQ, *_session_of(key), seq))

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
        values = (state, source.initial_state, session_state_bytes(state), revision, now)
        created = await self.connection.fetchval(
            sql.INSERT_FORK,
            *_session_of(key),
            *values,
            expiry.time_after(now),
            expiry.ttl_seconds,
            labels or None,
        )
        return created is not None

    async def delete_if_expired(self, key: SessionKey, now: float, with_memories: bool) -> bool:
        return await self.storage._delete_if_expired(self.connection, key, now, with_memories)

    async def copy_events(
        self, source: SessionKey, session_id: str, after_seq: int, up_to_seq: int
    ) -> None:
        await self.connection.execute(
            sql.COPY_EVENTS, *_session_of(source), after_seq, up_to_seq, session_id
        )


def _session_of(key: SessionKey) -> tuple[str, str, str]:
    return key.app_name, key.user_id, key.session_id
