"""Prometheus metrics of LangGraph's long-term store (app.core.metrics has the rest)."""

from prometheus_client import Counter

STORE_OPERATIONS = Counter(
    "session_state_store_operations_total",
    "LangGraph store operations served, by kind: get, put, delete, search, listNamespaces.",
    ["op"],
)
STORE_ITEMS_REMOVED = Counter(
    "session_state_store_items_removed_total",
    "LangGraph store items removed by erasure or the sweeper (not by delete), by how.",
    ["how"],
)
STORE_SEALED_ROWS_READ = Counter(
    "session_state_store_sealed_rows_read_total",
    "LangGraph store items opened and read by searches with a filter or a query, with "
    "encryption at rest on (each request reads at most SESSION_STATE_MAX_STORE_SCAN_ROWS).",
)
