"""Session labels (app.sessions.labels): a JSON object per session, NULL when it has
none, and an index for the list filters, one per dialect:

- PostgreSQL: GIN on the labels (jsonb_ops: answers `@>` and `?&`), of the
  labelled sessions only;
- SQLite, which has no index on what a JSON object contains: the labelled
  sessions of each app in list order, so that a filtered list walks only
  labelled sessions, never the app's others.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(JSONB(), "postgresql")
_LABELLED = sa.text("labels IS NOT NULL")


def upgrade() -> None:
    op.add_column("sessions", sa.Column("labels", _JSON, nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.create_index(
            "ix_sessions_labels",
            "sessions",
            ["labels"],
            postgresql_using="gin",
            postgresql_where=_LABELLED,
        )
    else:
        op.create_index(
            "ix_sessions_labels",
            "sessions",
            ["app_name", "update_time", "user_id", "id"],
            sqlite_where=_LABELLED,
        )


def downgrade() -> None:
    op.drop_index("ix_sessions_labels", table_name="sessions")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("labels")
