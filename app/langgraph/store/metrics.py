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
