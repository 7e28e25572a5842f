"""LangGraph's checkpoints (app.langgraph.checkpoints): threads, checkpoints, channel
values stored once per version, and pending writes (app.langgraph.checkpoints.tables).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(JSONB(), "postgresql")
_NAME = sa.String(128)
_EXPIRING = sa.text("expire_time IS NOT NULL")
_WITH_RUN = sa.text("run_id IS NOT NULL")


def _thread_columns() -> list[sa.Column[str]]:
    return [
        sa.Column("app_name", _NAME, nullable=False),
        sa.Column("thread_id", _NAME, nullable=False),
    ]


def _thread_reference(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["app_name", "thread_id"],
        ["lg_threads.app_name", "lg_threads.thread_id"],
        name=f"fk_{table}_lg_threads",
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "lg_threads",
        *_thread_columns(),
        sa.Column("user_id", _NAME, nullable=False),
        sa.Column("create_time", sa.Double, nullable=False),
        sa.Column("update_time", sa.Double, nullable=False),
        sa.Column("expire_time", sa.Double, nullable=True),
        sa.Column("ttl_seconds", sa.Double, nullable=True),
        sa.PrimaryKeyConstraint("app_name", "thread_id", name="pk_lg_threads"),
    )
    op.create_index("ix_lg_threads_app_user", "lg_threads", ["app_name", "user_id"])
    op.create_index(
        "ix_lg_threads_expire_time",
        "lg_threads",
        ["expire_time"],
        postgresql_where=_EXPIRING,
        sqlite_where=_EXPIRING,
    )
    op.create_table(
        "lg_checkpoints",
        *_thread_columns(),
        sa.Column("checkpoint_ns", sa.Text, nullable=False),
        sa.Column("checkpoint_id", sa.Text, nullable=False),
        sa.Column("parent_checkpoint_id", sa.Text, nullable=True),
        sa.Column("run_id", sa.Text, nullable=True),
        sa.Column("checkpoint_type", sa.Text, nullable=False),
        sa.Column("checkpoint", sa.LargeBinary, nullable=False),
        sa.Column("channel_versions", _JSON, nullable=False),
        sa.Column("metadata", _JSON, nullable=False),
        sa.PrimaryKeyConstraint(
            "app_name", "thread_id", "checkpoint_ns", "checkpoint_id", name="pk_lg_checkpoints"
        ),
        _thread_reference("lg_checkpoints"),
    )
    op.create_index(
        "ix_lg_checkpoints_run_id",
        "lg_checkpoints",
        ["app_name", "run_id"],
        postgresql_where=_WITH_RUN,
        sqlite_where=_WITH_RUN,
    )
    op.create_table(
        "lg_channel_values",
        *_thread_columns(),
        sa.Column("checkpoint_ns", sa.Text, nullable=False),
        sa.Column("channel", sa.Text, nullable=False),
        sa.Column("version", sa.Text, nullable=False),
        sa.Column("value_type", sa.Text, nullable=False),
        sa.Column("value", sa.LargeBinary, nullable=True),
        sa.PrimaryKeyConstraint(
            "app_name",
            "thread_id",
            "checkpoint_ns",
            "channel",
            "version",
            name="pk_lg_channel_values",
        ),
        _thread_reference("lg_channel_values"),
    )
    op.create_table(
        "lg_writes",
        *_thread_columns(),
        sa.Column("checkpoint_ns", sa.Text, nullable=False),
        sa.Column("checkpoint_id", sa.Text, nullable=False),
        sa.Column("task_id", sa.Text, nullable=False),
        sa.Column("idx", sa.Integer, nullable=False),
        sa.Column("task_path", sa.Text, nullable=False),
        sa.Column("channel", sa.Text, nullable=False),
        sa.Column("value_type", sa.Text, nullable=False),
        sa.Column("value", sa.LargeBinary, nullable=False),
        sa.PrimaryKeyConstraint(
            "app_name",
            "thread_id",
            "checkpoint_ns",
            "checkpoint_id",
            "task_id",
            "idx",
            name="pk_lg_writes",
        ),
        _thread_reference("lg_writes"),
    )


def downgrade() -> None:
    op.drop_table("lg_writes")
    op.drop_table("lg_channel_values")
    op.drop_index("ix_lg_checkpoints_run_id", table_name="lg_checkpoints")
    op.drop_table("lg_checkpoints")
    op.drop_index("ix_lg_threads_expire_time", table_name="lg_threads")
    op.drop_index("ix_lg_threads_app_user", table_name="lg_threads")
    op.drop_table("lg_threads")
