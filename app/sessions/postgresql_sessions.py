"""The PostgreSQL storage of sessions (`SessionStore`): sessions created,
read, listed and deleted, their events, state, expiry and labels; appends
(`PostgresAppends`), removals of events (`PostgresEventRemovals`) and forks
(`PostgresForks`) are inherited from classes of their own."""

from collections.abc import Sequence

import asyncpg

from . import postgresql_statements as sql
from .directory_listing import directory_parameters
from .domain import (
    ALL_SESSIONS,
    Expiry,
    ListedApp,
    ListedUser,
    SessionKey,
    SessionListing,
    SessionPosition,
    SessionQuery,
    SessionRow,
    SessionSnapshot,
    SharedScopes,
    SortOrder,
    StoredEvent,
    TombstoneKind,
)
from .event_windows import events_within
from .labels import Labels
from .postgresql_appends import PostgresAppends, as_is, shared_change
from .postgresql_event_removals import PostgresEventRemovals
from .postgresql_forks import PostgresForks
from .postgresql_session_rows import read_session_row, session_row
from .postgresql_statements import session_values
from .session_listing import label_guard_parameters, listing_key, listing_parameters, parse_horizon
from .state import ScopedDelta, StateDict
from .state_sizes import session_state_bytes, state_past_limit, state_too_large


