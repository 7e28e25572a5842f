"""Memory entries as ADK defines them: the content and metadata as given, and
the ids a user deleted.

ADK's memory services return an entry's content as it was added (every part,
not only the text) with its custom metadata, and `delete_memory(memory_id)`
keeps a deleted id from coming back when its session is added again. Rows
stored before this revision have neither column; their content is rebuilt
from role and text as before.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("content", sa.Text(), nullable=True))
    op.add_column("memories", sa.Column("custom_metadata", sa.Text(), nullable=True))
    op.create_table(
        "forgotten_memories",
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("memory_id", sa.String(128), nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "memory_id", name="pk_forgotten_memories"),
    )


def downgrade() -> None:
    op.drop_table("forgotten_memories")
    # ALTER TABLE ... DROP COLUMN on both dialects (SQLite 3.35+): a batch
    # rebuild of the table on SQLite would drop its full-text triggers.
    op.drop_column("memories", "custom_metadata")
    op.drop_column("memories", "content")
