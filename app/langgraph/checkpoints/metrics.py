"""Prometheus metrics of LangGraph's checkpoints (app.core.metrics has the rest)."""

from prometheus_client import Counter

CHECKPOINT_FAST_PATH = Counter(
    "session_state_checkpoint_fast_path_total",
    "Checkpoint requests (put, put_writes, get_tuple) the fast path took from FastAPI's "
    "routes (app.langgraph.checkpoints.fast_path), by outcome: answered, or client_gone "
    "before the body arrived (nothing stored).",
    ["outcome"],
)

CHECKPOINTS_STORED = Counter(
    "session_state_checkpoints_stored_total", "LangGraph checkpoints stored (put)."
)
CHECKPOINT_VALUES_SENT = Counter(
    "session_state_checkpoint_values_total",
    "Channel values sent with LangGraph checkpoints (each stored once per version).",
)
CHECKPOINT_WRITES_STORED = Counter(
    "session_state_checkpoint_writes_total", "LangGraph pending writes stored (put_writes)."
)
THREADS_REMOVED = Counter(
    "session_state_threads_removed_total",
    "LangGraph threads removed, by how: deleted, erased, swept.",
    ["how"],
)
CHECKPOINTS_PRUNED = Counter(
    "session_state_checkpoints_removed_total",
    "LangGraph checkpoints removed by prune(keep_latest) or delete_for_runs.",
    ["how"],
)
