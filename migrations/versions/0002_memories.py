"""Long-term memory: ingested event texts with a full-text index per dialect.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "memories",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("event_id", sa.String(128), nullable=False),
        sa.Column("author", sa.Text(), nullable=False),
        sa.Column("role", sa.Text(), nullable=True),
        sa.Column("timestamp", sa.Double(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_memories"),
        sa.UniqueConstraint(
            "app_name",
            "user_id",
            "session_id",
            "event_id",
            name="uq_memories_app_name_user_id_session_id_event_id",
        ),
    )
    op.create_index("ix_memories_app_user", "memories", ["app_name", "user_id"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "ALTER TABLE memories ADD COLUMN search_vector tsvector "
            "GENERATED ALWAYS AS (to_tsvector('english', text)) STORED"
        )
        op.execute("CREATE INDEX ix_memories_search_vector ON memories USING gin (search_vector)")
    else:
        # External-content FTS5 table kept in step with memories by triggers.
        op.execute(
            "CREATE VIRTUAL TABLE memories_fts USING fts5("
            "text, content='memories', content_rowid='id', tokenize='porter unicode61')"
        )
        op.execute(
            "CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN "
            "INSERT INTO memories_fts(rowid, text) VALUES (new.id, new.text); END"
        )
        op.execute(
            "CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN "
            "INSERT INTO memories_fts(memories_fts, rowid, text) "
            "VALUES ('delete', old.id, old.text); END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        op.execute("DROP TRIGGER IF EXISTS memories_fts_delete")
        op.execute("DROP TRIGGER IF EXISTS memories_fts_insert")
        op.execute("DROP TABLE IF EXISTS memories_fts")
    op.drop_index("ix_memories_app_user", table_name="memories")
    op.drop_table("memories")
