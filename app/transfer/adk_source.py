"""The tables of an ADK `DatabaseSessionService`, read as dump lines for
`session-state import-adk` (the importer then treats them as it treats a
dump: idempotent, conflicts reported, a session whole or not at all).

ADK 1.20 and later write schema version "1" (recorded in its
`adk_internal_metadata` table): events as JSON in `events.event_data`,
session state in `sessions.state`, app and user state in `app_states` and
`user_states`, times as naive UTC datetimes. The older schema "0" keeps
event actions (state deltas included) as Python pickles; unpickling a
database's content runs code from it, so it is refused with what to do
instead. Events are read in ADK's order (timestamp, then id), rebuilt as
ADK's `StorageEvent.to_event` rebuilds them and stored under their JSON
names (camelCase), as ADK clients append them over the API."""

import datetime
import importlib.util
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import (
    Column,
    DateTime,
    Dialect,
    MetaData,
    String,
    Table,
    Text,
    func,
    inspect,
    select,
    text,
    tuple_,
)
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine
from sqlalchemy.types import TypeDecorator, TypeEngine

from ..core import json_codec
from ..core.errors import SetupProblem
from ..core.json_rules import find_unstorable
from . import dump_format as dump
from .adk_event_shape import camel_case_event

SCHEMA_VERSION = "1"
SESSION_PAGE = 500
_ASYNC_DRIVERS = {"sqlite": "aiosqlite", "postgresql": "asyncpg", "mysql": "aiomysql"}


class _AdkJson(TypeDecorator[Any]):
    """ADK's DynamicJSON as read: JSONB on PostgreSQL, JSON text elsewhere."""

    impl = Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(postgresql.JSONB())
        if dialect.name == "mysql":
            return dialect.type_descriptor(mysql.LONGTEXT())
        return dialect.type_descriptor(Text())

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if isinstance(value, str | bytes):
            return json_codec.loads(value)
        return value


_metadata = MetaData()
_key = String(128)
_sessions = Table(
    "sessions",
    _metadata,
    Column("app_name", _key),
    Column("user_id", _key),
    Column("id", _key),
    Column("state", _AdkJson()),
    Column("create_time", DateTime()),
    Column("update_time", DateTime()),
)
_events = Table(
    "events",
    _metadata,
    Column("id", _key),
    Column("app_name", _key),
    Column("user_id", _key),
    Column("session_id", _key),
    Column("invocation_id", String(256)),
    Column("timestamp", DateTime()),
    Column("event_data", _AdkJson()),
)
_app_states = Table("app_states", _metadata, Column("app_name", _key), Column("state", _AdkJson()))
_user_states = Table(
    "user_states",
    _metadata,
    Column("app_name", _key),
    Column("user_id", _key),
    Column("state", _AdkJson()),
)


