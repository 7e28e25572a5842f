"""`session-state export` and `session-state import`: dumps move everything
between SQLite and PostgreSQL (both directions) and come back equal; an
import run twice changes nothing; conflicts are reported and left alone; an
import that was killed or cut short completes when run again; a hostile dump
is refused by line, with whole sessions only written before it."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from session_state.core.config import Settings
from tests.cli_runner import run_cli
from tests.conftest import asgi_client, migrate

APP = "/apps/travel"


def cli(*arguments: str, database_url: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*arguments, env={"SESSION_STATE_DATABASE_URL": database_url})


def api(database_url: str) -> AbstractAsyncContextManager[httpx.AsyncClient]:
    return asgi_client(Settings(database_url=database_url, sweep_interval_seconds=0))


def sqlite_url(tmp_path: Path, name: str) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / name}"


@pytest.fixture
def empty_postgresql(fresh_postgres_url: str) -> str:
    migrate(fresh_postgres_url)
    return fresh_postgres_url


async def fill(http: httpx.AsyncClient) -> None:
    """Every kind of row: sessions with events touching every scope, values
    that must come back as written, an expiring and an expired session, a
    fork, memories of both kinds and a forgotten one, a second app."""
    ada = f"{APP}/users/ada/sessions"
    created = await http.post(
        ada,
        json={
            "sessionId": "trip",
            "state": {"stage": "new", "user:n": 1, "app:v": 1.0},
            # Labels travel with their session (and its fork copies them).
            "labels": {"env": "prod", "team": ""},
        },
    )
    assert created.status_code == 201
    for step in range(5):
        delta = {"stage": f"s{step}", "user:n": step, "app:big": 2**70, "temp:t": 1, "f": 1.0}
        answer = await http.post(
            f"{ada}/trip/events",
            json={
                "id": f"e{step}",
                "author": "agent",
                "invocationId": f"inv-{step}",
                "content": {"role": "model", "parts": [{"text": f"step {step} in Lisbon ☀"}]},
                "actions": {"stateDelta": delta},
                "custom": {"nested": [1, 2.5, None, True, "\u00e9"]},
            },
        )
        assert answer.status_code == 201
    forked = await http.post(f"{ada}/trip/fork", json={"sessionId": "trip-b", "upToEventId": "e2"})
    assert forked.json()["labels"] == {"env": "prod", "team": ""}
    assert (await http.post(ada, json={"sessionId": "kept", "ttlSeconds": 3600})).status_code == 201
    assert (
        await http.post(f"{APP}/users/bob/sessions", json={"sessionId": "empty"})
    ).status_code == 201
    assert (
        await http.post(f"{APP}/users/ada/memory", json={"sessionId": "trip"})
    ).status_code == 200
    entries = {
        "memories": [
            {
                "id": "pref",
                "author": "agent",
                "content": {"parts": [{"text": "likes aisle seats"}]},
                "customMetadata": {"source": "profile"},
            }
        ]
    }
    assert (await http.post(f"{APP}/users/ada/memory/entries", json=entries)).status_code == 200
    assert (await http.delete(f"{APP}/users/ada/memory/e0")).status_code == 204
    other = "/apps/shop/users/cy/sessions"
    assert (
        await http.post(other, json={"sessionId": "cart", "state": {"app:open": True}})
    ).status_code == 201
    # Events removed from the end: the revision is past the event count.
    for event_id in ("add", "undo"):
        event = {"id": event_id, "author": "user", "actions": {"stateDelta": {"items": event_id}}}
        assert (await http.post(f"{other}/cart/events", json=event)).status_code == 201
    assert (await http.delete(f"{other}/cart/events", params={"last": 1})).status_code == 200


async def everything(http: httpx.AsyncClient) -> dict[str, Any]:
    """What the API shows of the stored data, raw event JSON included."""
    seen: dict[str, Any] = {}
    for app in ("travel", "shop"):
        listed = (await http.get(f"/apps/{app}/sessions", params={"pageSize": 100})).json()
        for session in listed["sessions"]:
            base = f"/apps/{app}/users/{session['userId']}/sessions/{session['id']}"
            full = await http.get(base)
            events = await http.get(f"{base}/events", params={"pageSize": 1000})
            seen[base] = (full.json(), full.headers["ETag"], events.content)
        seen[f"{app}/state"] = (await http.get(f"/apps/{app}/state")).json()
        for user in ("ada", "bob", "cy"):
            seen[f"{app}/{user}"] = (await http.get(f"/apps/{app}/users/{user}/state")).json()
    for question in ("lisbon", "aisle", "step 0"):
        found = await http.get(f"{APP}/users/ada/memory", params={"query": question})
        seen[f"memory {question}"] = found.json()
    return seen


def dump_lines(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [line for line in lines if "format" not in line]  # the header holds the time


def export(database_url: str, path: Path, *arguments: str) -> None:
    done = cli("export", "--output", str(path), *arguments, database_url=database_url)
    assert done.returncode == 0, done.stderr


def without_audit_lines(stderr: str) -> tuple[str, list[dict[str, Any]]]:
    """A command's own words on stderr, and its audit trail's lines (JSON)."""
    said, audited = [], []
    for line in stderr.splitlines(keepends=True):
        if '"logger": "session_state.audit"' in line:
            audited.append(json.loads(line))
        else:
            said.append(line)
    return "".join(said), audited


def import_(database_url: str, path: Path) -> tuple[int, dict[str, Any], str]:
    done = cli("import", str(path), database_url=database_url)
    summary = json.loads(done.stdout)["imported"] if done.stdout else {}
    return done.returncode, summary, done.stderr


@pytest.mark.parametrize("direction", ["sqlite-to-postgresql", "postgresql-to-sqlite"])
async def test_a_dump_moves_everything_to_the_other_backend(direction, tmp_path, empty_postgresql):
    sqlite = sqlite_url(tmp_path, "a.db")
    source, target = (
        (sqlite, empty_postgresql)
        if direction == "sqlite-to-postgresql"
        else (empty_postgresql, sqlite)
    )
    async with api(source) as http:
        await fill(http)
        before = await everything(http)
    export(source, tmp_path / "dump.jsonl")
    code, summary, stderr = import_(target, tmp_path / "dump.jsonl")
    assert code == 0, stderr
    assert summary["sessions"] == {"added": 5, "skipped": 0, "conflicts": 0}
    assert summary["events"]["added"] == 5 + 3 + 1  # trip, trip-b, cart
    async with api(target) as http:
        assert await everything(http) == before
    # And back: the dump of the copy is the dump of the original.
    export(target, tmp_path / "again.jsonl")
    assert dump_lines(tmp_path / "again.jsonl") == dump_lines(tmp_path / "dump.jsonl")


async def test_exports_and_imports_are_in_the_audit_trail_with_counts_only(tmp_path):
    source, target = sqlite_url(tmp_path, "source.db"), sqlite_url(tmp_path, "target.db")
    async with api(source) as http:
        await fill(http)
    exported = cli(
        "export", "--output", str(tmp_path / "dump.jsonl"), "--app", "travel", database_url=source
    )
    [line] = without_audit_lines(exported.stderr)[1]
    assert (line["audit_action"], line["audit_outcome"], line["audit_app"]) == (
        "export",
        "ok",
        "travel",
    )
    assert line["audit_user"] is None and line["audit_output"] == str(tmp_path / "dump.jsonl")
    assert line["audit_sessions"] > 0
    imported = cli("import", str(tmp_path / "dump.jsonl"), database_url=target)
    [line] = without_audit_lines(imported.stderr)[1]
    assert (line["audit_action"], line["audit_outcome"]) == ("import", "ok")
    assert (
        line["audit_sessions_added"] == json.loads(imported.stdout)["imported"]["sessions"]["added"]
    )
    # Identifiers and counts, never what was said.
    assert "Lisbon" not in exported.stderr + imported.stderr


async def test_importing_twice_changes_nothing(database_url, tmp_path):
    source = sqlite_url(tmp_path, "source.db")
    async with api(source) as http:
        await fill(http)
    export(source, tmp_path / "dump.jsonl")
    assert import_(database_url, tmp_path / "dump.jsonl")[0] == 0
    export(database_url, tmp_path / "first.jsonl")
    code, summary, _ = import_(database_url, tmp_path / "dump.jsonl")
    assert code == 0
    assert summary["sessions"] == {"added": 0, "skipped": 5, "conflicts": 0}
    assert summary["stateKeys"]["added"] == 0 and summary["memories"]["added"] == 0
    export(database_url, tmp_path / "second.jsonl")
    assert dump_lines(tmp_path / "second.jsonl") == dump_lines(tmp_path / "first.jsonl")


async def test_conflicts_are_reported_and_left_alone(database_url, tmp_path):
    source = sqlite_url(tmp_path, "source.db")
    async with api(source) as http:
        await fill(http)
    export(source, tmp_path / "dump.jsonl")
    async with api(database_url) as http:
        # The same ids, other content, before the import.
        taken = await http.post(
            f"{APP}/users/ada/sessions", json={"sessionId": "trip", "state": {"x": 1}}
        )
        assert taken.status_code == 201
        other = await http.post(
            f"{APP}/users/zed/sessions",
            json={"sessionId": "z", "state": {"app:v": "other", "user:n": 9}},
        )
        assert other.status_code == 201
    code, summary, stderr = import_(database_url, tmp_path / "dump.jsonl")
    assert code == 1 and "conflict" in stderr
    assert summary["sessions"] == {"added": 4, "skipped": 0, "conflicts": 1}
    assert summary["stateKeys"]["conflicts"] == 1
    assert any("'trip'" in text for text in summary["conflicts"])
    async with api(database_url) as http:
        trip = (await http.get(f"{APP}/users/ada/sessions/trip")).json()
        assert trip["state"]["x"] == 1 and trip["events"] == []
        assert (await http.get(f"{APP}/state")).json()["state"]["v"] == "other"
        # Everything else came in.
        fork = await http.get(f"{APP}/users/ada/sessions/trip-b")
        assert fork.json()["state"]["stage"] == "s2"


async def test_a_stored_session_with_one_event_of_other_content_is_a_conflict(
    database_url, tmp_path
):
    """The session row the same (state, revision, times), one event not:
    reported as a conflict, and the stored event left as it is."""
    source = sqlite_url(tmp_path, "source.db")
    async with api(source) as http:
        await fill(http)
    export(source, tmp_path / "dump.jsonl")
    assert import_(database_url, tmp_path / "dump.jsonl")[0] == 0
    lines = (tmp_path / "dump.jsonl").read_text().splitlines(keepends=True)
    # ada's trip's event e3 (its fork stops at e2; memories are other lines).
    changed = [
        number
        for number, line in enumerate(lines)
        if json.loads(line).get("kind") == "event" and "step 3 in Lisbon" in line
    ]
    assert len(changed) == 1
    lines[changed[0]] = lines[changed[0]].replace("step 3 in Lisbon", "step 3 in Porto")
    (tmp_path / "changed.jsonl").write_text("".join(lines))
    code, summary, stderr = import_(database_url, tmp_path / "changed.jsonl")
    assert code == 1 and "conflict" in stderr
    assert summary["sessions"] == {"added": 0, "skipped": 4, "conflicts": 1}
    assert any("'trip'" in text for text in summary["conflicts"])
    export(database_url, tmp_path / "after.jsonl")
    assert dump_lines(tmp_path / "after.jsonl") == dump_lines(tmp_path / "dump.jsonl")


async def test_a_dump_cut_short_imports_whole_sessions_then_completes(database_url, tmp_path):
    source = sqlite_url(tmp_path, "source.db")
    async with api(source) as http:
        await fill(http)
    export(source, tmp_path / "dump.jsonl")
    lines = (tmp_path / "dump.jsonl").read_text().splitlines(keepends=True)
    # Cut inside the events of ada's trip.
    cut = next(i for i, line in enumerate(lines) if '"id":"e0"' in line) + 2
    (tmp_path / "cut.jsonl").write_text("".join(lines[:cut]))
    code, summary, stderr = import_(database_url, tmp_path / "cut.jsonl")
    assert code == 1 and "fewer event lines" in stderr
    # The sessions before the cut (in key order: shop's with its one event,
    # then ada's without events) are whole; the one cut is not there at all.
    assert summary["sessions"]["added"] == 2 and summary["events"]["added"] == 1
    async with api(database_url) as http:
        assert (await http.get(f"{APP}/users/ada/sessions/trip")).status_code == 404
    assert import_(database_url, tmp_path / "dump.jsonl")[0] == 0
    export(database_url, tmp_path / "after.jsonl")
    assert dump_lines(tmp_path / "after.jsonl") == dump_lines(tmp_path / "dump.jsonl")


async def _count(connection: asyncpg.Connection, sql: str, *arguments: Any) -> int:
    counted: int = await connection.fetchval(sql, *arguments)
    return counted


async def _stored_sessions(connection: asyncpg.Connection) -> set[tuple[str, str, str]]:
    rows = await connection.fetch("SELECT app_name, user_id, id FROM sessions")
    return {(row["app_name"], row["user_id"], row["id"]) for row in rows}


async def _importer_waiting(observer: asyncpg.Connection) -> int | None:
    """The backend of the import, while it waits for the lock on events."""
    pid: int | None = await observer.fetchval(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name = 'session-state' AND wait_event_type = 'Lock'"
    )
    return pid


async def test_an_import_killed_midway_completes_when_run_again(tmp_path, empty_postgresql):
    source = sqlite_url(tmp_path, "big.db")
    async with api(source) as http:
        for index in range(150):
            base = f"{APP}/users/u{index % 7}/sessions"
            assert (await http.post(base, json={"sessionId": f"s{index}"})).status_code == 201
            for step in range(8):
                event = {"author": "a", "actions": {"stateDelta": {"k": step, "user:last": index}}}
                assert (await http.post(f"{base}/s{index}/events", json=event)).status_code == 201
    export(source, tmp_path / "dump.jsonl")
    in_dump_order = [
        (line["app"], line["user"], line["id"])
        for line in dump_lines(tmp_path / "dump.jsonl")
        if line["kind"] == "session"
    ]
    assert len(in_dump_order) == 150
    dsn = empty_postgresql.replace("postgresql+asyncpg://", "postgresql://")
    observer, holder = await asyncpg.connect(dsn), await asyncpg.connect(dsn)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SESSION_STATE_")}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "session_state.cli",
        "import",
        str(tmp_path / "dump.jsonl"),
        env={**clean, "SESSION_STATE_DATABASE_URL": empty_postgresql},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while await _count(observer, "SELECT count(*) FROM sessions") < 20:
            assert process.returncode is None, "the import ended before 20 sessions"
            assert time.monotonic() < deadline, "the import stored no 20 sessions in 60 s"
            await asyncio.sleep(0.02)
        # Events locked against inserts: the import stops inside the
        # transaction of its next session, its session row written, its
        # events not, and is killed there.
        locking = holder.transaction()
        await locking.start()
        await holder.execute("LOCK TABLE events IN SHARE MODE")
        importer = None
        while importer is None:
            assert time.monotonic() < deadline, "the import never waited inside a session"
            importer = await _importer_waiting(observer)
            await asyncio.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        await process.wait()
        # The sessions before the kill, whole; the one it was writing, absent.
        stored = await _stored_sessions(observer)
        committed = len(stored)
        assert 20 <= committed < 150
        assert stored == set(in_dump_order[:committed])
        assert await _count(observer, "SELECT count(*) FROM events") == 8 * committed
        # Its transaction ends, uncommitted, when its backend finds the client gone.
        await locking.rollback()
        while await _count(
            observer, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", importer
        ):
            assert time.monotonic() < deadline, "the killed import's backend stayed"
            await asyncio.sleep(0.02)
        assert await _stored_sessions(observer) == stored
        assert await _count(observer, "SELECT count(*) FROM events") == 8 * committed
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await holder.close()
        await observer.close()
    code, summary, stderr = import_(empty_postgresql, tmp_path / "dump.jsonl")
    assert code == 0, stderr
    assert summary["sessions"] == {"added": 150 - committed, "skipped": committed, "conflicts": 0}
    export(empty_postgresql, tmp_path / "after.jsonl")
    assert dump_lines(tmp_path / "after.jsonl") == dump_lines(tmp_path / "dump.jsonl")


async def test_export_of_one_app_or_one_user(tmp_path):
    source = sqlite_url(tmp_path, "source.db")
    async with api(source) as http:
        await fill(http)
    export(source, tmp_path / "shop.jsonl", "--app", "shop")
    shop = dump_lines(tmp_path / "shop.jsonl")
    assert {line.get("app") for line in shop if "app" in line} == {"shop"}
    assert [line["id"] for line in shop if line["kind"] == "session"] == ["cart"]
    export(source, tmp_path / "ada.jsonl", "--app", "travel", "--user", "ada")
    ada = dump_lines(tmp_path / "ada.jsonl")
    assert {line["kind"] for line in ada} == {
        "user",
        "session",
        "event",
        "memory",
        "forgotten",
        "end",
    }
    assert {line["user"] for line in ada if "user" in line} == {"ada"}
    assert ada[-1]["counts"]["sessions"] == 3


async def test_an_expired_session_is_not_exported(database_url, tmp_path, clock, clocked_client):
    # The app's clock an hour behind the real one, which the export reads:
    # "old" is live for the app when it is stored and has expired for the export.
    clock.advance(-3600)
    sessions = f"{APP}/users/ada/sessions"
    for created in (
        {"sessionId": "old", "ttlSeconds": 60},
        {"sessionId": "later", "ttlSeconds": 7200},
        {"sessionId": "live"},
    ):
        assert (await clocked_client.post(sessions, json=created)).status_code == 201
    assert (await clocked_client.get(f"{sessions}/old")).status_code == 200
    export(database_url, tmp_path / "dump.jsonl")
    exported = [
        line["id"] for line in dump_lines(tmp_path / "dump.jsonl") if line["kind"] == "session"
    ]
    assert sorted(exported) == ["later", "live"]
    # The app agrees once its clock has caught up.
    clock.advance(3600)
    assert (await clocked_client.get(f"{sessions}/old")).status_code == 404
    assert (await clocked_client.get(f"{sessions}/later")).status_code == 200


HEADER = '{"format":"session-state-dump","version":1,"exportedAt":1}\n'
SESSION = (
    '{"kind":"session","app":"a","user":"u","id":"s","state":{},"initialState":{},"revision":1,'
    '"createTime":1,"updateTime":1,"expireTime":null,"ttlSeconds":null,"events":1}\n'
)
EVENT = '{"kind":"event","seq":1,"event":{"id":"e","author":"x","timestamp":1}}\n'
END = '{"kind":"end","counts":{}}\n'


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the file is empty"),
        (b"hello\n", "line 1: not JSON"),
        (b'{"format":"other"}\n', "line 1: not a session-state dump"),
        (b'{"format":"session-state-dump","version":2,"exportedAt":1}\n', "reads version 1"),
        ((HEADER + '{"kind":"table"}\n').encode(), "line 2:"),
        ((HEADER + EVENT).encode(), "line 2: an event line that follows no session line"),
        ((HEADER + SESSION.replace('"s"', '" s"') + EVENT + END).encode(), "line 2: session.id:"),
        ((HEADER + SESSION.replace('"u"', '"u\\u0000"') + EVENT + END).encode(), "line 2:"),
        (
            (HEADER + SESSION + EVENT.replace('"author":"x",', "") + END).encode(),
            "line 3: event.author",
        ),
        ((HEADER + SESSION + EVENT.replace('"seq":1', '"seq":2') + END).encode(), "line 3: seq 2"),
        ((HEADER + SESSION + END).encode(), "fewer event lines"),
        (
            (
                HEADER + SESSION.replace('"revision":1', '"revision":' + str(2**70)) + EVENT + END
            ).encode(),
            "line 2: session.revision:",
        ),
        (
            (
                HEADER + SESSION.replace('"ttlSeconds":null', '"ttlSeconds":1e308') + EVENT + END
            ).encode(),
            "line 2: session.ttlSeconds:",
        ),
        (
            (HEADER + SESSION.replace('"state":{}', '"state":{"app:x":1}') + EVENT + END).encode(),
            "line 2: session.state: a session's own state has no app:, user: or temp: keys",
        ),
        (
            (
                HEADER
                + SESSION.replace('"initialState":{}', '"initialState":{"temp:t":1}')
                + EVENT
                + END
            ).encode(),
            "line 2: session.initialState:",
        ),
        (
            (
                HEADER + '{"kind":"user","app":"a","user":"u","state":{"' + "k" * 5000 + '":1}}\n'
            ).encode(),
            "line 2: state keys are at most",
        ),
        (
            (
                HEADER
                + SESSION.replace('"state":{}', '"state":{"' + "k" * 5000 + '":1}')
                + EVENT
                + END
            ).encode(),
            "line 2: state keys are at most",
        ),
        (
            (
                HEADER
                + SESSION.replace('"revision":1', '"revision":2').replace(
                    '"events":1', '"events":2'
                )
                + EVENT
                + EVENT.replace('"seq":1', '"seq":2')
                + END
            ).encode(),
            "line 2: the session's events repeat an event id",
        ),
        (
            (
                HEADER
                + SESSION.replace('"events":1', '"events":1,"labels":{"Env":"x"}')
                + EVENT
                + END
            ).encode(),
            "line 2: session.labels: label key 'Env'",
        ),
        ((HEADER + SESSION + EVENT + END + END).encode(), "line 5: a line after the end line"),
        ((HEADER + SESSION + EVENT).encode(), "ends without its end line"),
        ((HEADER + '{"kind":"app","app":"a","state":{"k":1}}').encode() + b"\xff\n", "not UTF-8"),
        (
            (HEADER + SESSION.replace('"revision":1', '"revision":"1"') + EVENT + END).encode(),
            "revision",
        ),
    ],
)
async def test_a_hostile_dump_is_refused_by_line_and_writes_no_part_of_a_session(
    content, message, tmp_path
):
    target = sqlite_url(tmp_path, "target.db")
    (tmp_path / "bad.jsonl").write_bytes(content)
    code, _, stderr = import_(target, tmp_path / "bad.jsonl")
    assert code == 1
    said, audited = without_audit_lines(stderr)
    assert message in said and said.count("\n") == 1, stderr
    assert [(line["audit_action"], line["audit_outcome"]) for line in audited] == [
        ("import", "failed")
    ]
    async with api(target) as http:
        # Absent, or whole when the bad line came after it.
        session = await http.get("/apps/a/users/u/sessions/s")
        assert session.status_code == 404 or len(session.json()["events"]) == 1


def test_a_missing_file_or_database_is_one_line(tmp_path):
    done = cli("import", str(tmp_path / "nope.jsonl"), database_url=sqlite_url(tmp_path, "t.db"))
    assert done.returncode == 2 and "cannot read" in done.stderr
    done = cli("export", database_url=sqlite_url(tmp_path, "missing.db"))
    assert done.returncode == 2 and "no SQLite database" in done.stderr
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--app", "x" * 129, "--app: an identifier is at most 128 characters"),
        ("--user", "", "--user: an identifier is at least 1 character"),
        ("--app", "a\x01b", "--app: an identifier holds no control characters"),
        ("--user", "\udcff", "--user: an identifier holds no lone surrogate"),
    ],
)
def test_a_filter_no_identifier_could_match_is_one_line(option, value, message, tmp_path):
    source = sqlite_url(tmp_path, "source.db")
    asyncio.run(_one_long_session(source, events=0))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SESSION_STATE_")}
    # As the shell passes it: bytes (a lone surrogate is an undecodable byte).
    argument = value.encode("utf-8", "surrogateescape")
    done = subprocess.run(
        [
            sys.executable.encode(),
            b"-m",
            b"session_state.cli",
            b"export",
            option.encode(),
            argument,
        ],
        env={**clean, "SESSION_STATE_DATABASE_URL": source},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"session-state: {message}") and done.stderr.count("\n") == 1


async def _one_long_session(database_url: str, events: int = 300) -> None:
    """300 events of 1 KB: far more than a pipe's buffer holds."""
    async with api(database_url) as http:
        await http.post(f"{APP}/users/ada/sessions", json={"sessionId": "long"})
        for _ in range(events):
            event = {"author": "a", "content": {"parts": [{"text": "x" * 1000}]}}
            await http.post(f"{APP}/users/ada/sessions/long/events", json=event)


def test_an_export_whose_reader_leaves_says_so_in_one_line(tmp_path):
    source = sqlite_url(tmp_path, "source.db")
    asyncio.run(_one_long_session(source))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SESSION_STATE_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "session_state.cli", "export"],
        env={**clean, "SESSION_STATE_DATABASE_URL": source},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert b"session-state-dump" in process.stdout.readline()
    process.stdout.close()  # the reader leaves, as `| head` does
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 1
    said, audited = without_audit_lines(stderr)
    assert said == "session-state: the output was closed before the dump ended\n"
    assert [line["audit_outcome"] for line in audited] == ["output_closed"]
