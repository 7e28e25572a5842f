"""The three things measured, behind one small interface.

- AdkTarget: google-adk's DatabaseSessionService, in-process, as ADK users run it.
- HttpTarget: `session-state serve` on PostgreSQL, over HTTP with our async client.
- FloorTarget: the minimal SQL for each operation, sent with asyncpg directly.
"""

import json
from typing import Any, Protocol

import asyncpg


class Target(Protocol):
    name: str

    async def create_session(
        self, app: str, user: str, session_id: str, state: dict[str, Any]
    ) -> Any: ...

    async def append(self, handle: Any, event: dict[str, Any]) -> Any: ...

    async def get_recent(self, app: str, user: str, session_id: str, count: int | None) -> int: ...

    async def list_user_sessions(self, app: str, user: str) -> int: ...

    async def user_state(self, app: str, user: str) -> dict[str, Any]: ...

    async def app_state(self, app: str, any_session: tuple[str, str]) -> dict[str, Any]: ...

    async def close(self) -> None: ...


class AdkTarget:
    name = "adk"

    def __init__(self, database_url: str) -> None:
        from google.adk.sessions import DatabaseSessionService

        self.service = DatabaseSessionService(db_url=database_url)

    async def create_session(
        self, app: str, user: str, session_id: str, state: dict[str, Any]
    ) -> Any:
        return await self.service.create_session(
            app_name=app, user_id=user, session_id=session_id, state=state
        )

    async def append(self, handle: Any, event: dict[str, Any]) -> Any:
        from google.adk.events import Event

        return await self.service.append_event(handle, Event.model_validate(event))

    async def get_recent(self, app: str, user: str, session_id: str, count: int | None) -> int:
        from google.adk.sessions.base_session_service import GetSessionConfig

        config = None if count is None else GetSessionConfig(num_recent_events=count)
        session = await self.service.get_session(
            app_name=app, user_id=user, session_id=session_id, config=config
        )
        assert session is not None
        return len(session.events)

    async def list_user_sessions(self, app: str, user: str) -> int:
        response = await self.service.list_sessions(app_name=app, user_id=user)
        return len(response.sessions)

    async def user_state(self, app: str, user: str) -> dict[str, Any]:
        return await self.service.get_user_state(app_name=app, user_id=user)

    async def app_state(self, app: str, any_session: tuple[str, str]) -> dict[str, Any]:
        # ADK has no app-state read: take the app: keys of a session's merged view.
        user, session_id = any_session
        session = await self.service.get_session(app_name=app, user_id=user, session_id=session_id)
        assert session is not None
        return {
            key.removeprefix("app:"): value
            for key, value in session.state.items()
            if key.startswith("app:")
        }

    async def close(self) -> None:
        await self.service.close()


class HttpTarget:
    """Our async client against a started server: one client shared by every
    concurrent writer, as an agent process would use it (its connections are
    a plain list, so sharing costs nothing: measured as fast as one client per
    writer)."""

    name = "session-state"

    def __init__(self, base_url: str) -> None:
        from session_state_client import AsyncSessionStateClient

        self.client = AsyncSessionStateClient(base_url=base_url, max_retries=0, timeout=120)

    async def create_session(
        self, app: str, user: str, session_id: str, state: dict[str, Any]
    ) -> Any:
        session = await self.client.create_session(
            app_name=app, user_id=user, session_id=session_id, state=state
        )
        return [app, user, session_id, session.revision]

    async def append(self, handle: Any, event: dict[str, Any]) -> Any:
        app, user, session_id, revision = handle
        # With If-Match, as the ADK adapter sends it: the same work ADK's
        # stale-session check does.
        appended = await self.client.append_event(
            app_name=app, user_id=user, session_id=session_id, event=event, if_match=revision
        )
        handle[3] = appended.revision
        return appended

    async def get_recent(self, app: str, user: str, session_id: str, count: int | None) -> int:
        session = await self.client.get_session(
            app_name=app, user_id=user, session_id=session_id, num_recent_events=count
        )
        return len(session.events)

    async def list_user_sessions(self, app: str, user: str) -> int:
        total = 0
        async for _ in self.client.iter_sessions(app_name=app, user_id=user, page_size=1000):
            total += 1
        return total

    async def list_page(self, app: str, page_size: int, page_token: str | None) -> int:
        page = await self.client.list_sessions(
            app_name=app, page_size=page_size, page_token=page_token
        )
        return len(page.sessions)

    async def user_state(self, app: str, user: str) -> dict[str, Any]:
        return await self.client.get_user_state(app_name=app, user_id=user)

    async def app_state(self, app: str, any_session: tuple[str, str]) -> dict[str, Any]:
        return await self.client.get_app_state(app_name=app)

    async def close(self) -> None:
        await self.client.close()


