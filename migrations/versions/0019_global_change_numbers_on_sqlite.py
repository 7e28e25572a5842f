"""SQLite's change numbers count across every session, not per user: a walk
of an app's session list is pinned by one number (app.sessions.session_listing).

- `ix_sessions_change_number`: SQLite only; the newest number of any session,
  which the next write of a session row takes plus one. PostgreSQL's numbers
  are transaction ids, already one count, and need no index for it.

Numbers given before stay valid: every later one is above all of them.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_sessions_change_number"


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.create_index(INDEX, "sessions", ["change_number"])


def downgrade() -> None:
    # The numbers given meanwhile stay above each user's older ones, which
    # is all 0018's per-user count needs.
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index(INDEX, table_name="sessions")