def async_url(url: str) -> URL:
    """The ADK database's URL with the asynchronous driver of its kind; a
    one-line SetupProblem for a URL that cannot be read."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise SetupProblem("--from: not a database URL (such as sqlite:///adk.db)") from None
    backend = parsed.get_backend_name()
    driver = _ASYNC_DRIVERS.get(backend)
    if driver is None:
        raise SetupProblem(
            f"--from: {backend} databases are not read (sqlite, postgresql or mysql)"
        )
    if importlib.util.find_spec(driver) is None:
        raise SetupProblem(f"--from: reading {backend} needs its driver: pip install {driver}")
    if backend == "sqlite":
        path = Path(parsed.database or "")
        if not path.is_file():
            raise SetupProblem(f"--from: no SQLite database at {path}")
    return parsed.set(drivername=f"{backend}+{driver}")


@asynccontextmanager
async def opened_adk_source(url: str, app_name: str | None) -> AsyncIterator["AdkSource"]:
    """The ADK database at `url` (of the app, when given), read in one
    transaction; SetupProblem when it cannot be reached or read."""
    engine = create_async_engine(async_url(url), hide_parameters=True)
    try:
        try:
            connection = await engine.connect()
        except (OSError, DBAPIError) as error:
            reason = str(getattr(error, "orig", None) or error).splitlines()[0]
            raise SetupProblem(f"--from: cannot connect to the ADK database: {reason}") from None
        try:
            async with connection.begin():
                await connection.run_sync(schema_version)
                yield AdkSource(connection, app_name)
        finally:
            await connection.close()
    finally:
        await engine.dispose()


def schema_version(connection: Connection) -> str:
    """The schema version ADK recorded; SetupProblem for schema "0" and for
    a database that holds no ADK sessions."""
    inspector = inspect(connection)
    if inspector.has_table("adk_internal_metadata"):
        key = inspector.dialect.identifier_preparer.quote("key")
        row = connection.execute(
            text(f"SELECT value FROM adk_internal_metadata WHERE {key} = 'schema_version'")
        ).first()
        version = str(row[0]) if row is not None else "unknown"
        if version != SCHEMA_VERSION:
            raise SetupProblem(
                f"--from: ADK schema version {version!r}; this version of session-state "
                f"reads version {SCHEMA_VERSION!r} (ADK 1.20 and later)"
            )
        return version
    if inspector.has_table("events"):
        columns = {column["name"] for column in inspector.get_columns("events")}
        if "actions" in columns and "event_data" not in columns:
            raise SetupProblem(
                "--from: ADK's schema 0, whose event actions are Python pickles: reading "
                "them would run code stored in the database, so they are not read. Convert "
                "the database with ADK's own migration first (`adk migrate session "
                "--source_db_url=... --dest_db_url=...`, with an ADK version that has it), "
                "then import the converted database"
            )
    raise SetupProblem("--from: no ADK DatabaseSessionService tables in that database")


def _epoch(value: Any) -> float:
    """ADK's reading of its times: naive datetimes are UTC."""
    if isinstance(value, int | float):
        return float(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    return float(value.timestamp())


@dataclass
class AdkSource:
    connection: AsyncConnection
    app_name: str | None
    # Sessions and scopes that cannot be stored here (an identifier or a
    # value the API refuses), with the reason: reported, not imported.
    refused: list[str] = field(default_factory=list)

    async def lines(self) -> AsyncIterator[tuple[int, dump.Line]]:
        """App state, user state, then each session followed by its events.
        The numbers count the lines made (for messages)."""
        number = 0
        async for line in self._all():
            number += 1
            yield number, line

    async def _all(self) -> AsyncIterator[dump.Line]:
        for row in await self._rows(_app_states, _app_states.c.app_name):
            made = self._made(
                dump.AppState,
                f"app state of {row.app_name!r}",
                kind="app",
                app=row.app_name,
                state=row.state or {},
            )
            if made is not None:
                yield made
        order = (_user_states.c.app_name, _user_states.c.user_id)
        for row in await self._rows(_user_states, *order):
            made = self._made(
                dump.UserState,
                f"user state of {row.user_id!r} in {row.app_name!r}",
                kind="user",
                app=row.app_name,
                user=row.user_id,
                state=row.state or {},
            )
            if made is not None:
                yield made
        key = (_sessions.c.app_name, _sessions.c.user_id, _sessions.c.id)
        after: tuple[str, str, str] | None = None
        while True:
            page = await self._rows(_sessions, *key, after=after, limit=SESSION_PAGE)
            for row in page:
                async for line in self._session(row):
                    yield line
            if len(page) < SESSION_PAGE:
                return
            after = (page[-1].app_name, page[-1].user_id, page[-1].id)

    async def _rows(
        self,
        table: Table,
        *key: Any,
        after: tuple[str, ...] | None = None,
        limit: int | None = None,
    ) -> list[Any]:
        """Rows in key order: all of a state table (a row per app or user),
        a page of sessions (their events are read separately)."""
        statement = select(table).order_by(*key).limit(limit)
        if self.app_name is not None:
            statement = statement.where(table.c.app_name == self.app_name)
        if after is not None:
            statement = statement.where(tuple_(*key) > tuple_(*after))
        return list((await self.connection.execute(statement)).all())

    async def _session(self, row: Any) -> AsyncIterator[dump.Line]:
        of_session = (
            _events.c.app_name == row.app_name,
            _events.c.user_id == row.user_id,
            _events.c.session_id == row.id,
        )
        count = await self.connection.scalar(select(func.count()).where(*of_session))
        what = f"session {row.id!r} of user {row.user_id!r} in {row.app_name!r}"
        session = self._made(
            dump.Session,
            what,
            kind="session",
            app=row.app_name,
            user=row.user_id,
            id=row.id,
            state=row.state or {},
            # Not recorded by ADK: forks of such a session take its whole history.
            initial_state=None,
            revision=count,
            create_time=_epoch(row.create_time),
            update_time=_epoch(row.update_time),
            expire_time=None,
            ttl_seconds=None,
            events=count,
        )
        if session is None:
            return
        yield session
        statement = (
            select(_events.c.id, _events.c.invocation_id, _events.c.timestamp, _events.c.event_data)
            .where(*of_session)
            .order_by(_events.c.timestamp, _events.c.id)
        )
        seq = 0
        async for event in await self.connection.stream(statement):
            seq += 1
            data = event.event_data or {}
            problem = find_unstorable(data, dump.MAX_DEPTH)
            if problem is not None:
                where = ".".join(str(part) for part in problem.loc)
                raise dump.DumpError(f"{what}, event {event.id!r}: {where}: {problem.msg}")
            timestamp = data.get("timestamp")
            stored = {
                **data,
                "id": event.id,
                "invocation_id": event.invocation_id,
                "timestamp": _epoch(event.timestamp) if timestamp is None else timestamp,
            }
            yield dump.Event(kind="event", seq=seq, event=camel_case_event(stored))

    def _made(self, model: type[Any], what: str, **values: Any) -> Any:
        problem = find_unstorable(values, dump.MAX_DEPTH)
        if problem is not None:
            where = ".".join(str(part) for part in problem.loc)
            self.refused.append(f"{what}: {where}: {problem.msg}")
            return None
        try:
            return model.model_validate(values)
        except ValidationError as error:
            detail = error.errors()[0]
            where = ".".join(str(part) for part in detail["loc"])
            self.refused.append(f"{what}: {where}: {detail['msg']}")
            return None