class PostgresSessions(PostgresAppends, PostgresEventRemovals, PostgresForks):
    async def create_session(
        self,
        key: SessionKey,
        delta: ScopedDelta,
        now: float,
        expiry: Expiry,
        max_state_bytes: int,
        *,
        forget_expired_memories: bool,
        labels: Labels | None = None,
    ) -> SharedScopes | None:
        size = session_state_bytes(delta.session)
        if size > max_state_bytes:
            raise state_too_large("session", size, max_state_bytes)
        insert = sql.INSERT_SESSION
        arguments = insert.arguments(
            session_values(
                key,
                state=delta.session,
                state_bytes=size,
                now=now,
                expire_time=expiry.time_after(now),
                ttl_seconds=expiry.ttl_seconds,
                labels=labels or None,
            )
        )
        async with self._transaction() as connection:
            created = await connection.fetchval(insert.text, *arguments)
            if created is None:
                if not await self._delete_if_expired(connection, key, now, forget_expired_memories):
                    return None
                await connection.fetchval(insert.text, *arguments)
            if delta.app or delta.user:
                shared = shared_change(key, delta, max_state_bytes, as_is)
                sizes = await connection.fetchrow(
                    sql.WRITE_SHARED_STATE.text, *sql.WRITE_SHARED_STATE.arguments(shared)
                )
                too_large = state_past_limit(
                    max_state_bytes, app=sizes["app_bytes"], user=sizes["user_bytes"]
                )
                if too_large is not None:
                    raise too_large
            return SharedScopes(
                await self._app_state(connection, key.app_name),
                await self._user_state(connection, key.app_name, key.user_id),
            )

    async def read_snapshot(
        self,
        key: SessionKey,
        limit: int | None,
        after_timestamp: float | None,
        max_events_bytes: int,
        now: float,
    ) -> SessionSnapshot | None:
        statement = sql.SNAPSHOT
        values = session_values(
            key,
            after_timestamp=after_timestamp,
            limit=limit,
            max_events_bytes=max_events_bytes,
            now=now,
        )
        async with self._connection() as connection:
            row = await connection.fetchrow(statement.text, *statement.arguments(values))
        if row is None:
            return None
        events_bytes, events_json = row["events_bytes"], row["events"]
        if events_bytes <= max_events_bytes:
            events_json = events_json or ""
        return SessionSnapshot(
            session_row(key, row),
            row["app_state"] or {},
            row["user_state"] or {},
            events_json,
            int(events_bytes),
        )

    async def page_sessions(
        self,
        app_name: str,
        user_id: str | None,
        after: SessionPosition | None,
        limit: int,
        max_bytes: int,
        now: float,
        query: SessionQuery = ALL_SESSIONS,
    ) -> SessionListing:
        statement = sql.LISTINGS[listing_key(user_id, after, query)]
        values = listing_parameters(app_name, user_id, after, query, limit, max_bytes, now)
        if "label_guard" in statement.names:
            values.update(label_guard_parameters())
        async with self._connection() as connection:
            rows = await connection.fetch(statement.text, *statement.arguments(values))
            page = [
                SessionRow(
                    app_name,
                    row["user_id"],
                    row["id"],
                    row["state"],
                    row["revision"],
                    row["update_time"],
                    row["expire_time"],
                    row["labels"] or {},
                )
                for row in rows
            ]
            fetched = rows[-1]["fetched"] if rows else 0
            horizon = after.horizon if after is not None else None
            if after is None and rows:
                horizon = parse_horizon(rows[-1]["horizon"])
            if len(page) > limit:
                page, more = page[:limit], True
            else:
                # Fewer rows than candidates: the budget cut the page.
                more = fetched > len(page)
            if not query.include_state:
                return SessionListing(page, {}, {}, more, horizon)
            users = sorted({row.user_id for row in page})
            user_states: dict[str, StateDict] = {user: {} for user in users}
            states = sql.READ_USER_STATES
            for row in await connection.fetch(
                states.text, *states.arguments({"app_name": app_name, "user_ids": users})
            ):
                user_states[row["user_id"]][row["key"]] = row["value"]
            app_state = await self._app_state(connection, app_name)
        return SessionListing(page, app_state, user_states, more, horizon)

    async def page_apps(
        self, allowed: frozenset[str] | None, after: str | None, limit: int, now: float
    ) -> tuple[list[ListedApp], bool]:
        statement = sql.APPS[(allowed is not None, after is not None)]
        values = directory_parameters(now, limit, after_app=after)
        if allowed is not None:
            values["allowed"] = sorted(allowed)
        async with self._connection() as connection:
            rows = await connection.fetch(statement.text, *statement.arguments(values))
        apps = [ListedApp(row["app_name"], int(row["sessions"])) for row in rows]
        return apps[:limit], len(apps) > limit

    async def page_users(
        self, app_name: str, after: str | None, limit: int, now: float
    ) -> tuple[list[ListedUser], bool]:
        statement = sql.USERS[after is not None]
        values = directory_parameters(now, limit, app_name=app_name, after_user=after)
        async with self._connection() as connection:
            rows = await connection.fetch(statement.text, *statement.arguments(values))
        users = [
            ListedUser(row["user_id"], int(row["sessions"]), float(row["last_update_time"]))
            for row in rows
        ]
        return users[:limit], len(users) > limit

    async def delete_session(self, key: SessionKey, *, with_memories: bool, now: float) -> bool:
        lock = sql.LOCK_SESSION
        async with self._transaction() as connection:
            alive = await connection.fetchval(
                lock.text, *lock.arguments(session_values(key, now=now))
            )
            if alive is None:
                return False
            kind: TombstoneKind = "deleted" if alive else "expired"
            await self._delete_locked_session(connection, key, kind, now, with_memories)
        return bool(alive)

    async def set_expiry(
        self, key: SessionKey, expiry: Expiry, expected_revision: int | None, now: float
    ) -> int | None:
        statement = sql.SET_EXPIRY
        values = session_values(
            key,
            now=now,
            ttl_seconds=expiry.ttl_seconds,
            expire_time=expiry.time_after(now),
            expected=expected_revision,
        )
        async with self._connection() as connection:
            revision = await connection.fetchval(statement.text, *statement.arguments(values))
        return None if revision is None else int(revision)

    async def set_labels(
        self,
        key: SessionKey,
        labels: Labels,
        expiry: Expiry | None,
        expected_revision: int | None,
        now: float,
    ) -> int | None:
        statement = sql.SET_LABELS
        values = session_values(
            key,
            now=now,
            labels=labels or None,
            replace_expiry=expiry is not None,
            ttl_seconds=None if expiry is None else expiry.ttl_seconds,
            expire_time=None if expiry is None else expiry.time_after(now),
            expected=expected_revision,
        )
        async with self._connection() as connection:
            revision = await connection.fetchval(statement.text, *statement.arguments(values))
        return None if revision is None else int(revision)

    async def find_event(self, key: SessionKey, event_id: str) -> StoredEvent | None:
        statement = sql.FIND_EVENT
        values = session_values(key, event_id=event_id)
        async with self._connection() as connection:
            row = await connection.fetchrow(statement.text, *statement.arguments(values))
        return None if row is None else StoredEvent(row["seq"], row["data"])

    async def find_events(
        self, key: SessionKey, event_ids: Sequence[str]
    ) -> dict[str, StoredEvent]:
        statement = sql.FIND_EVENTS
        values = session_values(key, event_ids=list(event_ids))
        async with self._connection() as connection:
            rows = await connection.fetch(statement.text, *statement.arguments(values))
        return {row["id"]: StoredEvent(row["seq"], row["data"]) for row in rows}

    async def read_session(self, key: SessionKey, now: float) -> SessionRow | None:
        async with self._connection() as connection:
            return await read_session_row(connection, key, sql.READ_SESSION, now)

    async def page_events(
        self,
        key: SessionKey,
        order: SortOrder,
        after_seq: int | None,
        after_timestamp: float | None,
        limit: int,
        max_bytes: int,
        now: float,
    ) -> tuple[list[StoredEvent], bool, int] | None:
        sized, by_seq = sql.EVENT_SIZES[order], sql.EVENTS_BY_SEQ
        page = session_values(
            key, after_timestamp=after_timestamp, after_seq=after_seq, limit=limit + 1
        )
        async with self._connection() as connection:
            found = await read_session_row(connection, key, sql.READ_SESSION, now)
            if found is None:
                return None
            sizes = await connection.fetch(sized.text, *sized.arguments(page))
            chosen, more = events_within(
                [(row["seq"], row["size"]) for row in sizes], limit, max_bytes
            )
            if not chosen:
                return [], more, found.revision
            rows = await connection.fetch(
                by_seq.text, *by_seq.arguments(session_values(key, seqs=chosen))
            )
        data = {row["seq"]: row["data"] for row in rows}
        events = [StoredEvent(seq, data[seq]) for seq in chosen if seq in data]
        return events, more, found.revision

    async def read_app_state(self, app_name: str) -> StateDict:
        async with self._connection() as connection:
            return await self._app_state(connection, app_name)

    async def read_user_state(self, app_name: str, user_id: str) -> StateDict:
        async with self._connection() as connection:
            return await self._user_state(connection, app_name, user_id)

    @staticmethod
    async def _app_state(connection: asyncpg.Connection, app_name: str) -> StateDict:
        statement = sql.READ_APP_STATE
        rows = await connection.fetch(statement.text, *statement.arguments({"app_name": app_name}))
        return {row["key"]: row["value"] for row in rows}

    @staticmethod
    async def _user_state(connection: asyncpg.Connection, app_name: str, user_id: str) -> StateDict:
        statement = sql.READ_USER_STATE
        values = {"app_name": app_name, "user_id": user_id}
        rows = await connection.fetch(statement.text, *statement.arguments(values))
        return {row["key"]: row["value"] for row in rows}
