"""Session lifecycle: expiry, and the state a session was created with.

Adds sessions.expire_time (epoch seconds; NULL: never expires),
sessions.ttl_seconds (an idle timeout: each append pushes expire_time to its
time plus this; NULL: expire_time is absolute or unset) and
sessions.initial_state (the session-scope state given at creation, from
which a fork derives the state after any of its events). A partial index on
expire_time serves the sweeper without touching sessions that never expire.

Sessions created before this revision get their initial state only when they
have no event yet (their state is then still the state they were created
with); the others keep NULL, and a fork of them can copy only their whole
history.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEX = "ix_sessions_expire_time"
_EXPIRING = sa.text("expire_time IS NOT NULL")


def upgrade() -> None:
    document = sa.JSON().with_variant(JSONB(), "postgresql")
    op.add_column("sessions", sa.Column("expire_time", sa.Double(), nullable=True))
    op.add_column("sessions", sa.Column("ttl_seconds", sa.Double(), nullable=True))
    op.add_column("sessions", sa.Column("initial_state", document, nullable=True))
    op.execute("UPDATE sessions SET initial_state = state WHERE revision = 0")
    op.create_index(
        _INDEX, "sessions", ["expire_time"], postgresql_where=_EXPIRING, sqlite_where=_EXPIRING
    )


def downgrade() -> None:
    op.drop_index(_INDEX, table_name="sessions")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("initial_state")
        batch.drop_column("ttl_seconds")
        batch.drop_column("expire_time")
