"""Prometheus metrics. With several worker processes, prometheus_client's
multiprocess mode (PROMETHEUS_MULTIPROC_DIR, set by `serve`) sums them."""

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

HTTP_REQUESTS = Counter(
    "session_state_http_requests_total",
    "HTTP requests by method, route template and status.",
    ["method", "route", "status"],
)
HTTP_LATENCY = Histogram(
    "session_state_http_request_duration_seconds",
    "HTTP request latency by method, route template and status.",
    ["method", "route", "status"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
APPENDS = Counter(
    "session_state_appends_total",
    "Appends of one event (each its own request, or one of several sent together) by "
    "result: stored, retry, partial, stale, conflict, not_found, invalid.",
    ["result"],
)
EVENTS_STORED = Counter(
    "session_state_events_stored_total",
    "Events stored: by appends, batches and state PATCHes (a retry stores none).",
)
FAST_PATH_APPENDS = Counter(
    "session_state_append_fast_path_total",
    "Appends (of one event or a batch) the fast paths took from FastAPI's routes "
    "(app.sessions.append_fast_path), by outcome: answered, or client_gone before the body "
    "arrived (nothing stored).",
    ["outcome"],
)
FAST_PATH_READS = Counter(
    "session_state_read_fast_path_total",
    "Session reads the fast path took from FastAPI's route (app.sessions.read_fast_path).",
)
STALE_REJECTIONS = Counter(
    "session_state_stale_rejections_total", "Writes refused with 412 stale_session."
)
DB_POOL_IN_USE = Gauge(
    "session_state_db_pool_connections_in_use",
    "Database connections checked out of the pool.",
    multiprocess_mode="livesum",
)
APPEND_BATCH_SIZE = Histogram(
    "session_state_append_batch_size",
    "Appends sent to PostgreSQL in one statement (group commit; 1 when there was no wait).",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128),
)
READS = Counter(
    "session_state_reads_total",
    "Session reads, lists, event pages and memory searches by the server that answered: "
    "replica or primary.",
    ["target"],
)
DB_ERRORS = Counter(
    "session_state_db_errors_total", "Database errors by kind: unavailable, other.", ["kind"]
)

SWEEPS = Counter(
    "session_state_sweeps_total",
    "Sweeper passes by outcome: swept, skipped (another process was sweeping), failed.",
    ["outcome"],
)
SWEEP_DURATION = Histogram(
    "session_state_sweep_duration_seconds",
    "Duration of the sweeper passes that ran.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
SESSIONS_SWEPT = Counter(
    "session_state_sessions_swept_total", "Expired sessions deleted by the sweeper."
)
ROWS_SWEPT = Counter(
    "session_state_swept_rows_total",
    "Rows the sweeper deleted, by table: sessions, events, memories.",
    ["table"],
)
SESSIONS_EXPIRED_WAITING = Gauge(
    "session_state_expired_sessions",
    "Expired sessions not deleted yet, as counted after the last pass.",
    multiprocess_mode="livemax",
)

MEMORY_EMBEDDING_BACKLOG = Gauge(
    "session_state_memory_embedding_backlog",
    "Memories waiting for a vector of the current embedder (counted after each pass).",
    multiprocess_mode="livemax",
)
MEMORY_EMBEDDING_GIVEN_UP = Gauge(
    "session_state_memory_embedding_given_up",
    "Memories whose text the embedder refused too many times (found by keywords only).",
    multiprocess_mode="livemax",
)
MEMORY_EMBEDDINGS = Counter(
    "session_state_memory_embeddings_total",
    "Memories given a vector in the background, by outcome: embedded, failed (the embedder"
    " failed: tried again later), refused (the embedder refused the text alone).",
    ["outcome"],
)
MEMORY_SEARCH_FALLBACKS = Counter(
    "session_state_memory_search_fallbacks_total",
    "Searches ranked by keywords alone because the question could not be embedded in time.",
)


def render_metrics() -> tuple[bytes, str]:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        registry = CollectorRegistry()
        # prometheus_client leaves this constructor unannotated.
        multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST


STREAMS_OPEN = Gauge(
    "session_state_live_streams",
    "Live streams (Server-Sent Events) open.",
    multiprocess_mode="livesum",
)
STREAMS_CUT = Counter(
    "session_state_live_streams_cut_total",
    "Live streams cut off because their reader took nothing for stream_send_timeout_seconds.",
)
LIVE_STREAM_READS = Counter(
    "session_state_live_stream_reads_total",
    "Storage reads by session streams; the streams following one session at one "
    "revision share a read (app.streams.live).",
)
