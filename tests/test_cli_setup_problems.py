"""Setup mistakes a newcomer makes end every command with one line naming the
setting and the fix, status 2 and no traceback (`--debug` shows it); migrate
moves down as well as up and can create the PostgreSQL database."""

import os
import signal
import subprocess
import sys
import time
import uuid

import httpx
import pytest
from sqlalchemy.engine import make_url

from session_state.cli.setup_problems import explain
from session_state.db import migrations
from session_state.db.migrations import SchemaNotCurrent
from tests.cli_runner import run_cli
from tests.conftest import POSTGRES_ADMIN_URL, drop_postgres_database, free_port


def _run(*arguments: str, env: dict[str, str] | None = None, cwd=None):
    return run_cli(*arguments, env=env, cwd=cwd)


POSTGRES_HOST = POSTGRES_ADMIN_URL.split("@", 1)[1].rsplit("/", 1)[0]


def _one_line(result) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("session-state: ")
    return lines[0]


@pytest.mark.parametrize("command", ["migrate", "serve"])
@pytest.mark.parametrize(
    ("database_url", "expected"),
    [
        ("postgresql+asyncpg://postgres@no-such-host.invalid/x", "cannot resolve the database"),
        (f"postgresql+psycopg2://postgres@{POSTGRES_HOST}/test", "write postgresql+asyncpg://"),
        ("mysql://root@localhost/x", "must start with sqlite+aiosqlite://, postgresql://"),
        ("postgresql+asyncpg://postgres@127.0.0.1:1/x", "is PostgreSQL running there?"),
        (f"postgresql+asyncpg://nobody@{POSTGRES_HOST}/test", "refused user 'nobody'"),
        (
            f"postgresql+asyncpg://postgres@{POSTGRES_HOST}/no_such_database_9f4c2e",
            "does not exist on",
        ),
        ("sqlite+aiosqlite:////nonexistent-folder/x.db", "the folder /nonexistent-folder"),
    ],
)
def test_a_bad_database_url_is_one_line_naming_the_setting(command, database_url, expected):
    arguments = ["--port", str(free_port())] if command == "serve" else []
    line = _one_line(_run(command, *arguments, "--database-url", database_url))
    assert expected in line
    assert "SESSION_STATE_DATABASE_URL" in line or "createdb" in line


def test_a_password_in_a_refused_url_is_not_printed():
    result = _run("migrate", "--database-url", "mysql://root:hunter2@localhost/x")
    assert "hunter2" not in _one_line(result)


@pytest.mark.parametrize("command", ["serve", "apps"])
def test_an_unmigrated_database_is_named_without_its_password(command, fresh_postgres_url):
    """An empty database is often one other than the operator meant (another
    shell's or .env file's URL): the line names the one it looked at, as
    serve's start-up line does."""
    url = make_url(fresh_postgres_url).set(password="hunter2")
    arguments = ["--port", str(free_port())] if command == "serve" else []
    shown_url = url.render_as_string(hide_password=False)
    line = _one_line(_run(command, *arguments, "--database-url", shown_url))
    assert (
        f"the database schema of PostgreSQL {url.host}:{url.port}/{url.database} "
        "is at revision none (empty database)"
    ) in line
    assert "run `session-state migrate`" in line
    assert "hunter2" not in line and "postgres@" not in line


def test_a_sqlite_database_behind_is_named_by_its_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    head = migrations.head_revision()
    line = explain(SchemaNotCurrent("0003", head), "sqlite+aiosqlite:///relative.db")
    assert line == (
        f"the database schema of SQLite file {tmp_path / 'relative.db'} is at revision 0003, "
        f"the latest is {head}: run `session-state migrate` "
        "(with the same SESSION_STATE_DATABASE_URL) first"
    )


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("SESSION_STATE_API_KEYS", "{bad", "SESSION_STATE_API_KEYS: not valid JSON"),
        ("SESSION_STATE_PORT", "eighty", "SESSION_STATE_PORT:"),
        ("SESSION_STATE_MAX_JSON_DEPTH", "100000", "SESSION_STATE_MAX_JSON_DEPTH:"),
        ("SESSION_STATE_DEFAULT_TTL_SECONDS", "-5", "SESSION_STATE_DEFAULT_TTL_SECONDS:"),
        ("SESSION_STATE_APP_TTL_SECONDS", "[1]", "SESSION_STATE_APP_TTL_SECONDS:"),
        (
            "SESSION_STATE_APP_TTL_SECONDS",
            '{"Chat": 0}',
            'SESSION_STATE_APP_TTL_SECONDS["Chat"]: Input should be greater than 0',
        ),
        ("SESSION_STATE_SWEEP_INTERVAL_SECONDS", "-1", "SESSION_STATE_SWEEP_INTERVAL_SECONDS:"),
        (
            "SESSION_STATE_EXPIRED_SESSION_MEMORIES",
            "drop",
            "SESSION_STATE_EXPIRED_SESSION_MEMORIES:",
        ),
    ],
)
def test_a_malformed_setting_is_one_line_naming_it(tmp_path, variable, value, expected):
    result = _run("migrate", env={variable: value}, cwd=tmp_path)
    assert expected in _one_line(result)


def test_debug_shows_the_traceback():
    result = _run("--debug", "migrate", "--database-url", "sqlite+aiosqlite:////nonexistent/x.db")
    assert result.returncode != 0
    assert "Traceback" in result.stderr


def test_version():
    result = _run("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("session-state ")


def test_migrate_moves_down_and_up_and_refuses_an_unknown_revision(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    head = f"revision {migrations.head_revision()}"
    assert head in _run("migrate", "--database-url", url).stdout
    down = _run("migrate", "--database-url", url, "--revision", "0003")
    assert down.returncode == 0 and "revision 0003" in down.stdout
    assert "no tables" in _run("migrate", "--database-url", url, "--revision", "base").stdout
    assert head in _run("migrate", "--database-url", url, "--revision", "head").stdout
    line = _one_line(_run("migrate", "--database-url", url, "--revision", "9999"))
    assert "unknown revision '9999'" in line and "0001" in line


def test_migrate_can_create_the_postgresql_database():
    name = f"created_{uuid.uuid4().hex[:8]}"
    url = f"postgresql+asyncpg://postgres@{POSTGRES_HOST}/{name}"
    try:
        result = _run("migrate", "--create-database", "--database-url", url)
        assert result.returncode == 0, result.stderr
        again = _run("migrate", "--create-database", "--database-url", url)
        assert again.returncode == 0, again.stderr
    finally:
        drop_postgres_database(name)


def test_json_logs_carry_no_terminal_colour_codes(tmp_path):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "session_state.cli", "serve", "--port", str(port)],
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("SESSION_STATE_")},
            "SESSION_STATE_LOG_FORMAT": "json",
        },
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(300):
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert "Uvicorn running on" in stderr
    assert "\x1b" not in stderr and "\\u001b" not in stderr
