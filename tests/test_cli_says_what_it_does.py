"""`serve` starts with one line naming the database, the address, the API key
mode, the workers and the schema revision; `migrate` says what it did; `serve
--help` lists the settings."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from session_state.cli.reports import migration, serving
from session_state.core.config import Settings
from session_state.db import migrations
from tests.cli_runner import run_cli
from tests.conftest import POSTGRES_ADMIN_URL, drop_postgres_database, free_port

HEAD = migrations.head_revision()
HISTORY = migrations.revisions()
POSTGRES_ADDRESS = POSTGRES_ADMIN_URL.split("@", 1)[1].rsplit("/", 1)[0]
SERVER_LISTENING = "Uvicorn running on"
CLI_DOCUMENT = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def _environment(**settings: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("SESSION_STATE_")}
    return {**clean, **settings}


def _run(*arguments: str, cwd: Path | None = None, **settings: str):
    return run_cli(*arguments, env=settings, cwd=cwd)


def _start_up_log(tmp_path: Path, *arguments: str, **settings: str) -> list[str]:
    """The log lines of `serve` up to the moment it listens."""
    log = tmp_path / "serve.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "session_state.cli", "serve", *arguments],
            env=_environment(**settings),
            cwd=tmp_path,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + 60
        while SERVER_LISTENING not in log.read_text() and time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    lines = log.read_text().splitlines()
    assert any(SERVER_LISTENING in line for line in lines), lines
    return lines


def test_serve_names_its_sqlite_file_address_open_mode_workers_and_revision(tmp_path):
    port = free_port()
    lines = _start_up_log(tmp_path, "--port", str(port), SESSION_STATE_LOG_FORMAT="text")
    serving = [line for line in lines if line.startswith("INFO session_state.cli serving ")]
    assert len(serving) == 1, lines
    line = serving[0]
    assert f"http://127.0.0.1:{port}" in line
    assert f"SQLite file {tmp_path.resolve() / 'session_state.db'}" in line
    assert "1 worker," in line
    assert "open mode (no API keys)" in line
    assert f"schema revision {HEAD}" in line
    # Before uvicorn says it listens: the line tells what is being started.
    assert lines.index(line) < next(i for i, text in enumerate(lines) if SERVER_LISTENING in text)


def test_serve_names_its_postgresql_database_without_the_password_in_json(
    tmp_path, fresh_postgres_url
):
    assert _run("migrate", "--database-url", fresh_postgres_url).returncode == 0
    database = fresh_postgres_url.rsplit("/", 1)[1]
    with_password = fresh_postgres_url.replace("postgres@", "postgres:pw-not-to-be-shown@")
    key = "k-shown-nowhere-0123456789"
    port = free_port()
    lines = _start_up_log(
        tmp_path,
        "--port",
        str(port),
        "--workers",
        "2",
        SESSION_STATE_DATABASE_URL=with_password,
        SESSION_STATE_API_KEYS=json.dumps({key: ["*"], "k-another-key-0123456789": ["a"]}),
        SESSION_STATE_LOG_FORMAT="json",
    )
    assert not any("pw-not-to-be-shown" in line or key in line for line in lines)
    records = [json.loads(line) for line in lines]
    serving = [
        r for r in records if r["logger"] == "session_state.cli" and "serving" in r["message"]
    ]
    assert len(serving) == 1, records
    record = serving[0]
    assert record["level"] == "info"
    assert f"PostgreSQL {POSTGRES_ADDRESS}/{database}" in record["message"]
    assert f"http://127.0.0.1:{port}" in record["message"]
    assert "2 workers" in record["message"] and "API keys on (2 keys)" in record["message"]
    assert record["database"] == f"PostgreSQL {POSTGRES_ADDRESS}/{database}"
    assert record["address"] == f"127.0.0.1:{port}"
    assert record["workers"] == 2 and record["api_keys"] == 2
    assert record["schema_revision"] == HEAD


def _stdout_lines(result) -> list[str]:
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()


def test_migrate_on_sqlite_says_it_created_the_file_applied_revisions_or_had_nothing_to_do(
    tmp_path,
):
    path = tmp_path / "m.db"
    url = f"sqlite+aiosqlite:///{path}"
    where = f"SQLite file {path}"
    created, applied = _stdout_lines(_run("migrate", "--database-url", url))
    assert created == f"session-state: created the database: {where}"
    assert applied == (
        f"session-state: applied revisions {HISTORY[0]}..{HEAD} to {where}; "
        f"the schema is at revision {HEAD}, the latest"
    )
    assert _stdout_lines(_run("migrate", "--database-url", url)) == [
        f"session-state: {where} is already at revision {HEAD}, the latest: nothing to do"
    ]
    down = _stdout_lines(_run("migrate", "--database-url", url, "--revision", HISTORY[-3]))
    assert down == [
        f"session-state: reverted revisions {HEAD}..{HISTORY[-2]} of {where}; "
        f"the schema is at revision {HISTORY[-3]}"
    ]
    one_up = _stdout_lines(_run("migrate", "--database-url", url, "--revision", HISTORY[-2]))
    assert one_up == [
        f"session-state: applied revision {HISTORY[-2]} to {where}; "
        f"the schema is at revision {HISTORY[-2]}"
    ]
    base = _stdout_lines(_run("migrate", "--database-url", url, "--revision", "base"))
    assert base[0].endswith("the schema is at base (no tables)")


def test_migrate_on_postgresql_says_it_created_the_database_then_that_it_is_current():
    name = f"session_state_created_{uuid.uuid4().hex[:10]}"
    url = f"postgresql+asyncpg://postgres:pw-not-to-be-shown@{POSTGRES_ADDRESS}/{name}"
    where = f"PostgreSQL {POSTGRES_ADDRESS}/{name}"
    try:
        first = _run("migrate", "--create-database", "--database-url", url)
        assert _stdout_lines(first) == [
            f"session-state: created the database: {where}",
            f"session-state: applied revisions {HISTORY[0]}..{HEAD} to {where}; "
            f"the schema is at revision {HEAD}, the latest",
        ]
        again = _run("migrate", "--create-database", "--database-url", url)
        assert _stdout_lines(again) == [
            f"session-state: {where} is already at revision {HEAD}, the latest: nothing to do"
        ]
        assert "pw-not-to-be-shown" not in first.stdout + first.stderr + again.stdout
    finally:
        drop_postgres_database(name)


def test_migrate_on_an_existing_postgresql_database_does_not_claim_to_create_it(
    fresh_postgres_url,
):
    lines = _stdout_lines(
        _run("migrate", "--create-database", "--database-url", fresh_postgres_url)
    )
    assert len(lines) == 1 and lines[0].startswith(
        f"session-state: applied revisions {HISTORY[0]}.."
    )


def test_serve_help_says_what_every_setting_does():
    """A pip user has no docs/: the help itself gives each setting's default
    and meaning."""
    result = _run("serve", "--help")
    assert result.returncode == 0
    help_text = " ".join(result.stdout.split())
    for field, info in Settings.model_fields.items():
        assert info.description, f"{field} has no description to show"
        assert f"SESSION_STATE_{field.upper()} (default: " in help_text
        assert " ".join(info.description.split()) in help_text, field
    assert "README" not in result.stdout


def test_the_cli_document_shows_the_lines_as_they_are_printed():
    document = CLI_DOCUMENT.read_text()
    url = "postgresql+asyncpg://postgres@127.0.0.1:5432/sessions"
    where = "PostgreSQL 127.0.0.1:5432/sessions"
    # The samples may name an older revision than the latest: one that exists.
    shown = re.search(r"applied revisions \d+\.\.(\d+) to PostgreSQL", document)
    assert shown is not None and shown[1] in HISTORY
    history = HISTORY[: HISTORY.index(shown[1]) + 1]
    assert f"session-state: created the database: {where}\n" in document
    assert f"session-state: {migration(where, None, shown[1], history)}\n" in document
    line, _ = serving(Settings(database_url=url, workers=2), 0, shown[1])
    assert f"INFO session_state.cli {line}\n" in document
