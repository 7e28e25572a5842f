"""An app's list of LangGraph threads, latest write first
(GET /apps/{app}/threads), walks an index in that order.

- `ix_lg_threads_app_activity` (app_name, update_time, thread_id): the list.
- `ix_lg_threads_app_user` gains (update_time, thread_id) after
  (app_name, user_id): one user's list; erasure still uses its first two.

No column is added: `update_time` was there, and every write now stamps it
(app.langgraph.checkpoints.thread_sql). On PostgreSQL a thread without a TTL
was stamped only when made, so such a thread is listed by its creation time
until its next write after this upgrade.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ACTIVITY = "ix_lg_threads_app_activity"
USER = "ix_lg_threads_app_user"


def upgrade() -> None:
    op.create_index(ACTIVITY, "lg_threads", ["app_name", "update_time", "thread_id"])
    op.drop_index(USER, table_name="lg_threads")
    op.create_index(USER, "lg_threads", ["app_name", "user_id", "update_time", "thread_id"])


def downgrade() -> None:
    op.drop_index(USER, table_name="lg_threads")
    op.create_index(USER, "lg_threads", ["app_name", "user_id"])
    op.drop_index(ACTIVITY, table_name="lg_threads")
