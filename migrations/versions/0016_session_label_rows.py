"""Session label rows (SQLite): one row per label of a session, in list
order, so that a filtered list of an app walks only the sessions holding
its first label (an index range) instead of reading every labelled session
of the app and its labels' JSON (bench/labels.py; docs/performance.md, "The
session listing").

Kept in step with `sessions.labels` and `sessions.update_time` by triggers,
in the transaction of the write that changes them, whichever statement it
is (create, PATCH, append, fork, import, delete, erasure, the sweeper). An
append to a session without labels does not run them. PostgreSQL answers
the same filters from its GIN index on the labels (0011) and has no such
table.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Each delete is a primary key lookup per label.
_DELETE_ROWS_OF_OLD = (
    "DELETE FROM session_labels WHERE app_name = OLD.app_name AND update_time = OLD.update_time"
    " AND user_id = OLD.user_id AND session_id = OLD.id"
    " AND (label_key, label_value) IN (SELECT key, value FROM json_each(OLD.labels));"
)
_INSERT_ROWS_OF_NEW = (
    "INSERT INTO session_labels"
    " SELECT NEW.app_name, j.key, j.value, NEW.update_time, NEW.user_id, NEW.id"
    # A JSON null (not SQL NULL) is one keyless row: no label.
    " FROM json_each(NEW.labels) AS j WHERE j.key IS NOT NULL;"
)

STATEMENTS = (
    """
    CREATE TABLE session_labels (
        app_name VARCHAR(128) NOT NULL,
        label_key VARCHAR(63) NOT NULL,
        label_value VARCHAR(63) NOT NULL,
        update_time FLOAT NOT NULL,
        user_id VARCHAR(128) NOT NULL,
        session_id VARCHAR(128) NOT NULL,
        PRIMARY KEY (app_name, label_key, label_value, update_time, user_id, session_id)
    ) WITHOUT ROWID
    """,
    # label=key (any value), in list order.
    "CREATE INDEX ix_session_labels_key"
    " ON session_labels (app_name, label_key, update_time, user_id, session_id)",
    f"""
    CREATE TRIGGER session_labels_insert AFTER INSERT ON sessions
    WHEN NEW.labels IS NOT NULL BEGIN {_INSERT_ROWS_OF_NEW} END
    """,
    f"""
    CREATE TRIGGER session_labels_update AFTER UPDATE OF labels, update_time ON sessions
    WHEN OLD.labels IS NOT NULL OR NEW.labels IS NOT NULL BEGIN
        {_DELETE_ROWS_OF_OLD}
        {_INSERT_ROWS_OF_NEW}
    END
    """,
    f"""
    CREATE TRIGGER session_labels_delete AFTER DELETE ON sessions
    WHEN OLD.labels IS NOT NULL BEGIN {_DELETE_ROWS_OF_OLD} END
    """,
    # The sessions labelled before this revision.
    "INSERT INTO session_labels"
    " SELECT s.app_name, j.key, j.value, s.update_time, s.user_id, s.id"
    " FROM sessions AS s, json_each(s.labels) AS j"
    " WHERE s.labels IS NOT NULL AND j.key IS NOT NULL",
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for statement in STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for trigger in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER session_labels_{trigger}")
    op.execute("DROP TABLE session_labels")
