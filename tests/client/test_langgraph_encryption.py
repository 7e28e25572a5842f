"""Encryption at rest of LangGraph's values (app.langgraph.sealing), end to
end: a real graph on SessionStateSaver and items of SessionStateStore, on a
server started with SESSION_STATE_ENCRYPTION_KEYS. The raw SQLite files and
a pg_dump hold none of the texts the graph's state, its pending writes and
the store's items said, while the saver and the store give them back
intact, filters and keyword queries included; a new first key keeps every
read working, `reencrypt` moves every row to it, after which the old key
can go; a server without the key of a stored value answers with an error
naming that key id, never with garbage. LangGraph's conformance suite and
the store's script of InMemoryStore's answers pass with encryption on."""

import operator
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from session_state.core.config import Settings
from session_state.db.engine import create_engine
from session_state.encryption.reencrypt import reencrypt
from session_state.langgraph.resealing import RESEALED_TABLES
from session_state_client import InternalServerError
from session_state_client.langgraph import SessionStateSaver, SessionStateStore
from tests.client.test_langgraph_conformance import passes_every_conformance_test
from tests.client.test_langgraph_store import answers_as_langgraphs_in_memory_store
from tests.conftest import (
    ServerProcess,
    _async_url,
    create_postgres_database,
    drop_postgres_database,
    migrate,
    run_blocking,
)
from tests.encryption_keys import cipher_of, key_set, keys_setting

PG_DUMP = "/usr/lib/postgresql/15/bin/pg_dump"
THREAD = {"configurable": {"thread_id": "trip-1", "user_id": "ada"}}


class Trip(TypedDict):
    notes: Annotated[list[str], operator.add]


