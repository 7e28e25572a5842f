"""Session tombstones: one row per session deleted, expired (swept) or
erased, numbered per user, so that a user's live stream resuming after a
disconnection replays what left while it was away (app.streams.live). Pruned
after a retention window, each user's newest row kept.

Revision ID: 0015
Revises: 0013
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "session_tombstones",
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("time", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "seq", name="pk_session_tombstones"),
    )
    op.create_index("ix_session_tombstones_time", "session_tombstones", ["time"])


def downgrade() -> None:
    op.drop_index("ix_session_tombstones_time", table_name="session_tombstones")
    op.drop_table("session_tombstones")
