"""Session tombstones on SQLite (app.sessions.tables.session_tombstones). Writers
hold the database's write lock, so a user's max+1 grows in commit order."""

from collections.abc import Sequence

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from ..sessions.domain import SessionKey, Tombstone, TombstoneKind
from ..sessions.tables import session_tombstones as t


async def _newest(connection: AsyncConnection, app_name: str, user_id: str) -> int:
    found = await connection.execute(
        select(func.coalesce(func.max(t.c.seq), 0)).where(
            t.c.app_name == app_name, t.c.user_id == user_id
        )
    )
    return int(found.scalar_one())


async def write(
    connection: AsyncConnection,
    keys: Sequence[SessionKey],
    kind: TombstoneKind,
    now: float,
) -> None:
    """Tombstones of the sessions in the caller's write."""
    newest: dict[tuple[str, str], int] = {}
    rows = []
    for key in keys:
        user = (key.app_name, key.user_id)
        if user not in newest:
            newest[user] = await _newest(connection, *user)
        newest[user] += 1
        rows.append(
            {
                "app_name": key.app_name,
                "user_id": key.user_id,
                "seq": newest[user],
                "session_id": key.session_id,
                "kind": kind,
                "time": now,
            }
        )
    if rows:
        await connection.execute(t.insert(), rows)


async def collapse(
    connection: AsyncConnection, app_name: str, user_id: str | None, now: float
) -> None:
    """An erasure: each user's tombstones become one, of the erasure."""
    conditions = [t.c.app_name == app_name]
    if user_id is not None:
        conditions.append(t.c.user_id == user_id)
    found = await connection.execute(
        select(t.c.user_id, func.max(t.c.seq)).where(*conditions).group_by(t.c.user_id)
    )
    for user, newest in found.all():
        await connection.execute(delete(t).where(t.c.app_name == app_name, t.c.user_id == user))
        await connection.execute(
            t.insert().values(
                app_name=app_name,
                user_id=user,
                seq=int(newest) + 1,
                session_id=None,
                kind="erased",
                time=now,
            )
        )


async def read(
    connection: AsyncConnection, app_name: str, user_id: str, after_seq: int, limit: int
) -> tuple[list[Tombstone], int]:
    found = await connection.execute(
        select(t.c.seq, t.c.session_id, t.c.kind, t.c.time)
        .where(t.c.app_name == app_name, t.c.user_id == user_id, t.c.seq > after_seq)
        .order_by(t.c.seq)
        .limit(limit)
    )
    rows = [Tombstone(int(row[0]), row[1], row[2], float(row[3])) for row in found]
    return rows, await _newest(connection, app_name, user_id)


async def prune(connection: AsyncConnection, before: float) -> int:
    other = t.alias("newest")
    newest_of_user = (
        select(func.max(other.c.seq))
        .where(other.c.app_name == t.c.app_name, other.c.user_id == t.c.user_id)
        .scalar_subquery()
    )
    result = await connection.execute(delete(t).where(t.c.time < before, t.c.seq < newest_of_user))
    return result.rowcount