# The minimal append: one statement, one round trip, merges done by PostgreSQL
# on the same tables session-state uses (state one row per key).
FLOOR_APPEND = """
WITH bumped AS (
    UPDATE sessions SET state = state || $4::jsonb, revision = revision + 1, update_time = $5
     WHERE app_name = $1 AND user_id = $2 AND id = $3
 RETURNING revision
), stored AS (
    INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, author,
                        timestamp, data)
    SELECT $1, $2, $3, revision, $6, 'inv-bench', $7, $5, $8 FROM bumped
 RETURNING seq
), app_written AS (
    INSERT INTO app_states (app_name, key, value)
    SELECT $1, d.key, d.value FROM bumped, jsonb_each($9::jsonb) AS d ORDER BY d.key
    ON CONFLICT (app_name, key) DO UPDATE SET value = EXCLUDED.value
), user_written AS (
    INSERT INTO user_states (app_name, user_id, key, value)
    SELECT $1, $2, d.key, d.value FROM bumped, jsonb_each($10::jsonb) AS d ORDER BY d.key
    ON CONFLICT (app_name, user_id, key) DO UPDATE SET value = EXCLUDED.value
)
SELECT seq FROM stored
"""

FLOOR_RECENT = """
SELECT data FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3
ORDER BY seq DESC LIMIT $4
"""


def _split(delta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    session: dict[str, Any] = {}
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    for key, value in delta.items():
        if key.startswith("app:"):
            app[key[4:]] = value
        elif key.startswith("user:"):
            user[key[5:]] = value
        elif not key.startswith("temp:"):
            session[key] = value
    return session, app, user


class FloorTarget:
    name = "asyncpg floor"

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    @classmethod
    async def connect(cls, dsn: str) -> "FloorTarget":
        return cls(await asyncpg.create_pool(dsn, min_size=4, max_size=20))

    async def create_session(
        self, app: str, user: str, session_id: str, state: dict[str, Any]
    ) -> Any:
        session, app_delta, user_delta = _split(state)
        async with self.pool.acquire() as connection, connection.transaction():
            await connection.execute(
                "INSERT INTO sessions (app_name, user_id, id, state, revision, create_time,"
                " update_time) VALUES ($1, $2, $3, $4::jsonb, 0, extract(epoch from now()),"
                " extract(epoch from now()))",
                app,
                user,
                session_id,
                json.dumps(session),
            )
            for key, value in sorted(app_delta.items()):
                await connection.execute(
                    "INSERT INTO app_states VALUES ($1, $2, $3::jsonb) ON CONFLICT (app_name, key)"
                    " DO UPDATE SET value = EXCLUDED.value",
                    app,
                    key,
                    json.dumps(value),
                )
            for key, value in sorted(user_delta.items()):
                await connection.execute(
                    "INSERT INTO user_states VALUES ($1, $2, $3, $4::jsonb)"
                    " ON CONFLICT (app_name, user_id, key) DO UPDATE SET value = EXCLUDED.value",
                    app,
                    user,
                    key,
                    json.dumps(value),
                )
        return (app, user, session_id)

    async def append(self, handle: Any, event: dict[str, Any]) -> Any:
        app, user, session_id = handle
        delta = event["actions"]["stateDelta"]
        session, app_delta, user_delta = _split(delta)
        kept = {key: value for key, value in delta.items() if not key.startswith("temp:")}
        stored = {**event, "actions": {"stateDelta": kept}}
        return await self.pool.fetchval(
            FLOOR_APPEND,
            app,
            user,
            session_id,
            json.dumps(session),
            event["timestamp"],
            event["id"],
            event["author"],
            json.dumps(stored),
            json.dumps(app_delta),
            json.dumps(user_delta),
        )

    async def get_recent(self, app: str, user: str, session_id: str, count: int | None) -> int:
        async with self.pool.acquire() as connection:
            await connection.fetchrow(
                "SELECT state, revision, update_time FROM sessions"
                " WHERE app_name = $1 AND user_id = $2 AND id = $3",
                app,
                user,
                session_id,
            )
            rows = await connection.fetch(FLOOR_RECENT, app, user, session_id, count)
            await connection.fetch("SELECT key, value FROM app_states WHERE app_name = $1", app)
            await connection.fetch(
                "SELECT key, value FROM user_states WHERE app_name = $1 AND user_id = $2",
                app,
                user,
            )
        return len(rows)

    async def list_user_sessions(self, app: str, user: str) -> int:
        rows = await self.pool.fetch(
            "SELECT id, state, update_time FROM sessions WHERE app_name = $1 AND user_id = $2"
            " ORDER BY update_time, id",
            app,
            user,
        )
        return len(rows)

    async def user_state(self, app: str, user: str) -> dict[str, Any]:
        rows = await self.pool.fetch(
            "SELECT key, value FROM user_states WHERE app_name = $1 AND user_id = $2", app, user
        )
        return {row["key"]: json.loads(row["value"]) for row in rows}

    async def app_state(self, app: str, any_session: tuple[str, str]) -> dict[str, Any]:
        rows = await self.pool.fetch("SELECT key, value FROM app_states WHERE app_name = $1", app)
        return {row["key"]: json.loads(row["value"]) for row in rows}

    async def close(self) -> None:
        await self.pool.close()
