"""The table of LangGraph's long-term store (app.langgraph.store): one row
per item, keyed by (app, namespace, key). The namespace is its labels joined
by "." (LangGraph refuses a "." inside a label), so a namespace prefix is a
string prefix; its first label is kept apart as the item's user, for erasure.
"""

from sqlalchemy import Column, Index, Table, Text

from ...db.table_base import (
    JsonDocument,
    expiry_index,
    identifier_key,
    lifetime_columns,
    metadata,
)

lg_store_items = Table(
    "lg_store_items",
    metadata,
    identifier_key("app_name"),
    Column("namespace", Text, primary_key=True),
    Column("key", Text, primary_key=True),
    # The namespace's first label: erasing that user removes the item.
    Column("user_id", Text, nullable=False),
    Column("value", JsonDocument, nullable=False),
    # What a keyword query looks in (langgraph_store.matching.searchable_text).
    Column("search_text", Text, nullable=False, server_default=""),
    # A read that refreshes pushes the expiry out as a write does.
    *lifetime_columns(),
    Index("ix_lg_store_items_app_user", "app_name", "user_id"),
    expiry_index("lg_store_items"),
)
