"""Request ids, metrics and readiness."""

import re
import socket

import httpx
import pytest


async def test_a_request_id_is_generated_and_echoed(client):
    response = await client.get("/healthz")
    assert re.fullmatch(r"[0-9a-f]{32}", response.headers["X-Request-ID"])


async def test_a_given_request_id_is_echoed_in_header_and_problem_body(client):
    response = await client.get(
        "/apps/a/users/u/sessions/missing", headers={"X-Request-ID": "trace-42"}
    )
    assert response.status_code == 404
    assert response.headers["X-Request-ID"] == "trace-42"
    assert response.json()["requestId"] == "trace-42"


async def test_an_unsafe_request_id_is_replaced(client):
    response = await client.get("/healthz", headers={"X-Request-ID": "bad id\twith spaces"})
    assert response.headers["X-Request-ID"] != "bad id\twith spaces"


def _metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{key}="{value}"' in line for key, value in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def answered_on(base_url: str, route: str, status: int = 200) -> float:
    """POST requests a started server answered `status` on `route` (a template)."""
    async with httpx.AsyncClient() as http:
        metrics = (await http.get(f"{base_url}/metrics")).text
    return _metric(
        metrics,
        "session_state_http_requests_total",
        method="POST",
        route=route,
        status=str(status),
    )


async def test_metrics_count_requests_by_route_template_appends_and_stale_rejections(client):
    before = (await client.get("/metrics")).text
    created = await client.post("/apps/m/users/u/sessions", json={"sessionId": "s"})
    path = "/apps/m/users/u/sessions/s/events"
    await client.post(path, json={"author": "a", "id": "e1"})
    await client.post(path, json={"author": "a", "id": "e1"})
    stale = await client.post(
        path, json={"author": "a"}, headers={"If-Match": created.headers["ETag"]}
    )
    assert stale.status_code == 412
    after = (await client.get("/metrics")).text

    def grew(name: str, **labels: str) -> float:
        return _metric(after, name, **labels) - _metric(before, name, **labels)

    template = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events"
    assert grew("session_state_http_requests_total", route=template, status="201") == 1
    assert grew("session_state_http_requests_total", route=template, status="412") == 1
    assert grew("session_state_http_request_duration_seconds_count", route=template) == 3
    assert grew("session_state_appends_total", result="stored") == 1
    assert grew("session_state_appends_total", result="retry") == 1
    assert grew("session_state_events_stored_total") == 1
    assert grew("session_state_stale_rejections_total") == 1
    assert "session_state_db_pool_connections_in_use" in after
    assert "session_state_db_errors_total" in after or "# HELP session_state_db_errors" in after


async def test_events_stored_moves_by_the_events_each_write_stores(client):
    """Single appends, batches and state PATCHes (which store an event) are
    counted alike, once; retries, partial events and refused writes store
    nothing and count nothing. Each 412 is one stale rejection."""
    created = await client.post("/apps/m/users/u/sessions", json={"sessionId": "counted"})
    assert created.status_code == 201
    session = "/apps/m/users/u/sessions/counted"
    batch = {"events": [{"id": f"b{n}", "author": "a"} for n in range(3)]}
    stale = {"If-Match": '"0"'}
    writes = [
        # (method, path, body, headers, status, events stored, stale rejections)
        ("POST", "/events", {"id": "e1", "author": "a"}, {}, 201, 1, 0),
        ("POST", "/events", {"id": "e1", "author": "a"}, {}, 200, 0, 0),
        ("POST", "/events", {"author": "a", "partial": True}, {}, 200, 0, 0),
        ("POST", "/events", {"author": 5}, {}, 422, 0, 0),
        ("POST", "/events", {"author": "a"}, stale, 412, 0, 1),
        ("POST", "/events/batch", batch, {}, 201, 3, 0),
        ("POST", "/events/batch", batch, {}, 200, 0, 0),
        ("POST", "/events/batch", {"events": [{"author": "a"}]}, stale, 412, 0, 1),
        ("PATCH", "", {"stateDelta": {"k": 1}}, {}, 200, 1, 0),
        ("PATCH", "", {"ttlSeconds": 60}, {}, 200, 0, 0),
        ("PATCH", "", {"stateDelta": {"k": 2}}, stale, 412, 0, 1),
        ("DELETE", "/events?last=1", None, stale, 412, 0, 1),
    ]
    for method, path, body, headers, status, stored, rejected in writes:
        before = (await client.get("/metrics")).text
        response = await client.request(method, session + path, json=body, headers=headers)
        assert response.status_code == status, (method, path, body, response.text)
        after = (await client.get("/metrics")).text
        for name, expected in (
            ("session_state_events_stored_total", stored),
            ("session_state_stale_rejections_total", rejected),
        ):
            moved = _metric(after, name) - _metric(before, name)
            assert moved == expected, (name, method, path, body)
    events = (await client.get(session + "/events")).json()["events"]
    assert len(events) == 1 + 3 + 1


async def test_readiness_reports_a_reachable_current_database(client):
    response = await client.get("/readyz")
    assert response.status_code == 200


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
async def test_docs_pages_load_their_assets_from_this_server(client, path):
    page = (await client.get(path)).text
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert assets, page
    for asset in assets:
        assert asset.startswith("/"), f"{asset} is not served by this server"
        assert (await client.get(asset)).status_code == 200
    assert "cdn" not in page.lower() and "googleapis" not in page


@pytest.mark.parametrize(
    ("postgres_error", "unavailable"),
    [
        ("TooManyConnectionsError", True),
        ("CannotConnectNowError", True),
        ("AdminShutdownError", True),
        ("UniqueViolationError", False),
        ("UndefinedTableError", False),
    ],
)
def test_database_errors_that_mean_unavailable_become_503(postgres_error, unavailable):
    """Both ways the PostgreSQL store meets asyncpg's errors: as SQLAlchemy
    reports them (the driver's error is the cause of the adapted one) and
    unwrapped (the append and session read run on asyncpg directly). Too many
    clients, shutting down or starting up is the database being unavailable
    (503, retry later); anything else is a bug (500)."""
    import asyncpg
    from sqlalchemy.exc import DBAPIError

    from session_state.core.errors import DatabaseUnavailable
    from session_state.db.database_errors import as_domain_error

    driver_error = getattr(asyncpg.exceptions, postgres_error)("from PostgreSQL")
    adapted = Exception("adapted by SQLAlchemy")
    adapted.__cause__ = driver_error
    for error in (DBAPIError("SELECT 1", {}, adapted), driver_error):
        domain_error = as_domain_error(error)
        assert isinstance(domain_error, DatabaseUnavailable) is unavailable
        assert domain_error is error or unavailable


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError(111, "Connection refused"),
        socket.gaierror(-2, "Name or service not known"),
        OSError(101, "Network is unreachable"),
    ],
)
def test_a_database_host_that_cannot_be_reached_or_resolved_is_503(error):
    """The PostgreSQL store meets the OS's errors unwrapped: a host whose
    name stopped resolving (a stopped compose service) was a 500."""
    from session_state.db.database_errors import as_domain_error
    from session_state.http.problems import error_response

    response = error_response(as_domain_error(error))
    assert response is not None and response.status_code == 503
