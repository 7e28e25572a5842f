"""Event removals: one row per removal of a session's newest events, with
the revision it made and the removed events' ids (a JSON array), so that a
live stream resuming after an earlier revision can tell its reader which
events went (app.streams.live). Rows go with their session.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "event_removals",
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("event_ids", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint(
            "app_name", "user_id", "session_id", "revision", name="pk_event_removals"
        ),
        sa.ForeignKeyConstraint(
            ["app_name", "user_id", "session_id"],
            ["sessions.app_name", "sessions.user_id", "sessions.id"],
            name="fk_event_removals_sessions",
            ondelete="CASCADE",
        ),
    )


def downgrade() -> None:
    op.drop_table("event_removals")
