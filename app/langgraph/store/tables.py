"""The table of LangGraph's long-term store (app.langgraph.store): one row
per item, keyed by (app, namespace, key). The namespace is its labels joined
by "." (LangGraph refuses a "." inside a label), so a namespace prefix is a
string prefix; its first label is kept apart as the item's user, for erasure.
"""

from sqlalchemy import Column, Double, Index, String, Table, Text, text

from ...db.table_base import IDENTIFIER_LENGTH, JsonDocument, metadata

lg_store_items = Table(
    "lg_store_items",
    metadata,
    Column("app_name", String(IDENTIFIER_LENGTH), primary_key=True),
    Column("namespace", Text, primary_key=True),
    Column("key", Text, primary_key=True),
    # The namespace's first label: erasing that user removes the item.
    Column("user_id", Text, nullable=False),
    Column("value", JsonDocument, nullable=False),
    # What a keyword query looks in (langgraph_store.matching.searchable_text).
    Column("search_text", Text, nullable=False, server_default=""),
    Column("create_time", Double, nullable=False),
    Column("update_time", Double, nullable=False),
    # When the item expires (NULL: never) and the time a write, or a read
    # that refreshes, pushes it out by.
    Column("expire_time", Double, nullable=True),
    Column("ttl_seconds", Double, nullable=True),
    Index("ix_lg_store_items_app_user", "app_name", "user_id"),
    Index(
        "ix_lg_store_items_expire_time",
        "expire_time",
        postgresql_where=text("expire_time IS NOT NULL"),
        sqlite_where=text("expire_time IS NOT NULL"),
    ),
)
