"""A settings mistake stops every command with one line on stderr naming the
setting, exit code 2 and no traceback: each setting's bad values, and a
SESSION_STATE_ variable that is no setting (a typo once served a new, empty
SQLite file instead of the configured PostgreSQL)."""

import re
import subprocess
from pathlib import Path

import pytest

from session_state.cli.main import build_parser
from session_state.core.config import Settings
from session_state.core.setting_names import (
    USED_ELSEWHERE,
    UnknownSetting,
    refuse_unknown_settings,
    unknown_settings,
)
from tests.cli_runner import run_cli
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent

# Each setting's mistakes; a setting added without one fails its test below.
BAD_VALUES = {
    "database_url": [
        "mysql://root@localhost/x",
        "postgresql+psycopg2://postgres@localhost/x",
        "postgresql://postgres@h1:5451,h2:54x2/x",
        "postgresql://postgres@localhost/x?target_session_attrs=writable",
        # Each connection would open a database of its own.
        "sqlite+aiosqlite:///:memory:",
    ],
    "read_database_url": [
        "mysql://root@replica/x",
        "postgresql://postgres@r1:5451,r2:54x2/x",
        # Replicas of a SQLite file (the default database URL).
        "postgresql://postgres@replica/x",
    ],
    "listen_database_url": [
        "mysql://root@direct/x",
        "sqlite+aiosqlite:///listen.db",
        # Listening beside a SQLite file (the default database URL).
        "postgresql://postgres@direct/x",
    ],
    "max_replica_lag_seconds": ["0", "inf", "soon"],
    "host": ["0.0.0.0:8000", "http://localhost"],
    "port": ["eighty", "0", "70000"],
    "workers": ["0", "two"],
    "max_body_bytes": ["100", "8MB"],
    "db_pool_size": ["0"],
    "db_max_overflow": ["-1"],
    "db_pooler": ["pgbouncer", "yes"],
    "append_batch_size": ["0", "1001"],
    "db_timeout_seconds": ["0", "inf", "soon"],
    "log_level": ["verbose", "10"],
    "log_format": ["yaml"],
    "ui": ["no", "true"],
    "memory_search_when_encrypted": ["keyword"],
    "api_keys": ['{"short": ["*"]}', '{"long-enough-key-0123": []}', "{bad", '["k"]'],
    "api_keys_file": ["/nonexistent-folder/keys.json"],
    "allowed_hosts": ["http://api", "api, bad host"],
    "max_json_depth": ["100000", "1"],
    "max_key_length": ["0", "300"],
    "max_state_bytes": ["10"],
    "max_event_bytes": ["10", "100000000"],
    "max_response_bytes": ["1000", "70000"],
    "max_store_scan_rows": ["99", "-1"],
    "request_head_timeout_seconds": ["60", "0"],
    "default_ttl_seconds": ["-5", "nan", "1e20"],
    "app_ttl_seconds": ["[1]", '{"chat": 0}', '{"chat": "a day"}'],
    "expired_session_memories": ["drop"],
    "sweep_interval_seconds": ["-1", "inf"],
    "allow_unknown_settings": ["DATABSE_URL"],
    "memory_embedder": ["bert", "openai"],
    "memory_embedder_url": ["localhost:11434", "ftp://models"],
    "memory_embedder_model": ["", "m" * 201],
    "memory_embedder_api_key": ["two words", "tab\tkey"],
    "memory_embedder_api_key_file": ["/nonexistent-folder/key"],
    "memory_embedder_dimensions": ["0", "100000"],
    "memory_embedder_batch_size": ["0", "5000"],
    "memory_embedder_timeout_seconds": ["0", "inf", "1000"],
    "memory_min_similarity": ["2", "nan", "high"],
    "memory_relevance_margin": ["2", "-2", "nan", "high"],
    "stream_heartbeat_seconds": ["0", "60", "nan"],
    "stream_send_timeout_seconds": ["-1", "inf"],
    "tombstone_retention_seconds": ["0", "inf", "nan", "7d"],
    "cors_origins": ["ui.example.com", "https://ui.example.com/app", "*"],
    "encryption_keys": [
        '{"k1": "c2hvcnQ="}',
        '{"k 1": "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="}',
        '{"k1": "not base64!"}',
        '{"k1": 7}',
        '["k1"]',
        "{bad",
    ],
    # Alone, each of these is half a configuration of end-user tokens.
    "jwt_jwks": [
        "http://id.example.com/jwks.json",
        "/nonexistent-folder/jwks.json",
        "https://",
        "README.md",
    ],
    "jwt_issuer": ["https://id.example.com/"],
    "jwt_audience": ["session-state"],
    "jwt_user_claim": [""],
    "jwt_apps_claim": ["apps"],
    "jwt_apps": ["travel"],
    "jwt_algorithms": ["HS256", "none", "RS256,HS512", ""],
    "jwt_jwks_min_refresh_seconds": ["-1", "inf", "1e6"],
}


