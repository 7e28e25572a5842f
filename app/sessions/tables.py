"""Tables. App and user state are stored one row per key.

One row per key means two writers of different keys of the same app never wait
for each other; only writers of the same key serialize on its row.
"""

from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import BIT

from ..db.table_base import (
    IDENTIFIER_LENGTH,
    WRITTEN_BY_HAND,
    JsonValue,
    expiry_index,
    lifetime_columns,
)

# Read from here by the migrations and the SQLite statements.
from ..db.table_base import JsonDocument as JsonDocument
from ..db.table_base import metadata as metadata

# LangGraph's tables join the same metadata (the migrations compare it whole).

# An embedder's model id as stored with its vectors ("openai/<model>@<dimensions>").
EMBEDDING_MODEL_LENGTH = 300

app_states = Table(
    "app_states",
    metadata,
    Column("app_name", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("key", Text, primary_key=True),
    Column("value", JsonValue, nullable=False),
    # Bytes this key adds to its scope (key, value JSON, 4): the scope's size
    # limit is checked without reading every value (migration 0004).
    Column("size", BigInteger, nullable=False, server_default="0"),
)

user_states = Table(
    "user_states",
    metadata,
    Column("app_name", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("user_id", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("key", Text, primary_key=True),
    Column("value", JsonValue, nullable=False),
    # Bytes this key adds to its scope (key, value JSON, 4): the scope's size
    # limit is checked without reading every value (migration 0004).
    Column("size", BigInteger, nullable=False, server_default="0"),
)

sessions = Table(
    "sessions",
    metadata,
    Column("app_name", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("user_id", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("id", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("state", JsonDocument, nullable=False),
    # At least the size of `state` as JSON: an append measures the state only
    # when this bound nears the limit (migration 0004).
    Column("state_bytes", BigInteger, nullable=False, server_default="0"),
    Column("revision", BigInteger, nullable=False),
    # When the session expires (NULL: never), and the idle timeout each
    # append pushes it out by (NULL: the time is absolute).
    *lifetime_columns(),
    # The session-scope state given at creation: a fork derives the state
    # after any event from it and the events' deltas (NULL for sessions that
    # had events before migration 0007).
    Column("initial_state", JsonDocument, nullable=True),
    # The session's labels (app.sessions.labels); NULL when it has none. Its index,
    # one per dialect, is the migration's (0011; LABELS_INDEX).
    Column("labels", JsonDocument, nullable=True),
    # The user stream's order (app.streams.live, migration 0018) and what pins a
    # walk of a list (session_listing): set by every write of the row;
    # PostgreSQL's the writing transaction's id, SQLite's the newest of any
    # session plus one (migration 0019; CHANGE_NUMBER_INDEX).
    Column("change_number", BigInteger, nullable=False, server_default="0"),
    # Keyset pagination in ADK's order, for one app and for one user of an app.
    Index("ix_sessions_app_order", "app_name", "update_time", "user_id", "id"),
    Index("ix_sessions_app_user_order", "app_name", "user_id", "update_time", "id"),
    Index("ix_sessions_user_changes", "app_name", "user_id", "change_number", "id"),
    expiry_index("sessions"),
)

events = Table(
    "events",
    metadata,
    Column("app_name", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("user_id", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("session_id", String(IDENTIFIER_LENGTH), primary_key=True),
    # The session revision this event produced: append order, and the key of
    # "the last N events" without any other index.
    Column("seq", BigInteger, primary_key=True),
    Column("id", String(IDENTIFIER_LENGTH), nullable=False),
    Column("invocation_id", Text, nullable=False),
    Column("author", Text, nullable=False),
    Column("timestamp", Double, nullable=False),
    # The event JSON as text, so it comes back byte for byte as stored.
    Column("data", Text, nullable=False),
    UniqueConstraint("app_name", "user_id", "session_id", "id"),
    ForeignKeyConstraint(
        ["app_name", "user_id", "session_id"],
        ["sessions.app_name", "sessions.user_id", "sessions.id"],
        ondelete="CASCADE",
    ),
)

# Each removal of events (migration 0013): the revision it made and the ids of
# the events it removed, as a JSON array. A live stream resuming after an
# earlier revision reads removals here, since the events themselves are gone.
event_removals = Table(
    "event_removals",
    metadata,
    Column("app_name", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("user_id", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("session_id", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("revision", BigInteger, primary_key=True),
    Column("event_ids", Text, nullable=False),
    ForeignKeyConstraint(
        ["app_name", "user_id", "session_id"],
        ["sessions.app_name", "sessions.user_id", "sessions.id"],
        ondelete="CASCADE",
    ),
)

# What left a user's sessions (migration 0015): a deletion, an expiry swept,
# an erasure (session_id NULL: every session). `seq` counts per user, written
# under a per-user lock so that it grows in commit order; a user stream
# resumes after it. Pruned after a retention window, the user's newest row
# kept (app.streams.live, docs/api.md "Live streams").
session_tombstones = Table(
    "session_tombstones",
    metadata,
    Column("app_name", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("user_id", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("seq", BigInteger, primary_key=True),
    Column("session_id", String(IDENTIFIER_LENGTH), nullable=True),
    Column("kind", String(16), nullable=False),
    Column("time", Double, nullable=False),
    Index("ix_session_tombstones_time", "time"),
)

# SQLite only, one row: the highest change number of a session deleted, so
# that the user's newest plus one never gives a number twice.
session_change_floor = Table(
    "session_change_floor",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("change_number", BigInteger, nullable=False),
)

# Long-term memory: the text of ingested events, one row per event. The search
# index is dialect-specific and created by the migration only (a generated
# tsvector column with a GIN index on PostgreSQL, an FTS5 table on SQLite,
# both over search_words and search_grams): see SEARCH_INDEX_OBJECTS.
memories = Table(
    "memories",
    metadata,
    Column("id", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True),
    Column("app_name", String(IDENTIFIER_LENGTH), nullable=False),
    Column("user_id", String(IDENTIFIER_LENGTH), nullable=False),
    Column("session_id", String(IDENTIFIER_LENGTH), nullable=False),
    Column("event_id", String(IDENTIFIER_LENGTH), nullable=False),
    Column("author", Text, nullable=False),
    Column("role", Text, nullable=True),
    Column("timestamp", Double, nullable=False),
    Column("text", Text, nullable=False),
    # The content (JSON) and custom metadata (JSON) as added; NULL in rows
    # stored before migration 0005, whose content is rebuilt from role and text.
    Column("content", Text, nullable=True),
    Column("custom_metadata", Text, nullable=True),
    # The text as searched (app.memory.search_text, migration 0006): normalised
    # words, and pairs of characters of the scripts written without spaces.
    Column("search_words", Text, nullable=False, server_default=""),
    Column("search_grams", Text, nullable=False, server_default=""),
    # Search by meaning (app.memory.embedding, migration 0012): the embedder's model
    # id, the vector's int8 components and its sign bits (a varbit on
    # PostgreSQL, for bit_count of an XOR). NULL, or another model's id:
    # waiting to be embedded (app.memory.embedding_backlog).
    Column("embedding_model", String(EMBEDDING_MODEL_LENGTH), nullable=True),
    Column("embedding", LargeBinary, nullable=True),
    Column(
        "embedding_bits", LargeBinary().with_variant(BIT(varying=True), "postgresql"), nullable=True
    ),
    # The backlog (migration 0017): claimed by a process until this time
    # (epoch seconds), and how often the embedder refused this text alone.
    Column("embedding_claimed_until", Double, nullable=True),
    Column("embedding_failures", Integer, nullable=False, server_default="0"),
    UniqueConstraint("app_name", "user_id", "session_id", "event_id"),
    # A user's memories, newest first (migration 0021).
    Index("ix_memories_app_user", "app_name", "user_id", "id"),
    # The first pass of a search by meaning reads only this index (migration 0017).
    Index(
        "ix_memories_vector_bits", "app_name", "user_id", "embedding_model", "id", "embedding_bits"
    ),
)

# Memory ids a user deleted (ADK's delete_memory): adding their session again
# does not bring them back.
forgotten_memories = Table(
    "forgotten_memories",
    metadata,
    Column("app_name", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("user_id", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("memory_id", String(IDENTIFIER_LENGTH), primary_key=True),
)

# The index label filters use: GIN on the labels on PostgreSQL, the app's
# labelled sessions in list order on SQLite (migration 0011).
LABELS_INDEX = "ix_sessions_labels"
# SQLite's newest change number of any session (migration 0019).
CHANGE_NUMBER_INDEX = "ix_sessions_change_number"
# SQLite's label rows, kept by triggers on sessions (migration 0016).
LABEL_ROWS_OBJECTS = frozenset({"session_labels", "ix_session_labels_key"})

SEARCH_INDEX_OBJECTS = frozenset(
    {
        "search_vector",
        "ix_memories_search_vector",
        "memories_fts",
        "memories_fts_data",
        "memories_fts_idx",
        "memories_fts_docsize",
        "memories_fts_config",
        "memories_fts_content",
    }
)
# Left alone by autogenerate: no model describes them.
WRITTEN_BY_HAND.update(
    {LABELS_INDEX, CHANGE_NUMBER_INDEX, *LABEL_ROWS_OBJECTS, *SEARCH_INDEX_OBJECTS}
)
