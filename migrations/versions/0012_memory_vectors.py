"""Search memory by meaning: each memory's vector, stored compactly, with the
embedder's model id (app.memory.embedding). Rows stored before have none and wait
in the backlog that `serve` embeds (or `session-state memory reindex`).

No extension is needed: the components are int8 bytes (bytea / BLOB), the
sign bits a varbit on PostgreSQL (bit_count of an XOR ranks a first pass)
and a BLOB on SQLite (compared in numpy).

Revision ID: 0012
Revises: 0014
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import BIT

revision: str = "0012"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Added in place on SQLite too (no table copy: its FTS triggers stay).
    op.add_column("memories", sa.Column("embedding_model", sa.String(300), nullable=True))
    op.add_column("memories", sa.Column("embedding", sa.LargeBinary, nullable=True))
    op.add_column(
        "memories",
        sa.Column(
            "embedding_bits",
            sa.LargeBinary().with_variant(BIT(varying=True), "postgresql"),
            nullable=True,
        ),
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # SQLite 3.35+ drops a column in place, keeping the FTS triggers.
        for column in ("embedding_bits", "embedding", "embedding_model"):
            op.execute(f"ALTER TABLE memories DROP COLUMN {column}")
        return
    for column in ("embedding_bits", "embedding", "embedding_model"):
        op.drop_column("memories", column)
