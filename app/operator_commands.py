"""`session-state sessions list`, `sessions show` and `sweep`: what an
operator does without writing HTTP requests, through the same service and
database settings as `serve`."""

import argparse
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from . import json_codec
from .config import Settings
from .domain import SessionKey
from .errors import SessionNotFound
from .limits import Limits
from .service import SessionService, SessionView
from .setup_problems import SetupProblem

DEFAULT_PAGE_SIZE = 50
DEFAULT_EVENTS = 10


async def list_sessions(settings: Settings, arguments: argparse.Namespace) -> int:
    async with _service(settings) as service:
        page = await service.list_sessions(
            arguments.app, arguments.user, arguments.page_size, arguments.page_token
        )
    if arguments.json:
        _print_json(
            {
                "sessions": [_summary(session) for session in page.sessions],
                "nextPageToken": page.next_page_token,
            }
        )
        return 0
    rows = [("USER", "SESSION", "UPDATED (UTC)", "REVISION", "STATE KEYS")]
    rows += [
        (
            session.user_id,
            session.id,
            _time(session.last_update_time),
            str(session.revision),
            str(len(session.state)),
        )
        for session in page.sessions
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    if page.next_page_token:
        print(f"more: --page-token {page.next_page_token}")
    return 0


async def show_session(settings: Settings, arguments: argparse.Namespace) -> int:
    key = SessionKey(arguments.app, arguments.user, arguments.session)
    async with _service(settings) as service:
        try:
            session = await service.get_session(key, num_recent_events=arguments.events)
        except SessionNotFound:
            print(
                f"session-state: no session {arguments.session!r} of user {arguments.user!r} "
                f"in app {arguments.app!r}",
                file=sys.stderr,
            )
            return 1
    events = json_codec.loads(f"[{session.events_json}]")
    _print_json({**_summary(session), "state": session.state, "events": events})
    return 0


async def sweep(settings: Settings) -> int:
    """One sweeper pass; prints what it deleted as JSON."""
    from .db.stores import open_store
    from .sweeper import Sweeper

    store = await open_store(settings)
    try:
        sweeper = Sweeper(store, with_memories=settings.expired_session_memories == "delete")
        report = await sweeper.sweep_once()
    finally:
        await store.close()
    if report.swept is None:
        print("session-state: another process is sweeping this database; nothing done")
        return 0
    _print_json({**asdict(report.swept), "expiredLeft": report.waiting, "seconds": report.seconds})
    return 0


def _summary(session: SessionView) -> dict[str, Any]:
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


def require_existing_database(settings: Settings) -> None:
    """Reading must not create an empty SQLite database where a typo points."""
    if settings.is_sqlite:
        path = Path(make_url(settings.database_url).database or "")
        if not path.exists():
            raise SetupProblem(f"no SQLite database at {path}: check SESSION_STATE_DATABASE_URL")


@asynccontextmanager
async def _service(settings: Settings) -> AsyncIterator[SessionService]:
    """The service over its database, for one command."""
    from .db.stores import open_store

    store = await open_store(settings)
    try:
        yield SessionService(store, Limits.from_settings(settings))
    finally:
        await store.close()
