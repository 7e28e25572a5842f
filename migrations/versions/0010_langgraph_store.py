"""LangGraph's long-term store (app.langgraph.store): items keyed by
(app, namespace, key) with a JSON value and an optional TTL
(app.langgraph.store.tables).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(JSONB(), "postgresql")
_EXPIRING = sa.text("expire_time IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        "lg_store_items",
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("namespace", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("user_id", sa.Text, nullable=False),
        sa.Column("value", _JSON, nullable=False),
        sa.Column("create_time", sa.Double, nullable=False),
        sa.Column("update_time", sa.Double, nullable=False),
        sa.Column("expire_time", sa.Double, nullable=True),
        sa.Column("ttl_seconds", sa.Double, nullable=True),
        sa.PrimaryKeyConstraint("app_name", "namespace", "key", name="pk_lg_store_items"),
    )
    op.create_index("ix_lg_store_items_app_user", "lg_store_items", ["app_name", "user_id"])
    op.create_index(
        "ix_lg_store_items_expire_time",
        "lg_store_items",
        ["expire_time"],
        postgresql_where=_EXPIRING,
        sqlite_where=_EXPIRING,
    )


def downgrade() -> None:
    op.drop_index("ix_lg_store_items_expire_time", table_name="lg_store_items")
    op.drop_index("ix_lg_store_items_app_user", table_name="lg_store_items")
    op.drop_table("lg_store_items")
