"""Session tombstones on PostgreSQL (app.sessions.tables.session_tombstones).

A user's tombstones are numbered max+1 under a transaction-level advisory
lock per user, taken after the session rows' locks (so no lock order can
deadlock with an append, a delete or the sweeper), keys sorted: the numbers
of one user then grow in commit order, and a stream that has read up to a
number can never see a smaller one commit later.
"""

from collections.abc import Sequence

import asyncpg

from ..db.postgresql_statement import Statement
from ..sessions.domain import SessionKey, Tombstone, TombstoneKind

LOCK_USERS = Statement.of("""
SELECT pg_advisory_xact_lock(k) FROM (
  SELECT DISTINCT hashtextextended('session-state tombstones' || chr(31) || a || chr(31) || u, 0)
         AS k
    FROM unnest(:app_names::text[], :user_ids::text[]) AS s(a, u)
   ORDER BY k
) AS keys
""")
INSERT = Statement.of("""
INSERT INTO session_tombstones (app_name, user_id, seq, session_id, kind, time)
SELECT s.a, s.u,
       coalesce((SELECT max(t.seq) FROM session_tombstones AS t
                  WHERE t.app_name = s.a AND t.user_id = s.u), 0)
       + row_number() OVER (PARTITION BY s.a, s.u ORDER BY s.n),
       s.id, :kind::text, :now::float8
  FROM unnest(:app_names::text[], :user_ids::text[], :session_ids::text[])
       WITH ORDINALITY AS s(a, u, id, n)
""")
USERS_WITH_TOMBSTONES = Statement.of("""
SELECT DISTINCT user_id FROM session_tombstones
 WHERE app_name = :app_name AND (:user_id::text IS NULL OR user_id = :user_id::text)
""")
# An erasure: each user's tombstones become one, of the erasure (the ids
# of erased sessions are not kept).
COLLAPSE_INSERT = Statement.of("""
INSERT INTO session_tombstones (app_name, user_id, seq, session_id, kind, time)
SELECT app_name, user_id, max(seq) + 1, NULL, 'erased', :now::float8
  FROM session_tombstones
 WHERE app_name = :app_name AND (:user_id::text IS NULL OR user_id = :user_id::text)
 GROUP BY app_name, user_id
ON CONFLICT DO NOTHING
""")
COLLAPSE_DELETE = Statement.of("""
DELETE FROM session_tombstones AS t
 USING (SELECT user_id, max(seq) AS newest FROM session_tombstones
         WHERE app_name = :app_name AND (:user_id::text IS NULL OR user_id = :user_id::text)
         GROUP BY user_id) AS n
 WHERE t.app_name = :app_name AND t.user_id = n.user_id AND t.seq < n.newest
""")
READ = Statement.of("""
SELECT seq, session_id, kind, time FROM session_tombstones
 WHERE app_name = :app_name AND user_id = :user_id AND seq > :after_seq
 ORDER BY seq
 LIMIT :limit
""")
NEWEST = Statement.of("""
SELECT coalesce(max(seq), 0) FROM session_tombstones
 WHERE app_name = :app_name AND user_id = :user_id
""")
# Rows older than the window, each user's newest kept (it keeps the count
# going, and tells a resuming stream whether it missed rows).
PRUNE = Statement.of("""
DELETE FROM session_tombstones AS t
 WHERE t.time < :before::float8
   AND t.seq < (SELECT max(m.seq) FROM session_tombstones AS m
                 WHERE m.app_name = t.app_name AND m.user_id = t.user_id)
""")


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
    users = {
        "app_names": [key.app_name for key in keys],
        "user_ids": [key.user_id for key in keys],
    }
    await connection.execute(LOCK_USERS.text, *LOCK_USERS.arguments(users))
    values = {**users, "session_ids": [key.session_id for key in keys], "kind": kind, "now": now}
    await connection.execute(INSERT.text, *INSERT.arguments(values))


async def collapse(
    connection: asyncpg.Connection, app_name: str, user_id: str | None, now: float
) -> None:
    owner = {"app_name": app_name, "user_id": user_id}
    rows = await connection.fetch(
        USERS_WITH_TOMBSTONES.text, *USERS_WITH_TOMBSTONES.arguments(owner)
    )
    if not rows:
        return
    users = {"app_names": [app_name] * len(rows), "user_ids": [row["user_id"] for row in rows]}
    await connection.execute(LOCK_USERS.text, *LOCK_USERS.arguments(users))
    await connection.execute(
        COLLAPSE_INSERT.text, *COLLAPSE_INSERT.arguments({**owner, "now": now})
    )
    await connection.execute(COLLAPSE_DELETE.text, *COLLAPSE_DELETE.arguments(owner))


async def read(
    connection: asyncpg.Connection, app_name: str, user_id: str, after_seq: int, limit: int
) -> tuple[list[Tombstone], int]:
    owner = {"app_name": app_name, "user_id": user_id}
    page = {**owner, "after_seq": after_seq, "limit": limit}
    rows = await connection.fetch(READ.text, *READ.arguments(page))
    newest = int(await connection.fetchval(NEWEST.text, *NEWEST.arguments(owner)))
    tombstones = [
        Tombstone(int(row["seq"]), row["session_id"], row["kind"], float(row["time"]))
        for row in rows
    ]
    return tombstones, newest
