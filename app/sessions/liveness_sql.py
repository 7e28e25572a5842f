"""When a session is live, stated once for every statement of both backends:
from its expiry time on a session is missing for every reader and writer
(`store.py`), whether or not the sweeper has deleted it yet; a session with
no expiry time (NULL) never expires. Rows of other tables with an
`expire_time` of the same meaning (LangGraph threads, store items) follow it
too.

The rule is a SQLAlchemy Core expression (`expired`, and `live` from it),
which Core statements use as it is; plain SQL (asyncpg's statements,
SQLite's append, the listings) embeds its text (`live_sql`), rendered from
the same expression when a statement is built, so the two cannot drift."""

from typing import Any

from sqlalchemy import ColumnElement, literal_column, or_


def expired(
    expire_time: ColumnElement[Any], now: float | ColumnElement[Any]
) -> ColumnElement[bool]:
    """A row expired at `now`, written as the partial indexes on
    `expire_time IS NOT NULL` serve (the sweeper's): NULL never is."""
    return expire_time <= now


def live(expire_time: ColumnElement[Any], now: float | ColumnElement[Any]) -> ColumnElement[bool]:
    """A row not expired at `now`."""
    return or_(expire_time.is_(None), ~expired(expire_time, now))


def live_sql(now: str, table: str = "") -> str:
    """`live` as SQL text in parentheses: `now` is the statement's parameter
    or expression (`:now`, `$4::float8`), `table` the alias that qualifies
    the column (`s.`)."""
    return f"({live(literal_column(f'{table}expire_time'), literal_column(now))})"
