"""Every table of the schema, by feature, with what the sweeper, an erasure
and an export do with it. A feature that adds a table adds it here; a test
compares this list with the tables a migrated database holds, on both
backends, so that no operation forgets a feature."""

from dataclasses import dataclass
from typing import Literal

# How the sweeper frees the table's rows: by their own expiry; with the row
# they belong to (a session, a thread) by a foreign key or a trigger; pruned
# after SESSION_STATE_TOMBSTONE_RETENTION_SECONDS; never (the `why` says).
Sweep = Literal["expired", "with session", "with thread", "pruned", "never"]
# What erasing a user does: its rows name their user and go ("user"); only an
# app's erasure takes them ("app"); the user's rows are collapsed into one
# marker; or the table holds no one's data.
Erase = Literal["user", "app", "collapsed", "no user data"]
# Whether `session-state export` writes it: as it is, derived from what is
# written (rebuilt on import), or left out (the `why` says).
Export = Literal["exported", "derived", "left out"]


@dataclass(frozen=True)
class Table:
    name: str
    feature: str
    sweep: Sweep
    erase: Erase
    export: Export
    # Why a table is never swept, derived or left out of exports.
    why: str = ""
    # SQLite's own (PostgreSQL indexes the same in the owning table).
    sqlite_only: bool = False


TABLES = (
    Table("sessions", "sessions", "expired", "user", "exported"),
    Table("events", "sessions", "with session", "user", "exported"),
    Table(
        "event_removals",
        "sessions",
        "with session",
        "user",
        "left out",
        "which events a readers' catch-up must drop; an imported session starts its changes anew",
    ),
    Table(
        "session_labels",
        "sessions",
        "with session",
        "user",
        "derived",
        "kept by triggers from sessions.labels, which is exported",
        sqlite_only=True,
    ),
    Table(
        "session_tombstones",
        "streams",
        "pruned",
        "collapsed",
        "left out",
        "live streams' resume points, meaningful to the database that wrote them only",
    ),
    Table(
        "session_change_floor",
        "streams",
        "never",
        "no user data",
        "left out",
        "one counter of the database's change numbers, no one's data",
    ),
    Table(
        "user_states",
        "sessions",
        "never",
        "user",
        "exported",
        "user-scope state outlives the user's sessions (ADK's scopes) until erased",
    ),
    Table(
        "app_states",
        "sessions",
        "never",
        "app",
        "exported",
        "app-scope state outlives every session until the app is erased",
    ),
    # Memories go with an expired session when
    # SESSION_STATE_EXPIRED_SESSION_MEMORIES is `delete`. Their vectors are
    # columns: left out of exports (another server may embed with another
    # model); `reindex-memory` makes them.
    Table("memories", "memory", "with session", "user", "exported"),
    Table(
        "forgotten_memories",
        "memory",
        "never",
        "user",
        "exported",
        "a forgotten id stays forgotten until its user is erased",
    ),
    Table(
        "memories_fts",
        "memory",
        "with session",
        "user",
        "derived",
        "SQLite's full-text index of memories, kept by triggers",
        sqlite_only=True,
    ),
    Table("lg_threads", "langgraph", "expired", "user", "exported"),
    Table("lg_checkpoints", "langgraph", "with thread", "user", "exported"),
    Table("lg_channel_values", "langgraph", "with thread", "user", "exported"),
    Table("lg_writes", "langgraph", "with thread", "user", "exported"),
    Table("lg_store_items", "langgraph store", "expired", "user", "exported"),
    Table(
        "alembic_version",
        "schema",
        "never",
        "no user data",
        "left out",
        "the schema's revision; an import runs against a migrated database",
    ),
)

# SQLite keeps a full-text table's index in shadow tables named after it.
_SHADOW_SUFFIXES = ("_config", "_content", "_data", "_docsize", "_idx")


def unaccounted(schema_tables: set[str]) -> set[str]:
    """The tables of a database that no entry of TABLES accounts for."""
    names = {table.name for table in TABLES}
    shadows = {name + suffix for name in names for suffix in _SHADOW_SUFFIXES}
    return schema_tables - names - shadows


def table(name: str) -> Table:
    return next(entry for entry in TABLES if entry.name == name)
