"""Memory search by meaning at scale, and a backlog shared by several
processes.

- `ix_memories_vector_bits`: the first pass of a search by meaning (Hamming
  distance of the sign bits) reads this narrow index only (app, user, model,
  row id, bits), not the wide memory rows (their text, content and search
  columns): an index-only scan, a fraction of the pages (docs/performance.md).
- `embedding_claimed_until`: a process embedding a row claims it until then
  (epoch seconds), so that two `serve` processes do not embed one row twice;
  also when a refused text may be tried again.
- `embedding_failures`: how many times the embedder refused this row's text
  alone; at app.memory.embedding_backlog.MAX_EMBEDDING_TRIES it is given up on
  (still found by keywords).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Added in place on SQLite too (no table copy: its FTS triggers stay).
    op.add_column("memories", sa.Column("embedding_claimed_until", sa.Double(), nullable=True))
    op.add_column(
        "memories",
        sa.Column("embedding_failures", sa.Integer(), nullable=False, server_default="0"),
    )
    # Keyed by the row id before the bits: a new memory's entry goes at the
    # end of its user's, where keyed by its (random) bits it went anywhere
    # (SQLite's ingest of 500 at 100,000 memories took 3x as long).
    op.create_index(
        "ix_memories_vector_bits",
        "memories",
        ["app_name", "user_id", "embedding_model", "id", "embedding_bits"],
    )


def downgrade() -> None:
    op.drop_index("ix_memories_vector_bits", table_name="memories")
    if op.get_bind().dialect.name == "sqlite":
        for column in ("embedding_failures", "embedding_claimed_until"):
            op.execute(f"ALTER TABLE memories DROP COLUMN {column}")
        return
    for column in ("embedding_failures", "embedding_claimed_until"):
        op.drop_column("memories", column)
