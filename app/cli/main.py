"""The `session-state` command: serve, migrate, openapi.

Configuration and connection problems end a command with one line on stderr
and status 2 (app.cli.setup_problems); `--debug` shows the traceback instead.
"""

import argparse
import asyncio
import contextlib
import errno
import importlib.metadata
import json
import logging
import logging.config
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from ..core.api_keys import ApiKeys
from ..core.config import Settings
from ..core.observability import logging_config
from ..core.setting_names import refuse_unknown_settings
from .settings_help import DESCRIPTION as SERVE_DESCRIPTION
from .settings_help import add_setting_groups

logger = logging.getLogger("session_state.cli")


def _settings_from(arguments: argparse.Namespace) -> Settings:
    # Command-line values become environment variables so that every uvicorn
    # worker process reads the same settings.
    for name in ("database_url", "host", "port", "workers"):
        value = getattr(arguments, name, None)
        if value is not None:
            os.environ[f"SESSION_STATE_{name.upper()}"] = str(value)
    return Settings()


def _warn_if_open_to_the_network(settings: Settings, keys: ApiKeys) -> None:
    loopback = settings.host in ("localhost", "::1") or settings.host.startswith("127.")
    if not keys.enabled and settings.jwt_jwks is None and not loopback:
        logger.warning(
            "serving on %s with no API keys: anyone who can reach it can read and write "
            "every session (set SESSION_STATE_API_KEYS or SESSION_STATE_API_KEYS_FILE); "
            "requests by a Host other than localhost or this address are refused unless "
            "it is listed in SESSION_STATE_ALLOWED_HOSTS",
            settings.host,
        )


async def _prepare(settings: Settings) -> None:
    from ..stores import open_store

    store = await open_store(settings)
    await store.close()


