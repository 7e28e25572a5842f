"""Every feature's tables, joined in the one metadata the migrations are
compared with (migrations/env.py, tests/test_migrations.py). A feature's
table module adds its tables to `app.db.table_base.metadata` when imported;
this module imports them all."""

from .db.table_base import metadata
from .langgraph.checkpoints import tables as checkpoint_tables
from .langgraph.store import tables as store_item_tables
from .sessions import tables as session_tables

FEATURE_TABLE_MODULES = (session_tables, checkpoint_tables, store_item_tables)

__all__ = ["FEATURE_TABLE_MODULES", "metadata"]
