"""The application factory and its lifespan (store opened, store closed)."""

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from . import __version__
from .core.api_keys import ApiKeys
from .core.config import Settings, get_settings
from .core.errors import SetupProblem
from .core.limits import Limits
from .core.observability import fastapi_telemetry
from .db.postgresql_connections import asyncpg_dsn
from .http import health_routes as health
from .http import operations_routes as operations
from .http.authentication import ApiKeyMiddleware, document_bearer_security
from .http.body_limit import BodyLimitMiddleware
from .http.browser_guard import BrowserGuardMiddleware
from .http.encoded_paths import EncodedPathMiddleware
from .http.middleware import RequestContextMiddleware
from .http.openapi_layout import laid_out
from .http.problems import install_problem_handlers
from .inspector import routes as inspector
from .langgraph.checkpoints import routes as threads
from .langgraph.checkpoints.fast_path import CheckpointFastPath
from .langgraph.checkpoints.service import CheckpointService
from .langgraph.store import routes as store
from .langgraph.store.service import StoreService
from .lifecycle import erasure_routes as erasure
from .lifecycle.erasure import Erasure
from .lifecycle.sweeper import Sweeper
from .memory import routes as memory
from .memory.embedding import open_embedder
from .memory.embedding_backlog import EmbeddingBacklog
from .memory.service import MemoryService
from .sessions import appending
from .sessions import directory_routes as directory
from .sessions import routes as sessions
from .sessions.append_fast_path import APPEND, BATCH, AppendFastPath, AppendsFastPath
from .sessions.expiry import ExpiryDefaults
from .sessions.read_fast_path import ReadFastPath
from .sessions.service import SessionService
from .stores import open_replica, open_store
from .streams import routes as streams
from .streams.changes import ChangeHub, PostgresChangeRelay

DESCRIPTION = (
    "Sessions, event history and scoped key-value state of AI agents "
    "(Google ADK's concepts), on PostgreSQL or SQLite."
)


logger = logging.getLogger("session_state")


def _change_relay(settings: Settings, changes: ChangeHub) -> PostgresChangeRelay:
    """The process's one connection for change hints. Through a transaction-
    mode pooler LISTEN does not work: without a direct listening URL the
    relay only NOTIFYs, and this process's streams see other processes'
    changes at their heartbeat."""
    if settings.listen_database_url is not None:
        dsn = asyncpg_dsn(settings.listen_database_url)
        return PostgresChangeRelay(changes, dsn, settings.db_timeout_seconds)
    dsn = asyncpg_dsn(settings.database_url)
    if settings.db_pooler != "transaction":
        return PostgresChangeRelay(changes, dsn, settings.db_timeout_seconds)
    logger.warning(
        "live streams: LISTEN does not work through a transaction-mode pooler, so streams "
        "see changes made by other processes only at their heartbeat; set "
        "SESSION_STATE_LISTEN_DATABASE_URL to a direct URL of the database"
    )
    return PostgresChangeRelay(
        changes, dsn, settings.db_timeout_seconds, listen=False, statement_cache_size=0
    )


