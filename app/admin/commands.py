"""`session-state apps`, `sessions list`, `sessions show` and `sweep`: what
an operator does without writing HTTP requests, with the same database
settings as `serve`. Expired sessions are never listed or counted, as the
API's lists skip them."""

import argparse
import difflib
import json
import math
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic.alias_generators import to_camel

from ..core import json_codec
from ..core.config import Settings
from ..core.errors import BadRequest, FieldError, SessionNotFound, SetupProblem
from ..core.identifiers import name_problem
from ..core.limits import Limits
from ..core.pagination import decode_token, encode_token
from ..lifecycle.sweeper import SweptStore
from ..memory.store import MemoryStore
from ..sessions.domain import SessionKey, SessionQuery
from ..sessions.labels import parse_label_filters
from ..sessions.page_tokens import USERS_TOKEN, name_cursor, name_token
from ..sessions.service import SessionService
from ..sessions.store import SessionStore
from .sql_store import opened_operator_store
from .store import AppSummary, SessionPosition

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
DEFAULT_EVENTS = 10
ORDERS = ("newest", "oldest")
_TOKEN_KIND = "operator-sessions"
# App names offered when an --app has no sessions.
CLOSEST_APPS = 3


class OperatedStore(SessionStore, MemoryStore, SweptStore, Protocol):
    """The deployment's store (app.stores.Store), as the commands use it."""

    async def close(self) -> None: ...


# How a command opens it: app.stores.open_store, which the CLI passes.
OpenStore = Callable[[Settings], Awaitable[OperatedStore]]


async def list_apps(settings: Settings, arguments: argparse.Namespace) -> int:
    async with opened_operator_store(settings, create=False) as store:
        apps = await store.app_summaries(time.time())
    if not apps:
        print("session-state: no sessions are stored", file=sys.stderr)
        return 1
    if arguments.json:
        _print_json(
            {
                "apps": [
                    {
                        "appName": app.app_name,
                        "sessions": app.sessions,
                        "users": app.users,
                        "lastUpdateTime": app.last_update_time,
                    }
                    for app in apps
                ]
            }
        )
        return 0
    _print_table(
        ("APP", "SESSIONS", "USERS", "LAST UPDATE (UTC)"),
        [
            (app.app_name, str(app.sessions), str(app.users), _time(app.last_update_time))
            for app in apps
        ],
    )
    return 0


async def list_sessions(settings: Settings, arguments: argparse.Namespace) -> int:
    app_name = name_option("--app", arguments.app)
    user_id = name_option("--user", arguments.user)
    page_size: int = arguments.page_size
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise SetupProblem(f"--page-size: from 1 to {MAX_PAGE_SIZE}")
    where = _session_query(arguments)
    # The filter is the list's: a token of one filter is refused by another.
    identity = (
        app_name or "",
        user_id or "",
        arguments.order,
        ",".join(sorted(arguments.label or [])),
        repr(where.updated_after),
        repr(where.updated_before),
    )
    after = None if arguments.page_token is None else _position(arguments.page_token, identity)
    async with opened_operator_store(settings, create=False) as store:
        now = time.time()
        page, more = await store.page_sessions(
            app_name=app_name,
            user_id=user_id,
            newest_first=arguments.order == "newest",
            after=after,
            limit=page_size,
            now=now,
            where=where,
        )
        # Nothing at all: say what was looked for, and what exists nearby.
        apps = await store.app_summaries(now) if not page and after is None else None
    token = None
    if more:
        last = page[-1]
        position = [last.last_update_time, last.app_name, last.user_id, last.id]
        token = encode_token(_TOKEN_KIND, identity, position)
    if arguments.json:
        _print_json(
            {
                "sessions": [
                    {
                        **_summary(session),
                        "stateKeys": session.state_keys,
                        **({"labels": session.labels} if session.labels else {}),
                    }
                    for session in page
                ],
                "nextPageToken": token,
            }
        )
    if apps is not None:
        print(f"session-state: {_nothing_found(app_name, user_id, apps)}", file=sys.stderr)
        return 1
    if arguments.json:
        return 0
    _print_table(
        ("APP", "USER", "SESSION", "UPDATED (UTC)", "REVISION", "STATE KEYS", "LABELS"),
        [
            (
                session.app_name,
                session.user_id,
                session.id,
                _time(session.last_update_time),
                str(session.revision),
                str(session.state_keys),
                ",".join(f"{key}:{value}" for key, value in sorted(session.labels.items())),
            )
            for session in page
        ],
    )
    if token:
        print(f"more: --page-token {token}")
    return 0


