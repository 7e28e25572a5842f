"""SQLite: app and user state values in TEXT columns.

SQLite gives a column declared JSON numeric affinity, so a value stored as the
text `1.0` came back as the integer 1 and an integer beyond 64 bits as a float.
TEXT keeps the JSON as written. PostgreSQL (JSONB) is unchanged.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Neither table is referenced by a foreign key, so the batch copy (create, copy,
# drop, rename) cascades nothing.
_STATE_VALUE_TABLES = ("app_states", "user_states")


def _change_value_type(old: sa.types.TypeEngine[object], new: sa.types.TypeEngine[object]) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in _STATE_VALUE_TABLES:
        with op.batch_alter_table(table, recreate="always") as batch:
            batch.alter_column("value", type_=new, existing_type=old, existing_nullable=False)


def upgrade() -> None:
    _change_value_type(sa.JSON(), sa.Text())


def downgrade() -> None:
    _change_value_type(sa.Text(), sa.JSON())
