"""Initial schema: app and user state one row per key, sessions, events.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JsonDocument = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "app_states",
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", JsonDocument, nullable=False),
        sa.PrimaryKeyConstraint("app_name", "key", name="pk_app_states"),
    )
    op.create_table(
        "user_states",
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", JsonDocument, nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "key", name="pk_user_states"),
    )
    op.create_table(
        "sessions",
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("id", sa.String(128), nullable=False),
        sa.Column("state", JsonDocument, nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("create_time", sa.Double(), nullable=False),
        sa.Column("update_time", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "id", name="pk_sessions"),
    )
    op.create_index(
        "ix_sessions_app_order", "sessions", ["app_name", "update_time", "user_id", "id"]
    )
    op.create_index(
        "ix_sessions_app_user_order", "sessions", ["app_name", "user_id", "update_time", "id"]
    )
    op.create_table(
        "events",
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.String(128), nullable=False),
        sa.Column("invocation_id", sa.Text(), nullable=False),
        sa.Column("author", sa.Text(), nullable=False),
        sa.Column("timestamp", sa.Double(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "session_id", "seq", name="pk_events"),
        sa.UniqueConstraint(
            "app_name",
            "user_id",
            "session_id",
            "id",
            name="uq_events_app_name_user_id_session_id_id",
        ),
        sa.ForeignKeyConstraint(
            ["app_name", "user_id", "session_id"],
            ["sessions.app_name", "sessions.user_id", "sessions.id"],
            name="fk_events_sessions",
            ondelete="CASCADE",
        ),
    )


def downgrade() -> None:
    op.drop_table("events")
    op.drop_index("ix_sessions_app_user_order", table_name="sessions")
    op.drop_index("ix_sessions_app_order", table_name="sessions")
    op.drop_table("sessions")
    op.drop_table("user_states")
    op.drop_table("app_states")