def create_app(
    settings: Settings | None = None, *, clock: Callable[[], float] = time.time
) -> FastAPI:
    """The app; `clock` (epoch seconds) is what expiry and assigned
    timestamps are measured by (tests pass one they control)."""
    settings = settings or get_settings()
    # Read at construction, so a bad key configuration stops the start-up.
    api_keys = ApiKeys.from_settings(settings.api_keys, settings.api_keys_file)
    tokens = settings.end_user_tokens()
    if tokens is not None and api_keys.some_key_looks_like_a_token:
        raise SetupProblem(
            "an API key is shaped as a JWT (three base64url parts joined by dots), so with "
            "end-user tokens on (SESSION_STATE_JWT_JWKS) it would be checked as a token: "
            "choose keys without two dots"
        )
    limits = Limits.from_settings(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = await open_store(settings)
        changes = ChangeHub(max_reads_at_once=max(1, settings.db_pool_size // 2))
        if not settings.is_sqlite:
            relay = _change_relay(settings, changes)
            relay.start()
            changes.relay = relay
        try:
            replica = await open_replica(settings) if settings.read_database_url else None
        except BaseException:
            await store.close()
            raise
        forget_expired_memories = settings.expired_session_memories == "delete"
        # Live streams read the store and wait on the hub (app.streams.routes).
        app.state.followed = store
        app.state.changes = changes
        app.state.service = SessionService(
            store,
            limits,
            clock=clock,
            expiry_defaults=ExpiryDefaults(settings.default_ttl_seconds, settings.app_ttl_seconds),
            forget_expired_memories=forget_expired_memories,
            replica=replica,
            changes=changes,
        )
        embedder = open_embedder(settings)
        backlog = None if embedder is None else EmbeddingBacklog(store, embedder)
        app.state.memory = MemoryService(
            store,
            limits,
            clock=clock,
            replica=replica,
            embedder=embedder,
            min_similarity=settings.memory_min_similarity,
            relevance_margin=settings.memory_relevance_margin,
            backlog=backlog,
        )
        app.state.memory_backlog = backlog
        cipher = settings.value_cipher()
        app.state.checkpoints = CheckpointService(
            store.checkpoint_store(cipher), limits, clock=clock
        )
        app.state.store = StoreService(store.item_storage(cipher), limits, clock=clock)
        app.state.sweeper = Sweeper(
            store,
            clock=clock,
            with_memories=forget_expired_memories,
            changes=changes,
            tombstone_retention_seconds=settings.tombstone_retention_seconds,
        )
        app.state.erasure = Erasure(store, changes)
        sweeping = None
        if settings.sweep_interval_seconds > 0:
            sweeping = asyncio.create_task(app.state.sweeper.run(settings.sweep_interval_seconds))
        embedding = None if backlog is None else asyncio.create_task(backlog.run())
        _freeze_start_up_objects()
        try:
            yield
        finally:
            for task in (sweeping, embedding):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            await app.state.memory.close()
            if embedder is not None:
                await embedder.close()
            await changes.close()
            if replica is not None:
                await replica.close()
            await store.close()

    app = FastAPI(
        title="session-state",
        version=__version__,
        description=f"{DESCRIPTION}\n\n{limits.describe()}",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        telemetry=fastapi_telemetry(),
    )
    app.state.limits = limits
    app.state.settings = settings
    install_problem_handlers(app)
    app.include_router(streams.router)
    app.include_router(sessions.router)
    app.include_router(directory.router)
    app.include_router(memory.router)
    app.include_router(threads.router)
    app.include_router(store.router)
    app.include_router(erasure.router)
    app.include_router(health.router)
    app.include_router(operations.router)
    if settings.ui == "on":
        app.include_router(inspector.router)
    # The last added middleware is the outermost: request context wraps all,
    # the fast paths (three appends, the read, LangGraph's step's routes) are
    # innermost (after keys and the body limit); from the API keys in, /apps/
    # paths are as sent, still percent-encoded.
    # The fast paths find their routes among the app's as assembled, read
    # when the app builds its middleware (at its start).
    routes = app.router.routes
    app.add_middleware(AppendFastPath, routes=routes, stand_in=APPEND, answer=appending.append)
    app.add_middleware(AppendFastPath, routes=routes, stand_in=BATCH, answer=appending.append_batch)
    app.add_middleware(AppendsFastPath, routes=routes)
    app.add_middleware(ReadFastPath, routes=routes)
    app.add_middleware(CheckpointFastPath, routes=routes)
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=settings.max_body_bytes)
    app.add_middleware(ApiKeyMiddleware, api_keys=api_keys, tokens=tokens)
    app.add_middleware(EncodedPathMiddleware)
    app.add_middleware(
        BrowserGuardMiddleware, open_mode=not api_keys.enabled and tokens is None, settings=settings
    )
    app.add_middleware(RequestContextMiddleware)
    if settings.cors_origins:
        # Outermost: a preflight is answered before the guard and the keys.
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "PATCH", "PUT", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "If-Match", "Last-Event-ID"],
            expose_headers=["ETag", "X-Request-ID", "Session-State-Removed-Events"],
        )
    operations.install_offline_docs(app)

    def openapi_with_security() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = laid_out(document_bearer_security(FastAPI.openapi(app)))
        return app.openapi_schema

    app.openapi = openapi_with_security  # type: ignore[method-assign]  # FastAPI's documented override
    return app


_frozen = False


def _freeze_start_up_objects() -> None:
    """What the first start-up made (modules, the app) lives as long as the
    process: moved out of the collector's way, so that its collections scan
    only what requests make. Once per process (tests start many apps)."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()
        gc.freeze()
