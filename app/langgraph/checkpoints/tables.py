"""Tables of LangGraph's checkpoints (app.langgraph.checkpoints), laid out for its
access pattern rather than a blob per checkpoint: a checkpoint row holds what
changes every step (its serialized header, channel versions, metadata), a
channel's value is stored once per (channel, version) and shared by every
checkpoint that has that version, and pending writes are one row per
(checkpoint, task, index). Every row carries its thread's key, so deleting
a thread is one cascade.
"""

from sqlalchemy import (
    Column,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    text,
)

from ...db.table_base import (
    IDENTIFIER_LENGTH,
    JsonDocument,
    expiry_index,
    identifier_key,
    lifetime_columns,
    metadata,
)


def _thread_key() -> list[Column[str]]:
    """The first columns of every table's key: the thread's."""
    return [identifier_key("app_name"), identifier_key("thread_id")]


def _of_thread() -> ForeignKeyConstraint:
    """Rows of a thread go when it does."""
    return ForeignKeyConstraint(
        ["app_name", "thread_id"],
        ["lg_threads.app_name", "lg_threads.thread_id"],
        ondelete="CASCADE",
    )


# A thread is keyed by (app, thread id): LangGraph's delete_thread and
# copy_thread know only the id. Its user is recorded for erasure.
lg_threads = Table(
    "lg_threads",
    metadata,
    *_thread_key(),
    Column("user_id", String(IDENTIFIER_LENGTH), nullable=False),
    # The thread expires `ttl_seconds` after its last write; every write
    # stamps update_time (thread_sql).
    *lifetime_columns(),
    # The app's list of threads, latest write first (of one user, and that
    # user's erasure, by the second).
    Index("ix_lg_threads_app_activity", "app_name", "update_time", "thread_id"),
    Index("ix_lg_threads_app_user", "app_name", "user_id", "update_time", "thread_id"),
    expiry_index("lg_threads"),
)

lg_checkpoints = Table(
    "lg_checkpoints",
    metadata,
    *_thread_key(),
    Column("checkpoint_ns", Text, primary_key=True),
    Column("checkpoint_id", Text, primary_key=True),
    Column("parent_checkpoint_id", Text, nullable=True),
    # metadata.run_id, for delete_for_runs without a scan.
    Column("run_id", Text, nullable=True),
    # The checkpoint without its channel values, as LangGraph's serializer
    # wrote it (type tag and bytes): the server never reads inside it.
    Column("checkpoint_type", Text, nullable=False),
    Column("checkpoint", LargeBinary, nullable=False),
    # {channel: version}: which stored values this checkpoint has.
    Column("channel_versions", JsonDocument, nullable=False),
    Column("metadata", JsonDocument, nullable=False),
    _of_thread(),
    Index(
        "ix_lg_checkpoints_run_id",
        "app_name",
        "run_id",
        postgresql_where=text("run_id IS NOT NULL"),
        sqlite_where=text("run_id IS NOT NULL"),
    ),
)

lg_channel_values = Table(
    "lg_channel_values",
    metadata,
    *_thread_key(),
    Column("checkpoint_ns", Text, primary_key=True),
    Column("channel", Text, primary_key=True),
    Column("version", Text, primary_key=True),
    # "empty" with no value: the channel had that version and no value.
    Column("value_type", Text, nullable=False),
    Column("value", LargeBinary, nullable=True),
    _of_thread(),
)

lg_writes = Table(
    "lg_writes",
    metadata,
    *_thread_key(),
    Column("checkpoint_ns", Text, primary_key=True),
    Column("checkpoint_id", Text, primary_key=True),
    Column("task_id", Text, primary_key=True),
    Column("idx", Integer, primary_key=True),
    Column("task_path", Text, nullable=False),
    Column("channel", Text, nullable=False),
    Column("value_type", Text, nullable=False),
    Column("value", LargeBinary, nullable=False),
    _of_thread(),
)
