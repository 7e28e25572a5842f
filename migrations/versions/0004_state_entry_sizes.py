"""State sizes kept with the state: each app and user key's, and a bound on
each session's.

Each scope's state is bounded in size (SESSION_STATE_MAX_STATE_BYTES). With
each key's size stored, an append checks only the keys it writes, and sums the
scope only when it grows it; summing every key on every append cost a
PostgreSQL scan of the scope (and of its dead row versions) per append. A
session keeps an upper bound of its state's size, so an append measures the
state only when the bound nears the limit.

A key's size is its bytes, its value's JSON bytes and 4 (quotes, colon,
comma). Existing rows are measured here as the database prints them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("app_states", "user_states")


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    op.add_column(
        "sessions", sa.Column("state_bytes", sa.BigInteger(), nullable=False, server_default="0")
    )
    if postgresql:
        op.execute("UPDATE sessions SET state_bytes = octet_length(state::text)")
    else:
        op.execute("UPDATE sessions SET state_bytes = length(CAST(state AS BLOB))")
    for table in _TABLES:
        op.add_column(table, sa.Column("size", sa.BigInteger(), nullable=False, server_default="0"))
        if postgresql:
            op.execute(
                f"UPDATE {table} SET size = octet_length(key) + octet_length(value::text) + 4"
            )
        else:
            op.execute(
                f"UPDATE {table} SET size = "
                "length(CAST(key AS BLOB)) + length(CAST(value AS BLOB)) + 4"
            )


def downgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("size")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("state_bytes")
