"""Bulk seeding with SQL, for the read and list workloads: measuring reads
should not wait for 100,000 appends through each target first."""

import asyncpg

from bench.events import TEXT

SEED_BASE_TIME = 1_700_000_000


async def seed_events_session_state(
    connection: asyncpg.Connection, app: str, user: str, session_id: str, count: int
) -> None:
    await connection.execute(
        """
        INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, author,
                            timestamp, data)
        SELECT $1, $2, $3, g, 'seed-' || g, 'inv-seed', 'agent', $5::float8 + g,
               jsonb_build_object('id', 'seed-' || g, 'invocationId', 'inv-seed',
                                  'author', 'agent', 'timestamp', $5::float8 + g,
                                  'content', jsonb_build_object('role', 'model', 'parts',
                                      jsonb_build_array(jsonb_build_object('text', $4::text))),
                                  'actions', '{}'::jsonb)::text
          FROM generate_series(1, $6::int) AS g
        """,
        app,
        user,
        session_id,
        TEXT,
        SEED_BASE_TIME,
        count,
    )
    await connection.execute(
        "UPDATE sessions SET revision = $4::int, update_time = $5::float8 + $4::int"
        " WHERE app_name = $1 AND user_id = $2 AND id = $3",
        app,
        user,
        session_id,
        count,
        SEED_BASE_TIME,
    )


async def seed_events_adk(
    connection: asyncpg.Connection, app: str, user: str, session_id: str, count: int
) -> None:
    await connection.execute(
        """
        INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp,
                            event_data)
        SELECT 'seed-' || g, $1, $2, $3, 'inv-seed', to_timestamp($5::float8 + g)::timestamp,
               jsonb_build_object('id', 'seed-' || g, 'invocationId', 'inv-seed',
                                  'author', 'agent', 'timestamp', $5::float8 + g,
                                  'content', jsonb_build_object('role', 'model', 'parts',
                                      jsonb_build_array(jsonb_build_object('text', $4::text))),
                                  'actions', '{}'::jsonb)
          FROM generate_series(1, $6::int) AS g
        """,
        app,
        user,
        session_id,
        TEXT,
        SEED_BASE_TIME,
        count,
    )


async def seed_sessions_session_state(
    connection: asyncpg.Connection, app: str, users: int, count: int
) -> None:
    await connection.execute(
        """
        INSERT INTO sessions (app_name, user_id, id, state, revision, create_time, update_time)
        SELECT $1, 'u' || (g % $2::int), 's' || g, '{"stage": "seeded"}'::jsonb, 0,
               $4::float8 + g, $4::float8 + g
          FROM generate_series(1, $3::int) AS g
        """,
        app,
        users,
        count,
        SEED_BASE_TIME,
    )
    await connection.execute("ANALYZE sessions")


async def seed_sessions_adk(
    connection: asyncpg.Connection, app: str, users: int, count: int
) -> None:
    await connection.execute(
        """
        INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)
        SELECT $1, 'u' || (g % $2::int), 's' || g, '{"stage": "seeded"}'::jsonb,
               to_timestamp($4::float8 + g)::timestamp, to_timestamp($4::float8 + g)::timestamp
          FROM generate_series(1, $3::int) AS g
        """,
        app,
        users,
        count,
        SEED_BASE_TIME,
    )
    await connection.execute("ANALYZE sessions")
