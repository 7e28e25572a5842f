"""Session tombstones on PostgreSQL (app.sessions.tables.session_tombstones).

A user's tombstones are numbered max+1 under a transaction-level advisory
lock per user, taken after the session rows' locks (so no lock order can
deadlock with an append, a delete or the sweeper), keys sorted: the numbers
of one user then grow in commit order, and a stream that has read up to a
number can never see a smaller one commit later.
"""

from collections.abc import Sequence

import asyncpg

from ..sessions.domain import SessionKey, Tombstone, TombstoneKind

LOCK_USERS = """
SELECT pg_advisory_xact_lock(k) FROM (
  SELECT DISTINCT hashtextextended('session-state tombstones' || chr(31) || a || chr(31) || u, 0)
         AS k
    FROM unnest($1::text[], $2::text[]) AS s(a, u)
   ORDER BY k
) AS keys
"""
INSERT = """
INSERT INTO session_tombstones (app_name, user_id, seq, session_id, kind, time)
SELECT s.a, s.u,
       coalesce((SELECT max(t.seq) FROM session_tombstones AS t
                  WHERE t.app_name = s.a AND t.user_id = s.u), 0)
       + row_number() OVER (PARTITION BY s.a, s.u ORDER BY s.n),
       s.id, $4::text, $5::float8
  FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS s(a, u, id, n)
"""
USERS_WITH_TOMBSTONES = """
SELECT DISTINCT user_id FROM session_tombstones
 WHERE app_name = $1 AND ($2::text IS NULL OR user_id = $2::text)
"""
# An erasure: each user's tombstones become one, of the erasure (the ids
# of erased sessions are not kept).
COLLAPSE_INSERT = """
INSERT INTO session_tombstones (app_name, user_id, seq, session_id, kind, time)
SELECT app_name, user_id, max(seq) + 1, NULL, 'erased', $3::float8
  FROM session_tombstones
 WHERE app_name = $1 AND ($2::text IS NULL OR user_id = $2::text)
 GROUP BY app_name, user_id
ON CONFLICT DO NOTHING
"""
COLLAPSE_DELETE = """
DELETE FROM session_tombstones AS t
 USING (SELECT user_id, max(seq) AS newest FROM session_tombstones
         WHERE app_name = $1 AND ($2::text IS NULL OR user_id = $2::text)
         GROUP BY user_id) AS n
 WHERE t.app_name = $1 AND t.user_id = n.user_id AND t.seq < n.newest
"""
READ = """
SELECT seq, session_id, kind, time FROM session_tombstones
 WHERE app_name = $1 AND user_id = $2 AND seq > $3
 ORDER BY seq
 LIMIT $4
"""
NEWEST = """
SELECT coalesce(max(seq), 0) FROM session_tombstones WHERE app_name = $1 AND user_id = $2
"""
# Rows older than the window, each user's newest kept (it keeps the count
# going, and tells a resuming stream whether it missed rows).
PRUNE = """
DELETE FROM session_tombstones AS t
 WHERE t.time < $1::float8
   AND t.seq < (SELECT max(m.seq) FROM session_tombstones AS m
                 WHERE m.app_name = t.app_name AND m.user_id = t.user_id)
"""


async def write(
    connection: asyncpg.Connection,
    keys: Sequence[SessionKey],
    kind: TombstoneKind,
    now: float,
) -> None:
    """Tombstones of the sessions in the caller's transaction, after it
    locked their rows."""
    if not keys:
        return
    apps = [key.app_name for key in keys]
    users = [key.user_id for key in keys]
    ids = [key.session_id for key in keys]
    await connection.execute(LOCK_USERS, apps, users)
    await connection.execute(INSERT, apps, users, ids, kind, now)


async def collapse(
    connection: asyncpg.Connection, app_name: str, user_id: str | None, now: float
) -> None:
    users = [row[0] for row in await connection.fetch(USERS_WITH_TOMBSTONES, app_name, user_id)]
    if not users:
        return
    await connection.execute(LOCK_USERS, [app_name] * len(users), users)
    await connection.execute(COLLAPSE_INSERT, app_name, user_id, now)
    await connection.execute(COLLAPSE_DELETE, app_name, user_id)


async def read(
    connection: asyncpg.Connection, app_name: str, user_id: str, after_seq: int, limit: int
) -> tuple[list[Tombstone], int]:
    rows = await connection.fetch(READ, app_name, user_id, after_seq, limit)
    newest = int(await connection.fetchval(NEWEST, app_name, user_id))
    return [Tombstone(int(row[0]), row[1], row[2], float(row[3])) for row in rows], newest
