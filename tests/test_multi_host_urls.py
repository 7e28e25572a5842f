"""SESSION_STATE_DATABASE_URL names PostgreSQL as libpq does: postgresql://
or postgresql+asyncpg://, several servers (`h1:p1,h2:p2`, or host= query
parameters) and target_session_attrs; every command reads it, the start-up
line names every server, and its mistakes are one line."""

import os
import subprocess
import sys
from pathlib import Path

import asyncpg
import httpx
import pytest
from asyncpg.connect_utils import SessionAttribute

from session_state.cli.reports import database_shown
from session_state.core.config import Settings
from session_state.core.database_url import (
    TARGET_SESSION_ATTRS,
    DatabaseUrlError,
    Endpoint,
    parse_postgresql_url,
)
from tests.conftest import POSTGRES_ADMIN_URL, ServerProcess, free_port

# The test PostgreSQL's host:port.
POSTGRES_ADDRESS = POSTGRES_ADMIN_URL.split("@", 1)[1].rsplit("/", 1)[0]


def _dead_address() -> str:
    """A port where nothing listens: a server that is down."""
    return f"127.0.0.1:{free_port()}"


@pytest.mark.parametrize(
    ("url", "endpoints"),
    [
        (
            "postgresql://u@10.0.0.1:5451,10.0.0.2:5452/db?target_session_attrs=read-write",
            [("10.0.0.1", 5451), ("10.0.0.2", 5452)],
        ),
        ("postgres://u@h1,h2:5433/db", [("h1", None), ("h2", 5433)]),
        ("postgresql+asyncpg://u@/db?host=h1:5451&host=h2:5452", [("h1", 5451), ("h2", 5452)]),
        ("postgresql://u@/db?host=h1,h2&port=5451,5452", [("h1", 5451), ("h2", 5452)]),
        ("postgresql://u@/db?host=h1,h2&port=5451", [("h1", 5451), ("h2", 5451)]),
        ("postgresql://u@[::1]:5451,[fe80::2]:5452/db", [("::1", 5451), ("fe80::2", 5452)]),
        ("postgresql://u@/db?host=/run/postgresql", [("/run/postgresql", None)]),
        ("postgresql://u@%2Frun%2Fpostgresql:5433/db", [("/run/postgresql", 5433)]),
        ("postgresql+asyncpg://u@h:5432/db", [("h", 5432)]),
        ("postgresql+asyncpg:///db", []),
    ],
)
def test_every_libpq_host_form_names_its_servers_in_order(url, endpoints):
    address = parse_postgresql_url(url)
    assert address.endpoints == tuple(Endpoint(host, port) for host, port in endpoints)
    assert address.url.drivername == "postgresql+asyncpg"
    assert address.url.database == "db"
    # The settings hold the form SQLAlchemy reads, which names the same servers.
    assert parse_postgresql_url(address.canonical()) == address
    assert parse_postgresql_url(Settings(database_url=url).database_url) == address


def test_user_password_and_options_survive_every_form():
    address = parse_postgresql_url(
        "postgresql://app%40corp:p%40ss%2Fw@h1:5451,h2:5452/sessions"
        "?target_session_attrs=primary&ssl=require"
    )
    assert (address.url.username, address.url.password) == ("app@corp", "p@ss/w")
    assert address.target_session_attrs == "primary"
    assert address.url.query["ssl"] == "require"
    assert address.asyncpg_dsn() == (
        "postgresql://app%40corp:p%40ss%2Fw@h1:5451,h2:5452/sessions"
        "?ssl=require&target_session_attrs=primary"
    )
    url, servers = address.engine_arguments()
    assert url.host is None and url.password == "p@ss/w"
    assert servers == {"host": ["h1", "h2"], "port": [5451, 5452]}


def test_asyncpg_reads_the_dsn_as_the_same_servers():
    from asyncpg.connect_utils import _parse_connect_dsn_and_args

    address = parse_postgresql_url("postgresql://u:pw@h1:5451,[::1]:5452/db")
    parsed = _parse_connect_dsn_and_args(
        dsn=address.asyncpg_dsn(),
        host=None,
        port=None,
        user=None,
        password=None,
        passfile=None,
        database=None,
        ssl=None,
        direct_tls=None,
        server_settings=None,
        target_session_attrs=None,
        krbsrvname=None,
        gsslib=None,
        service=None,
        servicefile=None,
    )
    addresses, parameters = parsed[0], parsed[1]
    assert addresses == [("h1", 5451), ("::1", 5452)]
    assert (parameters.user, parameters.password, parameters.database) == ("u", "pw", "db")


def test_target_session_attrs_are_asyncpgs():
    assert set(TARGET_SESSION_ATTRS) == {attribute.value for attribute in SessionAttribute}


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://u:secret@h1:5451,h2:54x2/db", "the port of host 2 of 2 ('h2:54x2')"),
        ("postgresql://u:secret@h1,,h2/db", "host 2 of 3 is empty"),
        ("postgresql://u:secret@h:70000/db", "is not a number from 1 to 65535"),
        ("postgresql://u:secret@/db?host=::1", "an IPv6 address goes in brackets"),
        ("postgresql://u:secret@h1/db?host=h2", "the servers are named twice"),
        ("postgresql://u:secret@/db?host=a,b&port=1,2,3", "3 ports for 2 hosts"),
        ("postgresql://u:secret@/db?host=a:1&port=2", "ports written both in host= and in port="),
        ("postgresql://u:secret@h/db?target_session_attrs=rw", "target_session_attrs='rw' is none"),
    ],
)
def test_a_url_that_names_no_server_clearly_is_refused_in_one_line(url, message):
    with pytest.raises(DatabaseUrlError) as refusal:
        parse_postgresql_url(url)
    assert message in str(refusal.value)
    assert "\n" not in str(refusal.value) and "secret" not in str(refusal.value)


