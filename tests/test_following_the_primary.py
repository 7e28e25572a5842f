"""A connection whose server is lost (dropped mid-statement, shut down, no
longer the primary) is discarded, never lent again, and the request answers
503 with Retry-After in problem+json: never a 500. New connections go where
the URL's target_session_attrs finds the primary, so the service follows a
failover by itself (tests/test_failover.py does it on a real cluster; these
tests make the same faults on one server)."""

import asyncio

import asyncpg
import httpx
import pytest

from session_state.core.config import Settings
from session_state.core.errors import DatabaseUnavailable
from session_state.db.database_errors import as_domain_error, loses_server
from session_state.main import create_app
from tests.conftest import POSTGRES_ADMIN_URL, migrate

SESSION = "/apps/failover/users/u/sessions/s"


@pytest.fixture
def database_url(fresh_postgres_url: str) -> str:
    migrate(fresh_postgres_url)
    return fresh_postgres_url


def _event(number: int) -> dict[str, object]:
    return {
        "id": f"e{number}",
        "author": "user",
        "timestamp": 1_800_000_000.0 + number,
        "actions": {"stateDelta": {"count": number}},
    }


def _assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == "1"
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "database_unavailable"


async def _admin(database_url: str, statement: str, *arguments: object) -> object:
    connection = await asyncpg.connect(POSTGRES_ADMIN_URL)
    try:
        return await connection.fetchval(statement, *arguments)
    finally:
        await connection.close()


async def _backends(database: str) -> set[int]:
    connection = await asyncpg.connect(POSTGRES_ADMIN_URL)
    try:
        rows = await connection.fetch(
            "SELECT pid FROM pg_stat_activity "
            "WHERE datname = $1 AND application_name = 'session-state'",
            database,
        )
    finally:
        await connection.close()
    return {row[0] for row in rows}


async def test_a_server_that_stops_taking_writes_is_503_until_it_takes_them_again(
    database_url: str,
) -> None:
    """As a primary demoted under the pool (through a proxy, or a URL without
    target_session_attrs): its connections answer writes with
    read_only_sql_transaction. They are discarded: connections that were
    read-only stay read-only for their life, so a pool that kept one would
    keep failing once writes are possible again."""
    database = database_url.rsplit("/", 1)[1]
    app = create_app(Settings(database_url=database_url, db_pool_size=3))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http,
    ):
        assert (await http.post(SESSION.rsplit("/", 1)[0], json={"sessionId": "s"})).is_success
        assert (await http.post(f"{SESSION}/events", json=_event(1))).status_code == 201
        # Every connection, pooled and new, becomes read-only.
        await _admin(
            database_url, f'ALTER DATABASE "{database}" SET default_transaction_read_only = on'
        )
        # Both pools: every request's, and the one grouped appends are sent on.
        store = app.state.service.store
        assert store.batch_pool is not store.pool
        for pool in (store.pool, store.batch_pool):
            pooled = [await pool.acquire() for _ in range(pool.get_max_size())]
            for connection in pooled:
                await connection.execute("SET default_transaction_read_only = on")
            for connection in pooled:
                await pool.release(connection)
        read_only_backends = await _backends(database)

        _assert_unavailable(await http.post(f"{SESSION}/events", json=_event(2)))
        batch = {"events": [_event(2), _event(3)]}
        _assert_unavailable(await http.post(f"{SESSION}/events/batch", json=batch))
        _assert_unavailable(
            await http.post("/apps/failover/users/u/memory", json={"sessionId": "s"})
        )
        _assert_unavailable(await http.post(SESSION.rsplit("/", 1)[0], json={"sessionId": "t"}))
        ready = await http.get("/readyz")
        _assert_unavailable(ready)
        assert "read-only" in ready.json()["detail"]

        await _admin(
            database_url, f'ALTER DATABASE "{database}" RESET default_transaction_read_only'
        )
        # The same event again, as a client retries: stored once.
        assert (await http.post(f"{SESSION}/events", json=_event(2))).status_code == 201
        assert (await http.get("/readyz")).status_code == 200
        assert not (await _backends(database)) & read_only_backends
        session = (await http.get(SESSION)).json()
        assert [event["id"] for event in session["events"]] == ["e1", "e2"]
        assert session["state"] == {"count": 2}


async def test_a_connection_dropped_mid_statement_is_503_and_not_lent_again(
    database_url: str,
) -> None:
    database = database_url.rsplit("/", 1)[1]
    app = create_app(Settings(database_url=database_url, db_pool_size=2))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http,
    ):
        assert (await http.post(SESSION.rsplit("/", 1)[0], json={"sessionId": "s"})).is_success
        # The session held by another transaction: the append waits for it,
        # inside its statement, when its server drops the connection.
        holder = await asyncpg.connect(POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{database}")
        try:
            transaction = holder.transaction()
            await transaction.start()
            await holder.execute("SELECT 1 FROM sessions WHERE id = 's' FOR UPDATE")
            append = asyncio.create_task(http.post(f"{SESSION}/events", json=_event(1)))
            waiting = None
            for _ in range(200):
                waiting = await _admin(
                    database_url,
                    "SELECT pid FROM pg_stat_activity WHERE datname = $1 "
                    "AND application_name = 'session-state' AND wait_event_type = 'Lock'",
                    database,
                )
                if waiting is not None:
                    break
                await asyncio.sleep(0.02)
            assert waiting is not None, "the append never waited for the session"
            await _admin(database_url, "SELECT pg_terminate_backend($1)", waiting)
            _assert_unavailable(await append)
            await transaction.rollback()
        finally:
            await holder.close()
        assert waiting not in await _backends(database)
        for number in (1, 2, 3):
            assert (await http.post(f"{SESSION}/events", json=_event(number))).status_code == 201
        session = (await http.get(SESSION)).json()
        assert [event["id"] for event in session["events"]] == ["e1", "e2", "e3"]


@pytest.mark.parametrize(
    ("error", "lost"),
    [
        (asyncpg.exceptions.ReadOnlySQLTransactionError("read-only"), True),
        (asyncpg.exceptions.AdminShutdownError("terminating"), True),
        (asyncpg.exceptions.CannotConnectNowError("starting up"), True),
        (asyncpg.exceptions.ConnectionDoesNotExistError("closed mid-operation"), True),
        (asyncpg.exceptions.InternalClientError("cannot switch to state 15"), True),
        (asyncpg.exceptions.TargetServerAttributeNotMatched("no primary"), True),
        (asyncpg.exceptions.InterfaceError("connection is closed"), True),
        (ConnectionResetError(104, "Connection reset by peer"), True),
        (asyncpg.exceptions.QueryCanceledError("statement timeout"), False),
        (TimeoutError(), False),
    ],
)
def test_errors_of_a_lost_or_demoted_server_discard_the_connection_and_are_503(error, lost):
    assert loses_server(error) is lost
    assert isinstance(as_domain_error(error), DatabaseUnavailable)


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.exceptions.UniqueViolationError("duplicate"),
        asyncpg.exceptions.UndefinedTableError("no table"),
        ValueError("a bug"),
    ],
)
def test_errors_of_a_statement_keep_the_connection(error):
    assert not loses_server(error)
    assert as_domain_error(error) is error