def _session_query(arguments: argparse.Namespace) -> SessionQuery:
    labels = parse_label_filters(arguments.label or [])
    if isinstance(labels, FieldError):
        raise SetupProblem(f"--label: {labels.msg}")
    for option, value in (
        ("--updated-after", arguments.updated_after),
        ("--updated-before", arguments.updated_before),
    ):
        if value is not None and not math.isfinite(value):
            raise SetupProblem(f"{option}: a finite number of epoch seconds")
    return SessionQuery(labels, arguments.updated_after, arguments.updated_before)


async def list_users(
    settings: Settings, arguments: argparse.Namespace, *, open_store: OpenStore
) -> int:
    app_name = name_option("--app", arguments.app)
    assert app_name is not None  # required by the parser
    page_size: int = arguments.page_size
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise SetupProblem(f"--page-size: from 1 to {MAX_PAGE_SIZE}")
    try:
        after = name_cursor(arguments.page_token, USERS_TOKEN, app_name)
    except BadRequest as error:
        raise SetupProblem(f"--page-token: {error.detail} (give the same --app)") from None
    async with _service(settings, open_store) as service:
        users, next_after = await service.list_users(app_name, page_size, after)
    token = name_token(next_after, USERS_TOKEN, app_name)
    if arguments.json:
        _print_json(
            {
                "users": [
                    {
                        "userId": user.user_id,
                        "sessionCount": user.session_count,
                        "lastUpdateTime": user.last_update_time,
                    }
                    for user in users
                ],
                "nextPageToken": token,
            }
        )
    if not users and after is None:
        print(f"session-state: no sessions in app {app_name!r}", file=sys.stderr)
        return 1
    if arguments.json:
        return 0
    _print_table(
        ("USER", "SESSIONS", "LAST UPDATE (UTC)"),
        [(user.user_id, str(user.session_count), _time(user.last_update_time)) for user in users],
    )
    if token:
        print(f"more: --page-token {token}")
    return 0


def _nothing_found(app_name: str | None, user_id: str | None, apps: list[AppSummary]) -> str:
    names = [app.app_name for app in apps]
    if app_name is not None and app_name not in names:
        closest = difflib.get_close_matches(app_name, names, n=CLOSEST_APPS)
        if closest:
            return f"no sessions in app {app_name!r}; the closest apps: " + ", ".join(
                repr(name) for name in closest
            )
        return f"no sessions in app {app_name!r} (`session-state apps` lists the apps)"
    if user_id is not None:
        where = "" if app_name is None else f" in app {app_name!r}"
        return f"no sessions of user {user_id!r}{where}"
    return "no sessions are stored"


def _position(token: str, identity: tuple[str, ...]) -> SessionPosition:
    try:
        position = decode_token(token, _TOKEN_KIND, identity)
    except BadRequest as error:
        raise SetupProblem(
            f"--page-token: {error.detail} (give the same --app, --user, --order and filters)"
        ) from None
    match position:
        case [int() | float() as time_, str() as app, str() as user, str() as session] if (
            math.isfinite(time_)
        ):
            return float(time_), app, user, session
    raise SetupProblem("--page-token: not a valid page token")


# Sessions named when an id without --app and --user is not unique.
SHOWN_MATCHES = 10


async def _find_key(settings: Settings, arguments: argparse.Namespace) -> SessionKey | None:
    """The session the id names, with --app and --user where given; None
    (told on stderr) when no live session or several have it."""
    async with opened_operator_store(settings, create=False) as store:
        found = await store.keys_of_session_id(
            arguments.session,
            app_name=arguments.app,
            user_id=arguments.user,
            now=time.time(),
            limit=SHOWN_MATCHES + 1,
        )
    if len(found) == 1:
        app_name, user_id = found[0]
        return SessionKey(app_name, user_id, arguments.session)
    if not found:
        where = "".join(
            f" {label} {value!r}"
            for label, value in (("of user", arguments.user), ("in app", arguments.app))
            if value is not None
        )
        print(f"session-state: no session {arguments.session!r}{where}", file=sys.stderr)
        return None
    listed = "; ".join(f"--app {app!r} --user {user!r}" for app, user in found[:SHOWN_MATCHES])
    how_many = f"more than {SHOWN_MATCHES}" if len(found) > SHOWN_MATCHES else str(len(found))
    print(
        f"session-state: {how_many} sessions have the id {arguments.session!r}: "
        f"say which with {listed}{' ...' if len(found) > SHOWN_MATCHES else ''}",
        file=sys.stderr,
    )
    return None


async def show_session(
    settings: Settings, arguments: argparse.Namespace, *, open_store: OpenStore
) -> int:
    if arguments.app is None or arguments.user is None:
        found = await _find_key(settings, arguments)
        if found is None:
            return 1
        key = found
    else:
        key = SessionKey(arguments.app, arguments.user, arguments.session)
    async with _service(settings, open_store) as service:
        try:
            session = await service.get_session(key, num_recent_events=arguments.events)
        except SessionNotFound:
            print(
                f"session-state: no session {key.session_id!r} of user {key.user_id!r} "
                f"in app {key.app_name!r}",
                file=sys.stderr,
            )
            return 1
    events = json_codec.loads(f"[{session.events_json or ''}]")
    _print_json({**_summary(session), "state": session.state, "events": events})
    return 0


