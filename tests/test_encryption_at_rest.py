"""Encryption at rest of sessions and memory, on both backends: with keys set,
the raw SQLite files and a pg_dump hold none of what was written while the
API returns all of it; keys rotate and the old one goes after `reencrypt`;
plaintext rows written before encryption stay readable and get sealed; a
missing key is an error naming it; a value that looks sealed is refused."""

import asyncio
import base64
import json
import logging
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import make_url

from session_state.core.config import Settings
from session_state.db.engine import create_engine
from session_state.encryption.commands import run_reencrypt
from session_state.encryption.reencrypt import reencrypt

from .cli_runner import run_cli
from .conftest import asgi_client
from .encryption_keys import key_set

PG_DUMP = "/usr/lib/postgresql/15/bin/pg_dump"
APP, USER, SESSION = "vault", "u1", "s1"
MARKERS = {
    "session": "MARK-session-3f9a",
    "app": "MARK-app-77c1",
    "user": "MARK-user-52de",
    "event": "MARK-event-a0b4",
    "delta": "MARK-delta-e6f2",
    "memory": "MARK-memory-19cc",
}
SESSION_PATH = f"/apps/{APP}/users/{USER}/sessions/{SESSION}"


def _key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def _settings(database_url: str, keys: dict[str, str], **more: Any) -> Settings:
    return Settings(database_url=database_url, db_timeout_seconds=30, encryption_keys=keys, **more)


async def _write_everything(settings: Settings) -> None:
    async with asgi_client(settings) as client:
        created = await client.post(
            f"/apps/{APP}/users/{USER}/sessions",
            json={
                "sessionId": SESSION,
                "state": {
                    "plain": MARKERS["session"],
                    "app:shared": MARKERS["app"],
                    "user:mine": {"nested": [MARKERS["user"]]},
                },
            },
        )
        assert created.status_code == 201, created.text
        for text, delta in (
            (MARKERS["event"], {"later": MARKERS["delta"]}),
            (MARKERS["memory"], {}),
        ):
            appended = await client.post(
                f"{SESSION_PATH}/events",
                json={
                    "author": "user",
                    "content": {"role": "user", "parts": [{"text": text}]},
                    "actions": {"stateDelta": delta},
                },
            )
            assert appended.status_code == 201, appended.text
        ingested = await client.post(
            f"/apps/{APP}/users/{USER}/memory", json={"sessionId": SESSION}
        )
        assert ingested.status_code == 200, ingested.text
        assert ingested.json()["memoriesAdded"] == 2


async def _read_everything(settings: Settings) -> dict[str, Any]:
    async with asgi_client(settings) as client:
        response = await client.get(SESSION_PATH)
        assert response.status_code == 200, response.text
        return response.json()  # type: ignore[no-any-return]


def _assert_intact(session: dict[str, Any]) -> None:
    assert session["state"] == {
        "plain": MARKERS["session"],
        "app:shared": MARKERS["app"],
        "user:mine": {"nested": [MARKERS["user"]]},
        "later": MARKERS["delta"],
    }
    texts = [
        event["content"]["parts"][0]["text"] for event in session["events"] if "content" in event
    ]
    assert texts == [MARKERS["event"], MARKERS["memory"]]