def _run(*arguments: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*arguments, env=env, cwd=cwd)


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("session-state: ")
    return lines[0]


@pytest.mark.parametrize("field", sorted(Settings.model_fields))
def test_each_bad_value_of_each_setting_is_one_line_naming_it(tmp_path, field):
    if field not in BAD_VALUES:
        pytest.fail(f"add the bad values of the new setting {field} to BAD_VALUES")
    variable = f"SESSION_STATE_{field.upper()}"
    for value in BAD_VALUES[field]:
        line = _one_line(_run("migrate", env={variable: value}, cwd=tmp_path))
        assert variable in line, (value, line)
    # Refused before anything was done: no SQLite file was created.
    assert not (tmp_path / "session_state.db").exists()


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SESSION_STATE_LOG_LEVEL", "verbose"),
        ("SESSION_STATE_API_KEYS", '{"short-key": ["*"]}'),
        ("SESSION_STATE_HOST", "localhost:8000"),
    ],
)
def test_serve_refuses_a_bad_value_in_one_line(tmp_path, variable, value):
    result = _run("serve", "--port", str(free_port()), env={variable: value}, cwd=tmp_path)
    assert variable in _one_line(result)


def test_a_bad_encryption_key_is_not_printed(tmp_path):
    key = "c2VjcmV0LWtleS10aGF0LWlzLXNob3J0"
    line = _one_line(
        _run("migrate", env={"SESSION_STATE_ENCRYPTION_KEYS": f'{{"k1": "{key}"}}'}, cwd=tmp_path)
    )
    assert "'k1'" in line and key not in line


def test_a_short_api_key_is_not_printed(tmp_path):
    line = _one_line(
        _run("migrate", env={"SESSION_STATE_API_KEYS": '{"hunter2": ["*"]}'}, cwd=tmp_path)
    )
    assert "hunter2" not in line and "at least 16 characters" in line


def test_a_setting_is_read_whatever_the_case_of_its_name(tmp_path):
    result = _run("migrate", env={"session_state_log_level": "verbose"}, cwd=tmp_path)
    assert "SESSION_STATE_LOG_LEVEL" in _one_line(result)


# Arguments a command needs before it reads its settings (`apps` and others
# added later need none, or they fail here with argparse's usage).
REQUIRED_ARGUMENTS = {
    "serve": lambda tmp_path: ["--port", str(free_port())],
    "sessions": lambda tmp_path: ["list", "--app", "a"],
    "export": lambda tmp_path: ["--output", str(tmp_path / "dump.jsonl")],
    "import": lambda tmp_path: [str(tmp_path / "dump.jsonl")],
    "import-adk": lambda tmp_path: ["--from", f"sqlite:///{tmp_path / 'adk.db'}"],
    "memory": lambda tmp_path: ["reindex"],
    "users": lambda tmp_path: ["--app", "a"],
}


