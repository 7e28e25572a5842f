"""The `session-state` command: embedded default, migrate, refusal of an old schema."""

import json
import os
import socket
import subprocess
import sys
import time

import httpx

from tests.conftest import ServerProcess, free_port


def _run(*arguments: str, env: dict[str, str] | None = None, cwd=None, clean=False):
    """`clean`: `env` is the whole environment."""
    return subprocess.run(
        [sys.executable, "-m", "session_state.cli", *arguments],
        env=dict(env or {}) if clean else {**os.environ, **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_serve_with_no_configuration_stores_in_a_sqlite_file_in_the_working_directory(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSION_STATE_")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "session_state.cli", "serve", "--port", str(port)],
        env=env,
        cwd=tmp_path,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        created = httpx.post(f"{base}/apps/a/users/u/sessions", json={"sessionId": "s"})
        assert created.status_code == 201
        assert (tmp_path / "session_state.db").exists()
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_serve_refuses_an_unmigrated_postgresql_database_and_says_what_to_run(fresh_postgres_url):
    result = _run("serve", "--port", str(free_port()), "--database-url", fresh_postgres_url)
    assert result.returncode == 2
    assert "session-state migrate" in result.stderr


def test_migrate_then_serve_on_postgresql(fresh_postgres_url):
    migrated = _run("migrate", "--database-url", fresh_postgres_url)
    assert migrated.returncode == 0, migrated.stderr
    server = ServerProcess(fresh_postgres_url).start()
    try:
        assert httpx.get(f"{server.base_url}/readyz").status_code == 200
    finally:
        server.stop()


def test_openapi_command_prints_the_spec():
    result = _run("openapi")
    assert result.returncode == 0
    assert "/apps/{app_name}/users/{user_id}/sessions" in json.loads(result.stdout)["paths"]


def test_serve_with_several_workers_shares_one_database(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'workers.db'}"
    server = ServerProcess(url, SESSION_STATE_WORKERS="2").start()
    try:
        for _ in range(6):
            created = httpx.post(f"{server.base_url}/apps/a/users/u/sessions", json={})
            assert created.status_code == 201
        listed = httpx.get(f"{server.base_url}/apps/a/users/u/sessions").json()
        assert len(listed["sessions"]) == 6
        metrics = httpx.get(f"{server.base_url}/metrics").text
        assert "session_state_http_requests_total" in metrics
    finally:
        server.stop()


def test_serve_on_a_busy_port_is_one_line_and_creates_nothing(tmp_path):
    # Two workers: uvicorn's own bind then happens in the parent, which used
    # to migrate first; one worker takes the same path up to uvicorn.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSION_STATE_")}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _run(
            "serve", "--port", str(port), "--workers", "2", env=env, cwd=tmp_path, clean=True
        )
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        f"session-state: cannot serve on 127.0.0.1:{port}: the address is already in use "
        "(another server on that port? choose another with --port or SESSION_STATE_PORT)\n"
    )
    assert "serving" not in result.stdout + result.stderr
    assert list(tmp_path.iterdir()) == []  # no session_state.db
