"""`session-state sessions list` / `sessions show`: an operator reads what a
running server stored, with the same database settings, on both backends."""

import json
import os
import subprocess
import sys

import httpx
import pytest

from tests.conftest import ServerProcess


def _cli(*arguments: str, database_url: str):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SESSION_STATE_")}
    return subprocess.run(
        [sys.executable, "-m", "session_state.cli", "sessions", *arguments],
        env={**clean, "SESSION_STATE_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def stored(request, tmp_path):
    """A server's database holding three sessions of app `ops`, two of `ann`."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'ops.db'}"
    else:
        url = request.getfixturevalue("fresh_postgres_url")
        assert (
            subprocess.run(
                [sys.executable, "-m", "session_state.cli", "migrate", "--database-url", url]
            ).returncode
            == 0
        )
    server = ServerProcess(url).start()
    try:
        base = f"{server.base_url}/apps/ops/users"
        for user, session in (("ann", "a1"), ("ann", "a2"), ("bob", "b1")):
            httpx.post(f"{base}/{user}/sessions", json={"sessionId": session, "state": {"k": 1}})
        for text in ("first", "second", "third"):
            event = {"author": "agent", "content": {"parts": [{"text": text}]}}
            httpx.post(f"{base}/ann/sessions/a2/events", json=event)
    finally:
        server.stop()
    return url


def test_list_pages_through_an_apps_sessions(stored):
    first = _cli("list", "--app", "ops", "--page-size", "2", "--json", database_url=stored)
    assert first.returncode == 0, first.stderr
    page = json.loads(first.stdout)
    assert len(page["sessions"]) == 2 and page["nextPageToken"]
    rest = _cli(
        "list",
        "--app",
        "ops",
        "--json",
        "--page-token",
        page["nextPageToken"],
        database_url=stored,
    )
    ids = [s["id"] for s in page["sessions"]] + [
        s["id"] for s in json.loads(rest.stdout)["sessions"]
    ]
    assert sorted(ids) == ["a1", "a2", "b1"]


def test_list_filters_by_user_and_prints_a_table(stored):
    result = _cli("list", "--app", "ops", "--user", "ann", database_url=stored)
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.strip().splitlines()
    assert header.split() == ["USER", "SESSION", "UPDATED", "(UTC)", "REVISION", "STATE", "KEYS"]
    # In the API's order, least recently updated first: a2 was written last.
    assert [row.split()[1] for row in rows] == ["a1", "a2"]
    assert rows[1].split()[4] == "3"  # a2: three events appended


def test_show_prints_state_and_the_last_events(stored):
    result = _cli(
        "show", "a2", "--app", "ops", "--user", "ann", "--events", "2", database_url=stored
    )
    assert result.returncode == 0, result.stderr
    session = json.loads(result.stdout)
    assert session["state"] == {"k": 1} and session["revision"] == 3
    assert [event["content"]["parts"][0]["text"] for event in session["events"]] == [
        "second",
        "third",
    ]


def test_show_of_an_unknown_session_says_so(stored):
    result = _cli("show", "nope", "--app", "ops", "--user", "ann", database_url=stored)
    assert result.returncode == 1
    assert "no session 'nope'" in result.stderr


def test_reading_a_missing_sqlite_file_does_not_create_it(tmp_path):
    path = tmp_path / "typo.db"
    result = _cli("list", "--app", "ops", database_url=f"sqlite+aiosqlite:///{path}")
    assert result.returncode == 2
    assert "no SQLite database at" in result.stderr
    assert not path.exists()