def _commands() -> list[str]:
    parser = build_parser()
    subcommands = next(a for a in parser._actions if a.choices and a.dest == "command")
    return sorted(subcommands.choices)


@pytest.mark.parametrize("command", _commands())
def test_a_misspelled_setting_stops_every_command_naming_the_closest_setting(tmp_path, command):
    arguments = REQUIRED_ARGUMENTS.get(command, lambda _: [])(tmp_path)
    env = {"SESSION_STATE_DATABSE_URL": f"sqlite+aiosqlite:///{tmp_path / 'meant.db'}"}
    line = _one_line(_run(command, *arguments, env=env, cwd=tmp_path))
    assert "SESSION_STATE_DATABSE_URL" in line
    assert "did you mean SESSION_STATE_DATABASE_URL?" in line
    assert "SESSION_STATE_ALLOW_UNKNOWN_SETTINGS" in line
    assert list(tmp_path.iterdir()) == []  # nothing was created, neither file


def test_every_unknown_name_is_named_in_the_one_line(tmp_path):
    env = {"SESSION_STATE_PROT": "8000", "SESSION_STATE_NONSENSE": "1"}
    line = _one_line(_run("migrate", env=env, cwd=tmp_path))
    assert "SESSION_STATE_PROT (did you mean SESSION_STATE_PORT?)" in line
    assert "SESSION_STATE_NONSENSE" in line and "SESSION_STATE_NONSENSE (" not in line


def test_listed_unknown_names_are_allowed_and_others_still_refused(tmp_path):
    env = {
        "SESSION_STATE_ALLOW_UNKNOWN_SETTINGS": "SESSION_STATE_FROM_A_NEWER_VERSION",
        "SESSION_STATE_FROM_A_NEWER_VERSION": "1",
    }
    allowed = _run("migrate", env=env, cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    refused = _run("migrate", env={**env, "SESSION_STATE_OTHER": "1"}, cwd=tmp_path)
    line = _one_line(refused)
    assert "SESSION_STATE_OTHER" in line and "NEWER_VERSION" not in line


def test_variables_of_the_client_compose_ci_and_tests_are_not_refused(tmp_path):
    env = {name: "x" for name in USED_ELSEWHERE}
    env |= {"SESSION_STATE_TEST_POSTGRES_URL": "postgresql://x", "SESSION_STATE_TEST_ANY": "1"}
    result = _run("migrate", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_the_clients_variables_are_known_to_the_server():
    from session_state_client import _constants

    client_variables = {value for name, value in vars(_constants).items() if name.endswith("_ENV")}
    assert client_variables and client_variables <= USED_ELSEWHERE


def test_every_session_state_variable_the_project_uses_is_known():
    used: set[str] = set()
    sources = [ROOT / "Dockerfile", ROOT / "docker-compose.yml", ROOT / "tests" / "conftest.py"]
    for folder in ("app", "client", "bench", ".ci"):
        sources += [path for path in (ROOT / folder).rglob("*") if path.is_file()]
    for path in sources:
        if path.suffix in {".py", ".sh", ".yml", ".yaml", ".toml", ""}:
            text = path.read_text(errors="replace")
            used |= set(re.findall(r"SESSION_STATE_[A-Z0-9_]*[A-Z0-9]", text))
    assert "SESSION_STATE_BASE_URL" in used and "SESSION_STATE_PUBLISH_ADDRESS" in used
    assert unknown_settings(used, allowed=()) == []


def test_the_configuration_shows_the_refusal_of_a_misspelled_name_as_it_is_printed():
    with pytest.raises(UnknownSetting) as refusal:
        refuse_unknown_settings({"SESSION_STATE_DATABSE_URL": "sqlite+aiosqlite:///x.db"})
    documented = (ROOT / "docs" / "configuration.md").read_text()
    assert f"session-state: {refusal.value}\n" in documented