def test_the_start_up_line_names_every_server_never_the_password():
    url = "postgresql://u:secret@10.0.0.1:5451,10.0.0.2:5452/db?target_session_attrs=read-write"
    shown = database_shown(Settings(database_url=url).database_url)
    assert shown == ("PostgreSQL 10.0.0.1:5451,10.0.0.2:5452/db?target_session_attrs=read-write")
    assert database_shown("postgresql://u:secret@h/db") == "PostgreSQL h:5432/db"


def _run(*arguments: str, database_url: str, cwd: Path | None = None):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SESSION_STATE_")}
    return subprocess.run(
        [sys.executable, "-m", "session_state.cli", *arguments],
        env={**clean, "SESSION_STATE_DATABASE_URL": database_url},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["migrate", "serve"])
def test_a_malformed_multi_host_url_is_one_line_naming_the_setting(command):
    arguments = ["--port", str(free_port())] if command == "serve" else []
    url = "postgresql+asyncpg://postgres:secret@127.0.0.1:5451,127.0.0.1:54x2/x"
    line = _one_line(_run(command, *arguments, database_url=url))
    assert line.startswith("session-state: SESSION_STATE_DATABASE_URL: the port of host 2 of 2")
    assert "secret" not in line


@pytest.mark.parametrize(
    ("servers", "query", "expected"),
    [
        ("{dead},{dead}", "", "cannot reach the database on any of"),
        ("no-such-host.invalid,other-host.invalid", "", "cannot resolve one of the database hosts"),
        (POSTGRES_ADDRESS, "?target_session_attrs=standby", "no database server of"),
    ],
)
def test_a_multi_host_url_that_reaches_no_server_is_one_line_naming_them(
    postgres_available, servers, query, expected
):
    if not postgres_available:
        pytest.skip("PostgreSQL not reachable")
    while "{dead}" in servers:
        servers = servers.replace("{dead}", _dead_address(), 1)
    line = _one_line(
        _run("migrate", database_url=f"postgresql://postgres@{servers}/postgres{query}")
    )
    assert expected in line and "SESSION_STATE_DATABASE_URL" in line
    for endpoint in parse_postgresql_url(f"postgresql://u@{servers}/x").endpoints:
        assert endpoint.shown() in line or repr(endpoint.host) in line


@pytest.fixture
def dead_address() -> str:
    return _dead_address()


@pytest.fixture
def multi_host_url(fresh_postgres_url, dead_address):
    """The test database behind a URL whose first server is down, in libpq's
    spelling: connections must go on to the second."""
    database = fresh_postgres_url.rsplit("/", 1)[1]
    user = POSTGRES_ADMIN_URL.split("://", 1)[1].split("@", 1)[0]
    return (
        f"postgresql://{user}@{dead_address},{POSTGRES_ADDRESS}/{database}"
        "?target_session_attrs=read-write"
    )


def test_every_command_works_through_a_url_whose_first_host_is_down(
    multi_host_url, dead_address, tmp_path
):
    migrated = _run("migrate", "--create-database", database_url=multi_host_url)
    assert migrated.returncode == 0, migrated.stderr
    assert f"PostgreSQL {dead_address},{POSTGRES_ADDRESS}/" in migrated.stdout
    server = ServerProcess(multi_host_url).start()
    try:
        base = server.base_url
        created = httpx.post(f"{base}/apps/a/users/u/sessions", json={"sessionId": "s"})
        assert created.status_code == 201, created.text
        event = {"id": "e1", "author": "user", "actions": {"stateDelta": {"n": 1}}}
        appended = httpx.post(f"{base}/apps/a/users/u/sessions/s/events", json=event)
        assert appended.status_code in (200, 201), appended.text
        assert httpx.get(f"{base}/readyz").status_code == 200
        session = httpx.get(f"{base}/apps/a/users/u/sessions/s").json()
        assert session["state"] == {"n": 1} and len(session["events"]) == 1
    finally:
        server.stop()
    dump = tmp_path / "dump.jsonl"
    for arguments in (
        ["export", "--output", str(dump)],
        ["import", str(dump)],
        ["apps", "--json"],
        ["sessions", "list", "--json"],
        ["sessions", "show", "s", "--app", "a", "--user", "u"],
        ["sweep"],
    ):
        result = _run(*arguments, database_url=multi_host_url)
        assert result.returncode == 0, (arguments, result.stdout, result.stderr)
        if arguments[0] == "sessions":
            assert '"s"' in result.stdout
    assert '"e1"' in dump.read_text()


async def test_the_server_used_is_the_writable_one(multi_host_url):
    # What target_session_attrs=read-write promised: a primary answered.
    address = parse_postgresql_url(multi_host_url)
    connection = await asyncpg.connect(address.asyncpg_dsn())
    try:
        assert await connection.fetchval("SELECT pg_is_in_recovery()") is False
        assert connection._addr == ("127.0.0.1", int(POSTGRES_ADDRESS.rsplit(":", 1)[1]))
    finally:
        await connection.close()
