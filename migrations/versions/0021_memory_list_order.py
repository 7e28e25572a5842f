"""A user's memories listed newest first (GET .../memory/entries) walk an
index in that order.

- `ix_memories_app_user` gains the row id after (app_name, user_id): a page
  is the next entries of the index, however many memories the user has.
  What used its first two columns (erasure, forgetting a user) still does.
  SQLite's index held the row id already; it is made anew there too, so that
  both describe one schema.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

USER = "ix_memories_app_user"


def upgrade() -> None:
    op.drop_index(USER, table_name="memories")
    op.create_index(USER, "memories", ["app_name", "user_id", "id"])


def downgrade() -> None:
    op.drop_index(USER, table_name="memories")
    op.create_index(USER, "memories", ["app_name", "user_id"])
