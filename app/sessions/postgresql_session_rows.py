"""A session as PostgreSQL rows give it, read by column name."""

import asyncpg

from ..db.postgresql_statement import Statement
from .domain import SessionKey, SessionRow
from .postgresql_statements import session_values


async def read_session_row(
    connection: asyncpg.Connection, key: SessionKey, statement: Statement, now: float
) -> SessionRow | None:
    """The live session (READ_SESSION's columns); None when it is missing."""
    row = await connection.fetchrow(
        statement.text, *statement.arguments(session_values(key, now=now))
    )
    return None if row is None else session_row(key, row)


def session_row(key: SessionKey, row: asyncpg.Record) -> SessionRow:
    """A session from a row of its columns (state, revision, update_time,
    expire_time, labels)."""
    return SessionRow(
        key.app_name,
        key.user_id,
        key.session_id,
        row["state"],
        row["revision"],
        row["update_time"],
        row["expire_time"],
        row["labels"] or {},
    )
