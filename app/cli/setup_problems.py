"""Configuration and connection problems of the command line, each told in one
line that names the setting and the fix (a traceback helps no one who typed
a host name wrong). `explain` returns None for anything else: a bug keeps its
traceback."""

import json
import socket
import sqlite3
from pathlib import Path

from alembic.util import CommandError
from pydantic import ValidationError
from pydantic_settings import SettingsError
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from ..core.database_url import (
    DatabaseUrlError,
    PostgresqlAddress,
    is_postgresql_url,
    parse_postgresql_url,
)
from ..core.errors import SetupProblem
from ..core.setting_names import UnknownSetting
from ..db.migrations import SchemaNotCurrent, UnknownRevision
from .reports import database_shown

DATABASE_URL_SETTING = "SESSION_STATE_DATABASE_URL or --database-url"
# target_session_attrs that ask for the primary.
WRITABLE = ("read-write", "primary")


def explain(error: BaseException, database_url: str) -> str | None:
    """One line telling what is wrong and what to do, or None."""
    if isinstance(error, ValidationError):
        return _settings_problem(error)
    if isinstance(error, SettingsError):
        return _unparsable_setting(error)
    if isinstance(error, SchemaNotCurrent):
        # Named as serve's start-up line names it: a URL from the wrong shell
        # or .env file shows here.
        return error.told(database_shown(database_url))
    if isinstance(error, SetupProblem | UnknownRevision | UnknownSetting):
        return str(error)
    if isinstance(error, CommandError):
        return f"{error} (run `session-state migrate --help` for the revisions)"
    cause = _database_cause(error)
    if is_postgresql_url(database_url):
        try:
            address = parse_postgresql_url(database_url)
        except DatabaseUrlError:
            return None
        return _postgresql_problem(cause, address)
    url = _parsed(database_url)
    if url is None or url.get_backend_name() != "sqlite":
        return None
    return _sqlite_problem(cause, url)


def _settings_problem(error: ValidationError) -> str:
    problems = []
    for detail in error.errors():
        message = detail["msg"].removeprefix("Value error, ")
        if not detail["loc"]:
            # A rule between settings, whose message names them.
            problems.append(message)
            continue
        setting, *inside = detail["loc"]
        # Keys inside a JSON setting (app names, API keys) keep their case.
        where = "".join(f"[{json.dumps(part)}]" for part in inside)
        problems.append(f"SESSION_STATE_{str(setting).upper()}{where}: {message}")
    return "; ".join(problems)


_JSON_EXAMPLES = {
    "api_keys": ' such as {"key-1": ["app-a"], "admin-key": ["*"]}',
    "app_ttl_seconds": ' such as {"chat": 86400}',
}


def _unparsable_setting(error: SettingsError) -> str:
    # pydantic-settings says only 'error parsing value for field "api_keys"':
    # the JSON error that caused it names the position.
    field = str(error).split('"')[1] if str(error).count('"') >= 2 else "?"
    cause = error.__cause__
    reason = f"not valid JSON ({cause})" if isinstance(cause, json.JSONDecodeError) else str(cause)
    hint = _JSON_EXAMPLES.get(field, "")
    return f"SESSION_STATE_{field.upper()}: {reason}; expected JSON{hint}"


def _parsed(database_url: str) -> URL | None:
    try:
        return make_url(database_url)
    except ArgumentError:
        return None


def _database_cause(error: BaseException) -> BaseException:
    """The driver's own error under SQLAlchemy's wrapping."""
    if isinstance(error, DBAPIError) and error.orig is not None:
        orig: BaseException = error.orig
        return orig.__cause__ or orig
    return error


def _sqlite_problem(cause: BaseException, url: URL) -> str | None:
    if not isinstance(cause, sqlite3.OperationalError):
        return None
    path = Path(url.database or "")
    if not path.parent.is_dir():
        return (
            f"cannot create the SQLite file {path}: the folder {path.parent} does not exist "
            f"(create it, or change {DATABASE_URL_SETTING})"
        )
    return f"cannot open the SQLite file {path} ({cause}): check {DATABASE_URL_SETTING}"


def _postgresql_problem(cause: BaseException, address: PostgresqlAddress) -> str | None:
    # asyncpg is imported here: the SQLite default never needs it loaded.
    import asyncpg

    url = address.url
    where = address.servers_shown()
    several = len(address.endpoints) > 1
    if isinstance(cause, socket.gaierror):
        hosts = ", ".join(repr(endpoint.host) for endpoint in address.endpoints)
        named = f"one of the database hosts {hosts}" if several else f"the database host {hosts}"
        return f"cannot resolve {named}: check {DATABASE_URL_SETTING}"
    if isinstance(cause, asyncpg.exceptions.TargetServerAttributeNotMatched):
        wanted = address.target_session_attrs
        question = "is the cluster's primary up?" if wanted in WRITABLE else "is such a server up?"
        return (
            f"no database server of {where} is {wanted or 'as PGTARGETSESSIONATTRS asks'} "
            f"(target_session_attrs): {question} Check {DATABASE_URL_SETTING}"
        )
    if isinstance(cause, asyncpg.InvalidCatalogNameError):
        # createdb reads libpq's comma-separated host and port lists.
        hosts = ",".join(endpoint.host for endpoint in address.endpoints)
        ports = ",".join(str(endpoint.port or 5432) for endpoint in address.endpoints)
        host = f"-h {hosts} -p {ports} " if hosts else ""
        return (
            f"the database {url.database!r} does not exist on {where}: create it "
            f"(`session-state migrate --create-database`, or `createdb {host}"
            f"-U {url.username} {url.database}`)"
        )
    if isinstance(
        cause, asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError
    ):
        return (
            f"the database on {where} refused user {url.username!r} ({cause}): "
            f"check the user and password in {DATABASE_URL_SETTING}"
        )
    if isinstance(cause, asyncpg.InsufficientPrivilegeError):
        return (
            f"user {url.username!r} may not do this on {where} ({cause}): "
            "ask the database's administrator"
        )
    if isinstance(cause, TimeoutError):
        return (
            f"the database on {where} did not answer within SESSION_STATE_DB_TIMEOUT_SECONDS: "
            "is the host right, and is PostgreSQL running there?"
        )
    if isinstance(cause, OSError):
        # With several servers, asyncpg raises the last one's error.
        on = f"any of {where}" if several else where
        return (
            f"cannot reach the database on {on} ({cause.strerror or cause}): "
            f"is PostgreSQL running there? Check {DATABASE_URL_SETTING}"
        )
    return None