def _graph(saver: SessionStateSaver, said: str) -> Any:
    """Two steps, each writing what was said into the state (as a pending
    write of its task, then in the channel's value and the checkpoint)."""
    builder = StateGraph(Trip)
    builder.add_node("listen", lambda state: {"notes": [f"{said} heard"]})
    builder.add_node("answer", lambda state: {"notes": [f"{said} answered"]})
    builder.add_edge(START, "listen")
    builder.add_edge("listen", "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=saver)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(
    request: pytest.FixtureRequest, tmp_path: Path, postgres_available: bool
) -> Iterator[str]:
    """A database of this test's own: its dump holds this test's rows only."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'encrypted.db'}"
        return
    if not postgres_available:
        pytest.skip("PostgreSQL not reachable")
    name = create_postgres_database("session_state_encrypted")
    url = _async_url(name)
    migrate(url)
    yield url
    drop_postgres_database(name)


def _stored_bytes(database_url: str) -> bytes:
    """Everything the database holds, as a thief would read it."""
    if database_url.startswith("sqlite"):
        path = Path(database_url.split("///", 1)[1])
        files = [path, path.with_name(path.name + "-wal")]
        return b"".join(file.read_bytes() for file in files if file.exists())
    name = database_url.rsplit("/", 1)[1]
    dumped = subprocess.run(
        [PG_DUMP, "-h", "127.0.0.1", "-U", "postgres", "--data-only", name],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return dumped.stdout


def _server(database_url: str, keys: dict[str, str]) -> ServerProcess:
    return ServerProcess(database_url, SESSION_STATE_ENCRYPTION_KEYS=keys_setting(keys)).start()


def _write(base_url: str, app: str, said: str) -> None:
    with SessionStateSaver(base_url, app_name=app) as saver:
        _graph(saver, said).invoke({"notes": [f"{said} asked"]}, THREAD)
    with SessionStateStore(base_url, app_name=app) as store:
        store.put(("ada", "notes"), "hotel", {"text": f"{said} booked", "stars": 4})


def _read(base_url: str, app: str) -> dict[str, Any]:
    """What the saver and the store give back."""
    with SessionStateSaver(base_url, app_name=app) as saver:
        graph = _graph(saver, "unused")
        notes = graph.get_state(THREAD).values["notes"]
        writes = [
            value
            for snapshot in saver.list(THREAD)
            for _, _, value in snapshot.pending_writes or []
        ]
    with SessionStateStore(base_url, app_name=app) as store:
        found = store.get(("ada", "notes"), "hotel")
        searched = store.search(("ada",), filter={"stars": {"$gte": 4}}, query="booked")
        missed = store.search(("ada",), filter={"stars": 5})
    return {
        "notes": notes,
        "writes": writes,
        "item": None if found is None else found.value,
        "searched": [item.key for item in searched],
        "missed": [item.key for item in missed],
    }


def _expected(*said: str) -> dict[str, Any]:
    notes = [
        note for text in said for note in (f"{text} asked", f"{text} heard", f"{text} answered")
    ]
    return {
        "notes": notes,
        "item": {"text": f"{said[-1]} booked", "stars": 4},
        "searched": ["hotel"],
        "missed": [],
    }


def test_values_are_sealed_at_rest_read_intact_and_move_to_a_new_key(database_url: str) -> None:
    app = f"lg-{uuid.uuid4().hex[:10]}"
    first = f"zanzibar{uuid.uuid4().hex[:12]}"
    old = key_set("k1")
    server = _server(database_url, old)
    try:
        _write(server.base_url, app, first)
        read = _read(server.base_url, app)
    finally:
        server.stop()
    assert {key: read[key] for key in ("notes", "item", "searched", "missed")} == _expected(first)
    # The tasks' pending writes came back opened too.
    assert [f"{first} heard"] in read["writes"] and [f"{first} answered"] in read["writes"]
    stored = _stored_bytes(database_url)
    assert app.encode() in stored  # the rows are there, identifiers in plaintext
    assert first.encode() not in stored

    # A new first key: reads of what the old one sealed keep working, new
    # writes are sealed under the new one.
    new = {**key_set("k2"), **old}
    second = f"kilimanjaro{uuid.uuid4().hex[:12]}"
    server = _server(database_url, new)
    try:
        assert _read(server.base_url, app)["notes"] == _expected(first)["notes"]
        _write(server.base_url, app, second)
    finally:
        server.stop()

    async def reseal() -> tuple[int, int]:
        engine = create_engine(Settings(database_url=database_url))
        try:
            cipher = cipher_of(new)
            resealed = []
            for _ in range(2):  # `session-state reencrypt`'s walk, run twice
                done = await reencrypt(
                    engine, cipher, clear_keyword_index=True, progress=lambda _t, _n: _ignore
                )
                resealed.append(sum(done.tables[table].resealed for table in RESEALED_TABLES))
            return resealed[0], resealed[1]
        finally:
            await engine.dispose()

    resealed, again = run_blocking(reseal())
    assert resealed > 0 and again == 0

    # Every row under the new key: the old one can go.
    server = _server(database_url, {"k2": new["k2"]})
    try:
        read = _read(server.base_url, app)
        assert {key: read[key] for key in ("notes", "item", "searched", "missed")} == _expected(
            first, second
        )
    finally:
        server.stop()
    stored = _stored_bytes(database_url)
    assert first.encode() not in stored and second.encode() not in stored

    # Without the key, a clear error naming it, never garbage.
    server = _server(database_url, key_set("k3"))
    try:
        with (
            SessionStateSaver(server.base_url, app_name=app) as saver,
            pytest.raises(InternalServerError) as raised,
        ):
            saver.get_tuple(THREAD)
        assert raised.value.code == "encryption_key_missing"
        assert "'k2'" in str(raised.value)
        with (
            SessionStateStore(server.base_url, app_name=app) as store,
            pytest.raises(InternalServerError, match="'k2'"),
        ):
            store.get(("ada", "notes"), "hotel")
    finally:
        server.stop()


async def test_langgraphs_suites_pass_with_encryption_on(database_url: str) -> None:
    server = _server(database_url, key_set("k1"))
    try:
        await passes_every_conformance_test(server.base_url)
        await answers_as_langgraphs_in_memory_store(server.base_url)
    finally:
        server.stop()


def _ignore(_rows: int) -> None:
    """reencrypt's progress, not shown."""
