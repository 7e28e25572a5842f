"""A pytest plugin, loaded into the OpenAI Agents SDK's own test suite (run by
tests/client/test_openai_sdk_suite.py from the SDK's sdist, in a process of its
own): the session classes the SDK's session tests construct (SQLiteSession,
SQLAlchemySession, RedisSession, MongoDBSession, and the in-memory list session
of the human-in-the-loop scenario) are replaced, in those test modules, by
factories that make a SessionStateSession on our started server.

What one backend instance of theirs holds (an SQLite file, an engine, a Redis
client and key prefix, a Mongo client and database) becomes one user id on our
server, so that sessions of the same id on the same store share their items
and other stores stay apart, as with theirs; each test has an app of its own.

Environment (set by the test module):
    SESSION_STATE_SDK_SUITE_BASE_URL: the server.
    SESSION_STATE_SDK_SUITE_EXCLUDED: a JSON file, {module path: [test
        function name, ...]}: deselected (the reasons are in the test module).
    SESSION_STATE_SDK_SUITE_REPORT: a JSON file written at the end: how many
        sessions each test made on the server.

This module is on the SDK suite's path alone, beside their `tests` package:
it imports nothing of ours but the client.
"""

import asyncio
import contextlib
import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any, ClassVar

import pytest

from session_state_client import AsyncSessionStateClient
from session_state_client.openai_agents import SessionStateSession

BASE_URL = os.environ["SESSION_STATE_SDK_SUITE_BASE_URL"]

_test_app = "sdk-suite"
_current_test = ""
_sessions_made: dict[str, int] = {}
# Our client standing for each injected client of theirs (a Redis or Mongo
# client, an engine) in the current test: sessions on it share it, and their
# close() leaves it open, as theirs leave an injected client.
_given_clients: dict[int, AsyncSessionStateClient] = {}


def _user_id(kind: str, *parts: object) -> str:
    """One store of theirs as a user id of ours (identifiers are at most 128
    characters: the parts are hashed)."""
    digest = hashlib.sha256(repr(parts).encode()).hexdigest()[:24]
    return f"{kind}-{digest}"


def _unique(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex[:24]}"


def _given_client(theirs: object) -> AsyncSessionStateClient:
    if id(theirs) not in _given_clients:
        _given_clients[id(theirs)] = AsyncSessionStateClient(base_url=BASE_URL)
    return _given_clients[id(theirs)]


class ServerSession(SessionStateSession):
    """SessionStateSession on the suite's server, in the current test's app;
    with `given_client`, on a client it does not own."""

    def __init__(
        self,
        session_id: str,
        user_id: str,
        session_settings: Any = None,
        given_client: AsyncSessionStateClient | None = None,
    ) -> None:
        options = {"client": given_client} if given_client else {"base_url": BASE_URL}
        super().__init__(
            session_id,
            app_name=_test_app,
            user_id=user_id,
            session_settings=session_settings,
            **options,
        )
        _sessions_made[_current_test] = _sessions_made.get(_current_test, 0) + 1

    async def ping(self) -> bool:
        # Their Redis and Mongo test helpers ping before use; the tests of
        # ping itself are excluded (not part of the Session protocol).
        return True


# -- the SDK's classes, replaced by subclasses of the same name and signature ----


class SQLiteSession(ServerSession):
    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: Any = None,
    ) -> None:
        # Each :memory: SQLiteSession is a database of its own; a file is shared.
        if str(db_path) == ":memory:":
            user_id = _unique("sqlite")
        else:
            path = str(Path(db_path).resolve())
            user_id = _user_id("sqlite", path, sessions_table, messages_table)
        super().__init__(session_id, user_id, session_settings)

    def close(self) -> None:  # type: ignore[override]  # SQLiteSession.close() is sync
        """Closed at once, as SQLiteSession.close(); the client closes in the
        background when a loop runs (what close() would await)."""
        if self._closed:
            return
        self._closed = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(self.client.close())
            return
        task = loop.create_task(self.client.close())
        _closing.add(task)
        task.add_done_callback(_closing.discard)


# Closes started by SQLiteSession.close(), referenced until they end.
_closing: set[asyncio.Task[None]] = set()


class _EngineStandIn:
    """What their SQLAlchemy tests call on `session.engine` to clean up."""

    def __init__(self, session: "SQLAlchemySession") -> None:
        self._session = session

    async def dispose(self) -> None:
        await SessionStateSession.close(self._session)


class SQLAlchemySession(ServerSession):
    def __init__(
        self,
        session_id: str,
        *,
        engine: Any,
        create_tables: bool = False,
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: Any = None,
        ensure_ascii: bool = True,
        _owned_store: str | None = None,
    ) -> None:
        if _owned_store is not None:  # from_url: an engine of its own
            super().__init__(session_id, _owned_store, session_settings)
        else:
            store = _user_id("sqlalchemy", _engine_database(engine), sessions_table, messages_table)
            super().__init__(session_id, store, session_settings, _given_client(engine))
        self.engine = _EngineStandIn(self)

    @classmethod
    def from_url(
        cls,
        session_id: str,
        *,
        url: str,
        engine_kwargs: dict[str, Any] | None = None,
        session_settings: Any = None,
        **kwargs: Any,
    ) -> "SQLAlchemySession":
        # from_url makes an engine of its own: an in-memory database is new.
        database = _unique("memory") if ":memory:" in url else url
        tables = (kwargs.get("sessions_table"), kwargs.get("messages_table"))
        store = _user_id("sqlalchemy", database, *tables)
        return cls(session_id, engine=None, session_settings=session_settings, _owned_store=store)


def _engine_database(engine: Any) -> object:
    url = getattr(engine, "url", None)
    if url is None or getattr(url, "database", None) in ("", ":memory:", None):
        return id(engine)
    return url.render_as_string(hide_password=True)