def serve(arguments: argparse.Namespace) -> int:
    from ..db.migrations import head_revision
    from .reports import serving

    settings = _settings_from(arguments)
    logging.config.dictConfig(logging_config(settings.log_level, settings.log_format == "json"))
    keys = ApiKeys.from_settings(settings.api_keys, settings.api_keys_file)
    _warn_if_open_to_the_network(settings, keys)
    metrics_directory = None
    if settings.workers > 1 and "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        # Workers write their metrics here, so /metrics sums every process.
        metrics_directory = tempfile.mkdtemp(prefix="session-state-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_directory
    # Migrate (SQLite) or check (PostgreSQL) once, before any worker starts,
    # and only once the address is known to be free: a busy port then leaves
    # no database file behind. The address is held meanwhile and let go just
    # before uvicorn binds it (in this process, for any number of workers).
    with _address_held(settings.host, settings.port):
        asyncio.run(_prepare(settings))
    # _prepare refuses any schema but the latest.
    message, facts = serving(settings, keys.count, head_revision())
    logger.info(message, extra=facts)
    # uvicorn re-raises the SIGTERM it handled once its graceful shutdown is
    # done; with this handler in place that ends the process with status 0.
    signal.signal(signal.SIGTERM, _exit_cleanly)
    try:
        _run_uvicorn(settings)
    finally:
        if metrics_directory is not None:
            shutil.rmtree(metrics_directory, ignore_errors=True)
    return 0


@contextlib.contextmanager
def _address_held(host: str, port: int) -> Iterator[None]:
    """Binds every address `host` stands for, as uvicorn will, or raises a
    SetupProblem naming the address and why it cannot be served."""
    from ..core.errors import SetupProblem

    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    held: list[socket.socket] = []
    try:
        try:
            addresses = socket.getaddrinfo(
                host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
            )
        except socket.gaierror as error:
            raise SetupProblem(
                f"cannot serve on {where}: no such address ({error.strerror}); "
                "check SESSION_STATE_HOST or --host"
            ) from None
        for family, kind, protocol, _name, address in addresses:
            sock = socket.socket(family, kind, protocol)
            held.append(sock)
            # As uvicorn and asyncio bind it: a port in TIME_WAIT is free.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as error:
                reason = (
                    "the address is already in use (another server on that port? "
                    "choose another with --port or SESSION_STATE_PORT)"
                    if error.errno == errno.EADDRINUSE
                    else (error.strerror or str(error)).lower()
                )
                raise SetupProblem(f"cannot serve on {where}: {reason}") from None
        yield
    finally:
        for sock in held:
            sock.close()


def _exit_cleanly(_signal_number: int, _frame: object) -> None:
    raise SystemExit(0)


def _run_uvicorn(settings: Settings) -> None:
    import uvicorn

    from ..http.uvicorn_protocol import RequestHeadTimeoutProtocol

    uvicorn.run(
        f"{__name__.split('.')[0]}.main:create_app",
        factory=True,
        http=RequestHeadTimeoutProtocol,  # closes connections slow to send a request head
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=settings.log_level,
        log_config=logging_config(settings.log_level, settings.log_format == "json"),
        access_log=False,  # RequestContextMiddleware logs each request, with its id
        timeout_graceful_shutdown=30,
    )


def migrate(arguments: argparse.Namespace) -> int:
    from ..db import migrations
    from ..db.engine import engine_for_url
    from ..db.poolers import sqlalchemy_connect_args
    from ..db.provisioning import create_database_if_missing
    from . import reports as cli_reports

    settings = _settings_from(arguments)
    database = cli_reports.database_shown(settings.database_url)
    sqlite_file = cli_reports.sqlite_file(settings.database_url)

    async def run() -> None:
        # SQLite makes its file on the first connection; PostgreSQL only if asked.
        created = sqlite_file is not None and not sqlite_file.exists()
        if arguments.create_database:
            created = await create_database_if_missing(settings.database_url) or created
        engine = engine_for_url(
            settings.database_url, connect_args=sqlalchemy_connect_args(settings.db_pooler)
        )
        try:
            before = await migrations.current_revision(engine)
            if created:
                print(f"session-state: created the database: {database}")
            await migrations.move_to(engine, arguments.revision)
            after = await migrations.current_revision(engine)
            summary = cli_reports.migration(database, before, after, migrations.revisions())
            print(f"session-state: {summary}")
        finally:
            await engine.dispose()

    asyncio.run(run())
    return 0


def sessions(arguments: argparse.Namespace) -> int:
    from ..admin import commands as operator_commands
    from ..admin.sql_store import require_existing_database
    from ..stores import open_store

    settings = _settings_from(arguments)
    require_existing_database(settings)
    if arguments.sessions_command == "list":
        listed: int = asyncio.run(operator_commands.list_sessions(settings, arguments))
        return listed
    shown: int = asyncio.run(
        operator_commands.show_session(settings, arguments, open_store=open_store)
    )
    return shown


def apps(arguments: argparse.Namespace) -> int:
    from ..admin import commands as operator_commands

    settings = _settings_from(arguments)
    exit_code: int = asyncio.run(operator_commands.list_apps(settings, arguments))
    return exit_code


def users(arguments: argparse.Namespace) -> int:
    from ..admin import commands as operator_commands
    from ..admin.sql_store import require_existing_database
    from ..stores import open_store

    settings = _settings_from(arguments)
    require_existing_database(settings)
    exit_code: int = asyncio.run(
        operator_commands.list_users(settings, arguments, open_store=open_store)
    )
    return exit_code


def sweep(arguments: argparse.Namespace) -> int:
    from ..admin import commands as operator_commands
    from ..admin.sql_store import require_existing_database
    from ..stores import open_store

    settings = _settings_from(arguments)
    require_existing_database(settings)
    exit_code: int = asyncio.run(operator_commands.sweep(settings, open_store=open_store))
    return exit_code


def memory(arguments: argparse.Namespace) -> int:
    from ..admin import commands as operator_commands
    from ..admin.sql_store import require_existing_database
    from ..stores import open_store

    settings = _settings_from(arguments)
    require_existing_database(settings)
    exit_code: int = asyncio.run(
        operator_commands.reindex_memory(settings, arguments, open_store=open_store)
    )
    return exit_code


def _log_audit_lines(settings: Settings) -> None:
    """An operator's command that the audit trail records (app.core.audit)
    writes its line on stderr, in the server's log format."""
    logging.config.dictConfig(logging_config(settings.log_level, settings.log_format == "json"))


def reencrypt(arguments: argparse.Namespace) -> int:
    from ..admin.sql_store import require_existing_database
    from ..encryption.commands import run_reencrypt

    settings = _settings_from(arguments)
    require_existing_database(settings)
    _log_audit_lines(settings)
    exit_code: int = asyncio.run(run_reencrypt(settings, arguments.batch_size))
    return exit_code


def export(arguments: argparse.Namespace) -> int:
    from ..transfer import commands

    settings = _settings_from(arguments)
    _log_audit_lines(settings)
    exit_code: int = asyncio.run(commands.export(settings, arguments))
    return exit_code


def import_dump(arguments: argparse.Namespace) -> int:
    from ..transfer import commands

    settings = _settings_from(arguments)
    _log_audit_lines(settings)
    exit_code: int = asyncio.run(commands.import_dump(settings, arguments))
    return exit_code


def import_adk(arguments: argparse.Namespace) -> int:
    from ..transfer import commands

    settings = _settings_from(arguments)
    _log_audit_lines(settings)
    exit_code: int = asyncio.run(commands.import_adk(settings, arguments))
    return exit_code


def openapi(_arguments: argparse.Namespace) -> int:
    from ..main import create_app

    spec = create_app(Settings()).openapi()
    print(json.dumps(spec, indent=2, ensure_ascii=False))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="session-state",
        description="Sessions, events and scoped state of AI agents behind a REST API.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of a setup problem"
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve_parser = commands.add_parser(
        "serve",
        help="run the HTTP API",
        description=SERVE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # Each option is shown in the group of the setting it overrides.
    options = add_setting_groups(serve_parser)
    options["host"].add_argument("--host", help="address to bind (default 127.0.0.1)")
    options["port"].add_argument("--port", type=int, help="port (default 8000)")
    options["workers"].add_argument("--workers", type=int, help="worker processes (default 1)")
    options["database_url"].add_argument(
        "--database-url", help="overrides SESSION_STATE_DATABASE_URL"
    )
    serve_parser.set_defaults(handler=serve)

    migrate_parser = commands.add_parser(
        "migrate", help="move the database schema to a revision (up or down)"
    )
    migrate_parser.add_argument("--database-url", help="overrides SESSION_STATE_DATABASE_URL")
    migrate_parser.add_argument(
        "--revision", default="head", help="target: head (default), base, or 0001, 0002, ..."
    )
    migrate_parser.add_argument(
        "--create-database",
        action="store_true",
        help="create the PostgreSQL database first if it does not exist",
    )
    migrate_parser.set_defaults(handler=migrate)

    apps_parser = commands.add_parser(
        "apps", help="apps with live sessions: how many sessions and users, the last update"
    )
    apps_parser.add_argument("--json", action="store_true", help="print JSON")
    apps_parser.add_argument("--database-url", help="overrides SESSION_STATE_DATABASE_URL")
    apps_parser.set_defaults(handler=apps)

    users_parser = commands.add_parser(
        "users", help="an app's users with live sessions: how many sessions, the last update"
    )
    users_parser.add_argument("--app", required=True, help="the app")
    users_parser.add_argument(
        "--page-size", type=int, default=100, help="users per page, 1 to 1000 (default 100)"
    )
    users_parser.add_argument("--page-token", help="the token a previous page printed")
    users_parser.add_argument("--json", action="store_true", help="print JSON")
    users_parser.add_argument("--database-url", help="overrides SESSION_STATE_DATABASE_URL")
    users_parser.set_defaults(handler=users)

    _add_sessions_parser(commands)

    sweep_parser = commands.add_parser(
        "sweep", help="delete expired sessions once (for cron, instead of serve's sweeper)"
    )
    sweep_parser.add_argument("--database-url", help="overrides SESSION_STATE_DATABASE_URL")
    sweep_parser.set_defaults(handler=sweep)

    memory_parser = commands.add_parser("memory", help="long-term memory's vectors")
    memory_actions = memory_parser.add_subparsers(
        dest="memory_command", metavar="{reindex}", required=True
    )
    reindex_parser = memory_actions.add_parser(
        "reindex",
        help="embed the memories not embedded by the configured embedder (resumable, with "
        "progress)",
    )
    reindex_parser.add_argument("--app", help="only this app's memories")
    reindex_parser.add_argument("--user", help="only this user's memories (of any app)")
    reindex_parser.add_argument("--database-url", help="overrides SESSION_STATE_DATABASE_URL")
    reindex_parser.set_defaults(handler=memory)

    reencrypt_parser = commands.add_parser(
        "reencrypt",
        help="move every stored value to the first of SESSION_STATE_ENCRYPTION_KEYS and seal "
        "plaintext ones (resumable, with progress, safe while servers run)",
    )
    reencrypt_parser.add_argument(
        "--batch-size", type=int, default=500, help="rows per transaction (default 500)"
    )
    reencrypt_parser.add_argument("--database-url", help="overrides SESSION_STATE_DATABASE_URL")
    reencrypt_parser.set_defaults(handler=reencrypt)

    _add_transfer_parsers(commands)

    openapi_parser = commands.add_parser("openapi", help="print the OpenAPI spec as JSON")
    openapi_parser.set_defaults(handler=openapi)
    return parser


def _add_transfer_parsers(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    export_parser = commands.add_parser(
        "export", help="write sessions, events, state and memories as a dump (JSON Lines)"
    )
    export_parser.add_argument("--app", help="only this app")
    export_parser.add_argument("--user", help="only this user (of every app, or of --app)")
    export_parser.add_argument("--output", type=Path, help="the file to write (default stdout)")
    export_parser.add_argument("--database-url", help="overrides SESSION_STATE_DATABASE_URL")
    export_parser.set_defaults(handler=export)

    import_parser = commands.add_parser(
        "import", help="load a dump; what is stored already is skipped, conflicts are reported"
    )
    import_parser.add_argument("file", type=Path, help="the dump (- for stdin)")
    import_parser.add_argument("--database-url", help="overrides SESSION_STATE_DATABASE_URL")
    import_parser.set_defaults(handler=import_dump)

    adk_parser = commands.add_parser(
        "import-adk",
        help="import the sessions and state of an ADK DatabaseSessionService (schema 1)",
    )
    adk_parser.add_argument(
        "--from",
        dest="from_url",
        required=True,
        help="the ADK database's SQLAlchemy URL (sqlite, postgresql or mysql)",
    )
    adk_parser.add_argument("--app", help="only this app")
    adk_parser.add_argument("--database-url", help="overrides SESSION_STATE_DATABASE_URL")
    adk_parser.set_defaults(handler=import_adk)


def _add_sessions_parser(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    from ..admin.commands import DEFAULT_EVENTS, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, ORDERS

    sessions_parser = commands.add_parser("sessions", help="look at stored sessions")
    sessions_parser.set_defaults(handler=sessions)
    # The metavar is what a missing subcommand's error names: the choices.
    actions = sessions_parser.add_subparsers(
        dest="sessions_command", metavar="{list,show}", required=True
    )

    list_parser = actions.add_parser(
        "list", help="live sessions of every app or of one, newest first, paged"
    )
    list_parser.add_argument("--app", help="only this app's sessions")
    list_parser.add_argument("--user", help="only this user's sessions")
    list_parser.add_argument(
        "--order",
        choices=ORDERS,
        default=ORDERS[0],
        help="by last update: newest first (default) or oldest first (the API's order)",
    )
    list_parser.add_argument(
        "--page-size",
        type=int,
        default=DEFAULT_PAGE_SIZE,
        help=f"sessions per page, 1 to {MAX_PAGE_SIZE} (default {DEFAULT_PAGE_SIZE})",
    )
    list_parser.add_argument(
        "--label",
        action="append",
        help="key:value (has that label) or key (has the key); repeat: all must match",
    )
    list_parser.add_argument(
        "--updated-after", type=float, help="only sessions last updated at or after (epoch s)"
    )
    list_parser.add_argument(
        "--updated-before", type=float, help="only sessions last updated before (epoch s)"
    )
    list_parser.add_argument("--page-token", help="the token a previous page printed")
    list_parser.add_argument("--json", action="store_true", help="print JSON")
    list_parser.add_argument("--database-url", help="overrides SESSION_STATE_DATABASE_URL")

    show_parser = actions.add_parser("show", help="a session's state and last events, as JSON")
    show_parser.add_argument("session", help="session id")
    show_parser.add_argument("--app", help="app name (needed when another app has the id)")
    show_parser.add_argument("--user", help="user id (needed when another user has the id)")
    show_parser.add_argument(
        "--events", type=int, default=DEFAULT_EVENTS, help="how many recent events (default 10)"
    )
    show_parser.add_argument("--database-url", help="overrides SESSION_STATE_DATABASE_URL")


def _version() -> str:
    try:
        return importlib.metadata.version("session-state")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    try:
        refuse_unknown_settings(os.environ)
        exit_code: int = arguments.handler(arguments)
    except Exception as error:
        problem = _setup_problem(error)
        if problem is None or arguments.debug:
            raise
        # A driver's thread may still fail on the closed event loop after a
        # failed connect (aiosqlite's, racing the exit): seen as a stray
        # traceback under the one line that tells the story.
        threading.excepthook = _quietly
        print(f"session-state: {problem}", file=sys.stderr)
        return 2
    return exit_code


def _quietly(_arguments: threading.ExceptHookArgs) -> None:
    """Drops a thread's exception: the process is already exiting with its
    problem reported."""


def _setup_problem(error: Exception) -> str | None:
    from ..core.config import DEFAULT_DATABASE_URL
    from .setup_problems import explain

    # _settings_from put a --database-url into the environment.
    return explain(error, os.environ.get("SESSION_STATE_DATABASE_URL", DEFAULT_DATABASE_URL))


if __name__ == "__main__":
    sys.exit(main())
