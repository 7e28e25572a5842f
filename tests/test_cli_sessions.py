"""`session-state apps`, `sessions list` and `sessions show`: an operator
finds what a running server stored, with the same database settings, on
both backends. Expired sessions are neither listed nor counted, as the API's
lists skip them; a list that finds nothing says what it looked for."""

import asyncio
import json
import time

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import create_async_engine

from session_state.core.config import Settings
from session_state.sessions.tables import sessions
from tests.cli_runner import run_cli
from tests.conftest import asgi_client, run_blocking

# Newest first: a2 got the last events, the expired shop/cy/c2 is never listed.
NEWEST_FIRST = ["a2", "c1", "b1", "a1"]


def _cli(*arguments: str, database_url: str):
    return run_cli(*arguments, env={"SESSION_STATE_DATABASE_URL": database_url})


def _expire(url: str, session_id: str) -> None:
    """As time would: its expiry passed (the server is stopped)."""

    async def run() -> None:
        engine = create_async_engine(url)
        try:
            async with engine.begin() as connection:
                done = await connection.execute(
                    update(sessions)
                    .where(sessions.c.id == session_id)
                    .values(expire_time=time.time() - 60)
                )
                assert done.rowcount == 1
        finally:
            await engine.dispose()

    asyncio.run(run())


async def _write_sessions(url: str) -> None:
    # A generous timeout, as the settings fixture's: a loaded machine once took over
    # the 5 s default to connect.
    settings = Settings(database_url=url, sweep_interval_seconds=0, db_timeout_seconds=30)
    async with asgi_client(settings) as http:
        for app, user, session in (
            ("ops", "ann", "a1"),
            ("ops", "ann", "a2"),
            ("ops", "bob", "b1"),
            ("shop", "cy", "c1"),
            ("shop", "cy", "c2"),
        ):
            labels = {"a1": {"env": "prod"}, "b1": {"env": "prod", "team": "x"}}.get(session)
            created = await http.post(
                f"/apps/{app}/users/{user}/sessions",
                json={"sessionId": session, "state": {"k": 1}, "labels": labels},
            )
            assert created.status_code == 201, created.text
        for text, delta in (("first", {}), ("second", {}), ("third", {"app:m": 1, "user:n": 2})):
            event = {
                "author": "agent",
                "content": {"parts": [{"text": text}]},
                "actions": {"stateDelta": delta},
            }
            appended = await http.post("/apps/ops/users/ann/sessions/a2/events", json=event)
            assert appended.status_code == 201, appended.text