async def sweep(settings: Settings, *, open_store: OpenStore) -> int:
    """One sweeper pass; prints what it deleted as JSON."""
    from ..db.postgresql_connections import asyncpg_dsn
    from ..lifecycle.sweeper import Sweeper
    from ..sessions.changes import Change
    from ..streams.changes import tell_servers

    store = await open_store(settings)
    expired: list[Change] = []
    try:
        sweeper = Sweeper(
            store,
            with_memories=settings.expired_session_memories == "delete",
            announce=expired.append,
            tombstone_retention_seconds=settings.tombstone_retention_seconds,
        )
        report = await sweeper.sweep_once()
    finally:
        await store.close()
    if not settings.is_sqlite:
        # The servers' user streams announce the expiries at once, as when
        # their own sweeper sweeps (a lost hint: at their heartbeat).
        dsn = asyncpg_dsn(settings.database_url)
        await tell_servers(dsn, expired, settings.db_timeout_seconds)
    if report.swept is None:
        print("session-state: another process is sweeping this database; nothing done")
        return 0
    swept = {to_camel(name): rows for name, rows in asdict(report.swept).items()}
    _print_json({**swept, "expiredLeft": report.waiting, "seconds": report.seconds})
    return 0


async def reindex_memory(
    settings: Settings, arguments: argparse.Namespace, *, open_store: OpenStore
) -> int:
    """Embeds every memory not embedded by the configured embedder (of one
    app or user when given), showing progress; stopped anywhere, it goes on
    where it was when run again. Prints what it did as JSON."""

    from tqdm import tqdm

    from ..memory.embedding import open_embedder
    from ..memory.embedding_backlog import MAX_EMBEDDING_TRIES, EmbeddingBacklog

    app_name = name_option("--app", arguments.app)
    user_id = name_option("--user", arguments.user)
    embedder = open_embedder(settings)
    if embedder is None:
        raise SetupProblem(
            "SESSION_STATE_MEMORY_EMBEDDER is none: there is nothing to embed memories with"
        )
    store = await open_store(settings)
    started = time.monotonic()
    try:
        backlog = EmbeddingBacklog(store, embedder)
        # Asked for by an operator: texts refused before are tried again.
        await store.retry_refused_embeddings(embedder.model_id, app_name, user_id)
        waiting = await store.count_memories_to_embed(
            embedder.model_id, app_name, user_id, MAX_EMBEDDING_TRIES
        )
        with tqdm(
            total=waiting.waiting, desc="embedding", unit=" memories", file=sys.stderr, disable=None
        ) as progress:
            embedded = await backlog.embed_waiting(app_name, user_id, progress.update)
    finally:
        await store.close()
        await embedder.close()
    _print_json(
        {
            "embedder": embedder.model_id,
            "embedded": embedded,
            "seconds": round(time.monotonic() - started, 3),
        }
    )
    return 0


class _Session(Protocol):
    @property
    def app_name(self) -> str: ...
    @property
    def user_id(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def last_update_time(self) -> float: ...
    @property
    def revision(self) -> int: ...
    @property
    def expire_time(self) -> float | None: ...


def _summary(session: _Session) -> dict[str, Any]:
    return {
        "appName": session.app_name,
        "userId": session.user_id,
        "id": session.id,
        "lastUpdateTime": session.last_update_time,
        "revision": session.revision,
        **({} if session.expire_time is None else {"expireTime": session.expire_time}),
    }


def _time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _print_json(document: dict[str, Any]) -> None:
    print(json.dumps(document, indent=2, ensure_ascii=False))


def _print_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    lines = [header, *rows]
    widths = [max(len(line[column]) for line in lines) for column in range(len(header))]
    for line in lines:
        cells = (cell.ljust(width) for cell, width in zip(line, widths, strict=True))
        print("  ".join(cells).rstrip())


def name_option(option: str, value: str | None) -> str | None:
    """An --app or --user value, refused in one line unless the API could
    have stored it."""
    problem = None if value is None else name_problem(value)
    if problem is not None:
        raise SetupProblem(f"{option}: {problem}")
    return value


@asynccontextmanager
async def _service(settings: Settings, open_store: OpenStore) -> AsyncIterator[SessionService]:
    """The service over its database, for one command."""

    store = await open_store(settings)
    try:
        yield SessionService(store, Limits.from_settings(settings))
    finally:
        await store.close()
