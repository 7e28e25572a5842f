"""Session change numbers: the user stream's cursor (app.streams.live).

- `sessions.change_number`: written by every write of a session row
  (creation, append, removal, label and expiry changes). On PostgreSQL it is
  the writing transaction's id (`pg_current_xact_id()`), read only below the
  oldest transaction still running, so a number read past can never commit
  later; on SQLite (one writer at a time) the user's newest number plus one.
  Rows written before this migration have 0 (older than every cursor).
- `ix_sessions_user_changes`: a user's sessions in change order.
- `session_change_floor`: SQLite only (one row): the highest number of any
  session deleted, so that a number is never given twice.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "sessions",
        sa.Column("change_number", sa.BigInteger(), nullable=False, server_default="0"),
    )
    op.create_index(
        "ix_sessions_user_changes", "sessions", ["app_name", "user_id", "change_number", "id"]
    )
    op.create_table(
        "session_change_floor",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("change_number", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_session_change_floor"),
    )


def downgrade() -> None:
    op.drop_table("session_change_floor")
    op.drop_index("ix_sessions_user_changes", table_name="sessions")
    # In place on SQLite too (3.35+): a batch would copy the table and lose
    # its label triggers (0016).
    op.execute("ALTER TABLE sessions DROP COLUMN change_number")