@pytest.fixture(params=["sqlite", "postgresql"])
def stored(request, tmp_path):
    """A server's database: app `ops` with sessions a1, a2 (user ann) and b1
    (bob); app `shop` with c1 and the expired c2 (user cy). Written in that
    order, then three events on a2, the last one setting app: and user: keys.
    Labels: env:prod on a1 and b1, team:x on b1 too."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'ops.db'}"
    else:
        url = request.getfixturevalue("fresh_postgres_url")
        assert _cli("migrate", database_url=url).returncode == 0
    run_blocking(_write_sessions(url))
    _expire(url, "c2")
    return url


def _listed(*arguments: str, database_url: str) -> dict:
    result = _cli("sessions", "list", "--json", *arguments, database_url=database_url)
    assert result.returncode == 0, result.stderr
    page: dict = json.loads(result.stdout)
    return page


def test_apps_lists_each_app_with_its_live_sessions(stored):
    result = _cli("apps", "--json", database_url=stored)
    assert result.returncode == 0, result.stderr
    apps = json.loads(result.stdout)["apps"]
    assert [(app["appName"], app["sessions"], app["users"]) for app in apps] == [
        ("ops", 3, 2),
        ("shop", 1, 1),  # c2 expired: not counted
    ]
    assert apps[0]["lastUpdateTime"] > apps[1]["lastUpdateTime"]  # a2's events

    table = _cli("apps", database_url=stored)
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.strip().splitlines()
    assert header.split() == ["APP", "SESSIONS", "USERS", "LAST", "UPDATE", "(UTC)"]
    assert [row.split()[:3] for row in rows] == [["ops", "3", "2"], ["shop", "1", "1"]]

    # An app's users (one fixture's setup serves both: it starts a server).
    result = _cli("users", "--app", "ops", "--json", database_url=stored)
    assert result.returncode == 0, result.stderr
    users = json.loads(result.stdout)["users"]
    assert [(user["userId"], user["sessionCount"]) for user in users] == [("ann", 2), ("bob", 1)]
    labelled = _listed("--label", "env:prod", "--label", "team", database_url=stored)
    assert [(s["id"], s["labels"]) for s in labelled["sessions"]] == [
        ("b1", {"env": "prod", "team": "x"})
    ]
    refused = _cli("sessions", "list", "--label", "Env", database_url=stored)
    assert refused.returncode != 0 and "--label: label filter 'Env'" in refused.stderr
    assert refused.stderr.count("\n") == 1


def test_list_without_app_lists_every_app_newest_first(stored):
    page = _listed(database_url=stored)
    assert [s["id"] for s in page["sessions"]] == NEWEST_FIRST
    assert page["nextPageToken"] is None
    assert {s["id"]: s["appName"] for s in page["sessions"]}["c1"] == "shop"

    oldest = _listed("--order", "oldest", database_url=stored)
    assert [s["id"] for s in oldest["sessions"]] == NEWEST_FIRST[::-1]


def test_list_pages_through_every_app(stored):
    ids: list[str] = []
    token: list[str] = []
    for _ in range(len(NEWEST_FIRST) + 1):
        page = _listed("--page-size", "1", *token, database_url=stored)
        ids += [s["id"] for s in page["sessions"]]
        if page["nextPageToken"] is None:
            break
        token = ["--page-token", page["nextPageToken"]]
    assert ids == NEWEST_FIRST
    assert token  # more than one page was read

    # A token pages the list it came from only.
    other = _cli("sessions", "list", "--order", "oldest", *token, database_url=stored)
    assert other.returncode == 2
    assert "--page-token" in other.stderr and other.stderr.count("\n") == 1


def test_list_pages_through_an_apps_sessions(stored):
    first = _listed("--app", "ops", "--page-size", "2", database_url=stored)
    assert len(first["sessions"]) == 2 and first["nextPageToken"]
    rest = _listed("--app", "ops", "--page-token", first["nextPageToken"], database_url=stored)
    ids = [s["id"] for s in first["sessions"] + rest["sessions"]]
    assert ids == ["a2", "b1", "a1"]


def test_list_filters_by_user_and_prints_a_table(stored):
    result = _cli(
        "sessions", "list", "--app", "ops", "--user", "ann", "--order", "oldest",
        database_url=stored,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.strip().splitlines()
    assert header.split() == [
        "APP", "USER", "SESSION", "UPDATED", "(UTC)", "REVISION", "STATE", "KEYS", "LABELS",
    ]  # fmt: skip
    # Oldest first, the API's order: a2 was written last.
    assert [row.split()[2] for row in rows] == ["a1", "a2"]
    # a2: three events; its state as a read merges it: k, app:m, user:n.
    assert rows[1].split()[5:] == ["3", "3"]
    # a1 shares ann's user: key and the app's app: key; its labels last.
    assert rows[0].split()[5:] == ["0", "3", "env:prod"]


def test_expired_sessions_are_not_listed(stored):
    page = _listed("--app", "shop", database_url=stored)
    assert [s["id"] for s in page["sessions"]] == ["c1"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--app", "opz"], "no sessions in app 'opz'; the closest apps: 'ops'"),
        (["--app", "zzz"], "no sessions in app 'zzz' (`session-state apps` lists the apps)"),
        (["--app", "ops", "--user", "zed"], "no sessions of user 'zed' in app 'ops'"),
        (["--user", "zed"], "no sessions of user 'zed'"),
    ],
)
def test_a_list_that_finds_nothing_says_what_it_looked_for(stored, arguments, message):
    result = _cli("sessions", "list", *arguments, database_url=stored)
    assert result.returncode == 1
    assert result.stderr == f"session-state: {message}\n"
    assert result.stdout == ""  # no empty table
    as_json = _cli("sessions", "list", "--json", *arguments, database_url=stored)
    assert as_json.returncode == 1 and as_json.stderr == result.stderr
    assert json.loads(as_json.stdout) == {"sessions": [], "nextPageToken": None}


def test_an_empty_database_has_no_apps_and_no_sessions(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
    assert _cli("migrate", database_url=url).returncode == 0
    for command in (["apps"], ["sessions", "list"]):
        result = _cli(*command, database_url=url)
        assert result.returncode == 1
        assert result.stderr == "session-state: no sessions are stored\n"


def test_show_prints_state_and_the_last_events(stored):
    result = _cli(
        "sessions", "show", "a2", "--app", "ops", "--user", "ann", "--events", "2",
        database_url=stored,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    session = json.loads(result.stdout)
    assert session["state"] == {"k": 1, "app:m": 1, "user:n": 2} and session["revision"] == 3
    assert [event["content"]["parts"][0]["text"] for event in session["events"]] == [
        "second",
        "third",
    ]


def test_show_of_an_unknown_session_says_so(stored):
    result = _cli("sessions", "show", "nope", "--app", "ops", "--user", "ann", database_url=stored)
    assert result.returncode == 1
    assert "no session 'nope'" in result.stderr


@pytest.mark.parametrize("command", [["apps"], ["sessions", "list", "--app", "ops"]])
def test_reading_a_missing_sqlite_file_does_not_create_it(tmp_path, command):
    path = tmp_path / "typo.db"
    result = _cli(*command, database_url=f"sqlite+aiosqlite:///{path}")
    assert result.returncode == 2
    assert "no SQLite database at" in result.stderr
    assert not path.exists()


async def _create(url: str, app: str, user: str, session_id: str) -> None:
    settings = Settings(database_url=url, sweep_interval_seconds=0, db_timeout_seconds=30)
    async with asgi_client(settings) as http:
        created = await http.post(
            f"/apps/{app}/users/{user}/sessions", json={"sessionId": session_id}
        )
        assert created.status_code == 201, created.text


def test_show_needs_no_app_or_user_when_the_id_is_unique(stored):
    result = _cli("sessions", "show", "a2", "--events", "1", database_url=stored)
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert (shown["appName"], shown["userId"], shown["id"]) == ("ops", "ann", "a2")
    # Expired is not there, as for the API.
    gone = _cli("sessions", "show", "c2", database_url=stored)
    assert (gone.returncode, gone.stderr) == (1, "session-state: no session 'c2'\n")


def test_show_of_an_id_several_sessions_have_lists_them(stored):
    run_blocking(_create(stored, "shop", "dee", "a1"))
    result = _cli("sessions", "show", "a1", database_url=stored)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        "session-state: 2 sessions have the id 'a1': say which with "
        "--app 'ops' --user 'ann'; --app 'shop' --user 'dee'\n"
    )
    # One of the two is enough when it settles which.
    only_shop = _cli("sessions", "show", "a1", "--app", "shop", database_url=stored)
    assert only_shop.returncode == 0, only_shop.stderr
    assert json.loads(only_shop.stdout)["userId"] == "dee"


@pytest.mark.parametrize(
    ("command", "choices"), [(["sessions"], "{list,show}"), (["memory"], "{reindex}")]
)
def test_a_missing_subcommand_names_the_choices(command, choices, tmp_path):
    result = _cli(*command, database_url=f"sqlite+aiosqlite:///{tmp_path / 'none.db'}")
    assert result.returncode == 2
    assert f"the following arguments are required: {choices}" in result.stderr
    assert "_command" not in result.stderr