class RedisSession(ServerSession):
    def __init__(
        self,
        session_id: str,
        *,
        redis_client: Any,
        key_prefix: str = "agents:session",
        ttl: int | None = None,
        session_settings: Any = None,
        _owned_store: str | None = None,
    ) -> None:
        if _owned_store is not None:  # from_url: a client of its own
            super().__init__(session_id, _owned_store, session_settings)
        else:
            store = _user_id("redis", id(redis_client), key_prefix)
            super().__init__(session_id, store, session_settings, _given_client(redis_client))

    @classmethod
    def from_url(
        cls,
        session_id: str,
        *,
        url: str,
        redis_kwargs: dict[str, Any] | None = None,
        session_settings: Any = None,
        **kwargs: Any,
    ) -> "RedisSession":
        store = _user_id("redis", url, kwargs.get("key_prefix", "agents:session"))
        return cls(
            session_id, redis_client=None, session_settings=session_settings, _owned_store=store
        )


class MongoDBSession(ServerSession):
    # Their tests reset this between sessions.
    _init_state: ClassVar[dict[Any, Any]] = {}

    def __init__(
        self,
        session_id: str,
        *,
        client: Any,
        database: str = "agents",
        sessions_collection: str = "agent_sessions",
        messages_collection: str = "agent_messages",
        session_settings: Any = None,
        _owned_store: str | None = None,
    ) -> None:
        if _owned_store is not None:  # from_uri: a client of its own
            super().__init__(session_id, _owned_store, session_settings)
        else:
            collections = (database, sessions_collection, messages_collection)
            store = _user_id("mongo", id(client), *collections)
            super().__init__(session_id, store, session_settings, _given_client(client))

    @classmethod
    def from_uri(
        cls,
        session_id: str,
        *,
        uri: str,
        database: str = "agents",
        client_kwargs: dict[str, Any] | None = None,
        session_settings: Any = None,
        **kwargs: Any,
    ) -> "MongoDBSession":
        store = _user_id("mongo", uri, database)
        return cls(session_id, client=None, session_settings=session_settings, _owned_store=store)


class ListSessionOnServer(ServerSession):
    """The scenario's in-memory SimpleListSession: a new one holds exactly the
    `history` it is given (written before its first use)."""

    def __init__(self, session_id: str = "test", history: list[Any] | None = None) -> None:
        super().__init__(session_id, _unique("list"))
        self._history = list(history or [])

    async def _ready(self) -> None:
        history, self._history = self._history, []
        if history:
            await super().add_items(history)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        await self._ready()
        return await super().get_items(limit)

    async def add_items(self, items: list[Any]) -> None:
        await self._ready()
        await super().add_items(items)

    async def pop_item(self) -> Any:
        await self._ready()
        return await super().pop_item()

    async def clear_session(self) -> None:
        self._history = []
        await super().clear_session()


REPLACEMENTS: dict[str, Any] = {
    "SQLiteSession": SQLiteSession,
    "SQLAlchemySession": SQLAlchemySession,
    "RedisSession": RedisSession,
    "MongoDBSession": MongoDBSession,
}
# Replaced only where named: other SDK tests use it as a plain test double.
MODULE_REPLACEMENTS: dict[str, dict[str, Any]] = {
    "tests/test_hitl_session_scenario.py": {"SimpleListSession": ListSessionOnServer},
}


def _excluded() -> dict[str, set[str]]:
    path = os.environ.get("SESSION_STATE_SDK_SUITE_EXCLUDED")
    if not path:
        return {}
    listed: dict[str, list[str]] = json.loads(Path(path).read_text())
    return {module: set(names) for module, names in listed.items()}


_deselected: list[str] = []
_unmatched_exclusions: list[str] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselects the excluded tests (by function name, or by test id for one
    parameter) and replaces the session classes in the other tests' modules."""
    excluded = _excluded()
    matched: set[tuple[str, str]] = set()
    kept, deselected = [], []
    patched: set[str] = set()
    for item in items:
        module_path = item.nodeid.split("::", 1)[0]
        names = {getattr(item, "originalname", item.name), item.name}
        hits = names & excluded.get(module_path, set())
        if hits:
            matched |= {(module_path, name) for name in hits}
            deselected.append(item)
            continue
        kept.append(item)
        module = getattr(item, "module", None)
        if module is None or module_path in patched:
            continue
        patched.add(module_path)
        replacements = {**REPLACEMENTS, **MODULE_REPLACEMENTS.get(module_path, {})}
        for name, replacement in replacements.items():
            if name in vars(module):
                setattr(module, name, replacement)
    _deselected.extend(item.nodeid for item in deselected)
    _unmatched_exclusions.extend(
        f"{module}::{name}"
        for module, names in excluded.items()
        for name in sorted(names)
        if (module, name) not in matched
    )
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """An app of its own for each test, set before its fixtures make sessions."""
    global _test_app, _current_test
    _test_app = f"sdk-{uuid.uuid4().hex[:16]}"
    _current_test = item.nodeid


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Closes the clients that stood for the test's injected clients (their
    loop has ended: a failure to close them cleanly is not the test's)."""
    for client in _given_clients.values():
        with contextlib.suppress(Exception):
            asyncio.run(client.close())
    _given_clients.clear()


def pytest_sessionfinish(session: pytest.Session) -> None:
    report = os.environ.get("SESSION_STATE_SDK_SUITE_REPORT")
    if report:
        Path(report).write_text(
            json.dumps(
                {
                    "sessions_made": _sessions_made,
                    "deselected": _deselected,
                    "unmatched_exclusions": _unmatched_exclusions,
                }
            )
        )