def _stored_bytes(database_url: str) -> bytes:
    """Everything the database holds, as an attacker with the disk or a dump
    reads it: the SQLite files (with the WAL), or pg_dump's output."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        path = Path(url.database or "")
        return b"".join(
            file.read_bytes() for file in path.parent.glob(path.name + "*") if file.is_file()
        )
    dump = subprocess.run(
        [
            PG_DUMP,
            "--data-only",
            "-h",
            url.host or "127.0.0.1",
            "-p",
            str(url.port or 5432),
            "-U",
            url.username or "postgres",
            url.database or "",
        ],
        check=True,
        capture_output=True,
    )
    return dump.stdout


def _leaked(database_url: str) -> list[str]:
    stored = _stored_bytes(database_url)
    return [name for name, marker in MARKERS.items() if marker.encode() in stored]


async def test_with_keys_nothing_written_is_stored_in_plaintext(database_url):
    settings = _settings(database_url, {"k1": _key()})
    await _write_everything(settings)
    _assert_intact(await _read_everything(settings))
    assert _leaked(database_url) == []


async def test_without_keys_the_same_markers_are_found(database_url):
    """The check above can fail: without keys the markers are there."""
    settings = _settings(database_url, {})
    await _write_everything(settings)
    assert set(_leaked(database_url)) == set(MARKERS)


async def test_memory_search_when_encrypted_full_keeps_keyword_search(database_url):
    settings = _settings(database_url, {"k1": _key()}, memory_search_when_encrypted="full")
    await _write_everything(settings)
    async with asgi_client(settings) as client:
        found = await client.get(
            f"/apps/{APP}/users/{USER}/memory", params={"query": MARKERS["memory"]}
        )
    assert found.status_code == 200, found.text
    texts = [memory["content"]["parts"][0]["text"] for memory in found.json()["memories"]]
    assert MARKERS["memory"] in texts


async def _search(settings: Settings, mode: str) -> list[str]:
    async with asgi_client(settings) as client:
        found = await client.get(
            f"/apps/{APP}/users/{USER}/memory", params={"query": MARKERS["memory"], "mode": mode}
        )
    assert found.status_code == 200, found.text
    return [memory["content"]["parts"][0]["text"] for memory in found.json()["memories"]]


async def test_memory_search_when_encrypted_vectors_only_searches_by_meaning_only(database_url):
    settings = _settings(database_url, {"k1": _key()})
    await _write_everything(settings)
    assert await _search(settings, "keyword") == []
    assert MARKERS["memory"] in await _search(settings, "semantic")


async def test_memory_search_when_encrypted_off_finds_nothing(database_url):
    settings = _settings(database_url, {"k1": _key()}, memory_search_when_encrypted="off")
    await _write_everything(settings)
    assert await _search(settings, "keyword") == []
    assert await _search(settings, "hybrid") == []


async def test_a_rotated_key_can_be_removed_after_reencrypt(database_url, caplog):
    k1, k2 = _key(), _key()
    await _write_everything(_settings(database_url, {"k1": k1}))
    rotated = _settings(database_url, {"k2": k2, "k1": k1})
    # Written under k2 now, read under both.
    async with asgi_client(rotated) as client:
        response = await client.patch(SESSION_PATH, json={"stateDelta": {"after": "rotation"}})
        assert response.status_code == 200, response.text
    with caplog.at_level(logging.INFO, logger="session_state.audit"):
        assert await run_reencrypt(rotated, 2) == 0
    (audited,) = [r for r in caplog.records if getattr(r, "audit_action", None) == "reencrypt"]
    assert (audited.audit_outcome, audited.audit_key_id) == ("ok", "k2")  # type: ignore[attr-defined]
    # The two events written under k1; the PATCH's, under k2, is passed by.
    assert audited.audit_events_resealed == 2  # type: ignore[attr-defined]
    only_k2 = _settings(database_url, {"k2": k2})
    session = await _read_everything(only_k2)
    assert session["state"].pop("after") == "rotation"
    _assert_intact(session)
    assert _leaked(database_url) == []
    # A second run finds nothing to do.
    assert await run_reencrypt(only_k2, 2) == 0


async def test_plaintext_rows_stay_readable_and_reencrypt_seals_them(database_url):
    await _write_everything(_settings(database_url, {}))
    keyed = _settings(database_url, {"k1": _key()})
    _assert_intact(await _read_everything(keyed))
    assert await run_reencrypt(keyed, 3) == 0
    _assert_intact(await _read_everything(keyed))
    # pg_dump reads live rows; SQLite's file, read whole, holds no freed
    # page, keyword index segment or WAL frame with the plaintext either.
    assert _leaked(database_url) == []


async def test_a_missing_key_is_an_error_naming_it(database_url, caplog):
    await _write_everything(_settings(database_url, {"k1": _key()}))
    async with asgi_client(_settings(database_url, {"k2": _key()})) as client:
        with caplog.at_level(logging.ERROR, logger="session_state.encryption"):
            response = await client.get(SESSION_PATH)
    assert any("'k1'" in record.getMessage() for record in caplog.records)
    assert response.status_code == 500
    problem = response.json()
    assert problem["code"] == "encryption_key_missing"
    assert "'k1'" in problem["detail"]
    assert MARKERS["session"] not in response.text


@pytest.mark.parametrize(
    "request_",
    [
        (
            "post",
            f"/apps/{APP}/users/{USER}/sessions",
            {"sessionId": "s2", "state": {"x": "\x01ss1:AAAA"}},
        ),
        ("patch", SESSION_PATH, {"stateDelta": {"app:x": "\x01ss1:"}}),
        (
            "post",
            f"{SESSION_PATH}/events",
            {"author": "a", "actions": {"stateDelta": {"user:y": "\x01ss1:x"}}},
        ),
    ],
    ids=["create", "patch", "append"],
)
async def test_a_state_value_that_looks_sealed_is_refused_with_or_without_keys(
    database_url, request_
):
    method, path, body = request_
    for keys in ({}, {"k1": _key()}):
        async with asgi_client(_settings(database_url, keys)) as client:
            await client.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": SESSION})
            response = await getattr(client, method)(path, json=body)
        assert response.status_code == 422, response.text
        assert response.json()["code"] == "validation_error"
        assert "reserved prefix" in response.text


async def test_export_writes_plaintext_and_import_seals_under_the_importers_key(
    database_url, tmp_path
):
    k1, k9 = _key(), _key()
    await _write_everything(_settings(database_url, {"k1": k1}))
    dump = tmp_path / "dump.jsonl"
    exported = run_cli(
        "export",
        "--output",
        str(dump),
        env={
            "SESSION_STATE_DATABASE_URL": database_url,
            "SESSION_STATE_ENCRYPTION_KEYS": json.dumps({"k1": k1}),
        },
    )
    assert exported.returncode == 0, exported.stderr
    # A dump is what the API returns: protected as a file, not by the keys.
    assert all(marker.encode() in dump.read_bytes() for marker in MARKERS.values())
    target = f"sqlite+aiosqlite:///{tmp_path / 'target.db'}"
    imported = run_cli(
        "import",
        str(dump),
        env={
            "SESSION_STATE_DATABASE_URL": target,
            "SESSION_STATE_ENCRYPTION_KEYS": json.dumps({"k9": k9}),
        },
    )
    assert imported.returncode == 0, imported.stderr
    keyed = _settings(target, {"k9": k9})
    _assert_intact(await _read_everything(keyed))
    assert _leaked(target) == []
    # Imported again: every row is found equal once opened, nothing conflicts.
    again = run_cli(
        "import",
        str(dump),
        env={
            "SESSION_STATE_DATABASE_URL": target,
            "SESSION_STATE_ENCRYPTION_KEYS": json.dumps({"k9": k9}),
        },
    )
    assert again.returncode == 0, again.stdout + again.stderr


async def test_reencrypt_while_appends_run_loses_no_update(database_url):
    """Appends racing the walk: every row it rewrites is compared with what
    it read, so no newer event or state value is overwritten by an older one."""
    k1, k2 = _key(), _key()
    await _write_everything(_settings(database_url, {"k1": k1}))
    rotated = _settings(database_url, {"k2": k2, "k1": k1})
    steps = 40

    async def appends() -> None:
        # A server not restarted yet: it still seals under k1, so the walk
        # keeps finding rows to move while they change under it.
        async with asgi_client(_settings(database_url, {"k1": k1, "k2": k2})) as client:
            for step in range(steps):
                response = await client.post(
                    f"{SESSION_PATH}/events",
                    json={
                        "author": "agent",
                        "actions": {
                            "stateDelta": {f"k{step}": step, "app:n": step, "user:n": step}
                        },
                    },
                )
                assert response.status_code == 201, response.text
                await asyncio.sleep(0)

    async def walks() -> None:
        while not appended.done():
            assert await run_reencrypt(rotated, 1) in (0, 1)  # 1: rows busy, run again
        assert await run_reencrypt(rotated, 50) == 0

    appended = asyncio.ensure_future(appends())
    await asyncio.gather(appended, walks())
    session = await _read_everything(_settings(database_url, {"k2": k2}))
    state = session["state"]
    # A lost update of the session's row would have dropped keys written
    # between the walk's read of it and its write.
    assert [state.get(f"k{step}") for step in range(steps)] == list(range(steps))
    assert (state["app:n"], state["user:n"]) == (steps - 1,) * 2
    assert len(session["events"]) == 2 + steps


async def test_reencrypt_stopped_part_way_resumes_when_run_again(database_url):
    k1, k2 = _key(), _key()
    await _write_everything(_settings(database_url, {"k1": k1}))
    rotated = _settings(database_url, {"k2": k2, "k1": k1})

    class Stopped(Exception):
        pass

    def progress(table: str, _total: int | None) -> Any:
        def advance(_rows: int) -> None:
            if table == "sessions":
                raise Stopped  # as Ctrl-C would, after the events were moved

        return advance

    engine = create_engine(rotated)
    try:
        with pytest.raises(Stopped):
            await reencrypt(
                engine,
                rotated.value_cipher(),  # type: ignore[arg-type]
                clear_keyword_index=True,
                progress=progress,
                batch_rows=1,
            )
    finally:
        await engine.dispose()
    assert await run_reencrypt(rotated, 1) == 0
    _assert_intact(await _read_everything(_settings(database_url, {"k2": k2})))


def test_the_keys_are_parsed_once_and_a_copy_with_other_keys_gets_its_own() -> None:
    keys = key_set("k1")
    settings = Settings(encryption_keys=keys)
    provider = settings.key_provider()
    assert provider is not None and provider.current_key_id == "k1"
    assert settings.key_provider() is provider
    assert Settings(encryption_keys=dict(keys)).key_provider() is provider
    copied = settings.model_copy(update={"encryption_keys": key_set("k2")})
    copied_provider = copied.key_provider()
    assert copied_provider is not None and copied_provider.current_key_id == "k2"
    assert settings.model_copy(update={"encryption_keys": {}}).key_provider() is None
