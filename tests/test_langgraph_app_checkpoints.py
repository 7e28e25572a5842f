"""The checkpoints of an app's threads (GET /apps/{app}/checkpoints, what
LangGraph's list(None) reads), over HTTP on both backends: newest id first
across threads, each with its own thread's values and pending writes; one
user's with userId; the thread list's filters (namespace, metadata, before,
limit); expired threads left out; keyset pages that neither lose nor repeat
a checkpoint, ties between threads and namespaces included, and that end
early to fit a response; hostile queries a 4xx, never a 500. (End-user
tokens: tests/test_end_user_tokens.py.)"""

import base64
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from session_state.core.config import Settings
from session_state.main import create_app
from tests.conftest import Clock

APP = "graphs"
LISTED = f"/apps/{APP}/checkpoints"


@pytest.fixture
async def http(clocked_app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=clocked_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def put(
    client: httpx.AsyncClient,
    thread: str,
    checkpoint_id: str,
    *,
    app: str = APP,
    ns: str = "",
    value: bytes | None = None,
    step: int = 0,
    **extra: Any,
) -> None:
    """A checkpoint whose channel "messages" has version "1" in every thread,
    holding `value` (the thread's name by default)."""
    body = {
        "checkpoint": {"type": "json", "data": b64(b'{"v": 4}')},
        "metadata": {"source": "loop", "step": step, "thread": thread},
        "channelVersions": {"messages": "1"},
        "newValues": [
            {
                "channel": "messages",
                "version": "1",
                "type": "bytes",
                "data": b64(value or thread.encode()),
            }
        ],
        **extra,
    }
    response = await client.put(
        f"/apps/{app}/threads/{thread}/checkpoints/{checkpoint_id}",
        params={"checkpointNs": ns},
        json=body,
    )
    assert response.status_code == 204, response.text


async def write(client: httpx.AsyncClient, thread: str, checkpoint_id: str, data: bytes) -> None:
    body = {
        "writes": [{"taskId": "t", "idx": 0, "channel": "out", "type": "bytes", "data": b64(data)}]
    }
    response = await client.post(
        f"/apps/{APP}/threads/{thread}/checkpoints/{checkpoint_id}/writes", json=body
    )
    assert response.status_code == 204, response.text


async def page(client: httpx.AsyncClient, path: str = LISTED, **params: Any) -> dict[str, Any]:
    response = await client.get(path, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def keys(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["checkpointId"], c["threadId"], c["checkpointNs"]) for c in body["checkpoints"]]


async def walk(client: httpx.AsyncClient, **params: Any) -> tuple[list[tuple[str, str, str]], int]:
    """Every page of a list: the checkpoints in order and how many pages."""
    body = await page(client, **params)
    listed, pages = keys(body), 1
    while body["nextPageToken"] is not None:
        body = await page(client, **params, pageToken=body["nextPageToken"])
        listed += keys(body)
        pages += 1
    return listed, pages


async def test_checkpoints_of_every_thread_newest_first_each_with_its_own_values_and_writes(
    http: httpx.AsyncClient,
) -> None:
    await put(http, "a", "c1")
    await put(http, "b", "c2")
    await put(http, "a", "c3", parentCheckpointId="c1")
    await write(http, "a", "c3", b"a's write")
    await write(http, "b", "c2", b"b's write")
    body = await page(http)
    assert keys(body) == [("c3", "a", ""), ("c2", "b", ""), ("c1", "a", "")]
    assert body["nextPageToken"] is None
    by_id = {c["checkpointId"]: c for c in body["checkpoints"]}
    # Both threads have "messages" at version "1": each checkpoint has its own thread's.
    assert base64.b64decode(by_id["c2"]["channelValues"][0]["data"]) == b"b"
    assert base64.b64decode(by_id["c3"]["channelValues"][0]["data"]) == b"a"
    assert [base64.b64decode(w["data"]) for w in by_id["c3"]["pendingWrites"]] == [b"a's write"]
    assert [base64.b64decode(w["data"]) for w in by_id["c2"]["pendingWrites"]] == [b"b's write"]
    assert by_id["c1"]["pendingWrites"] == []
    assert by_id["c3"]["parentCheckpointId"] == "c1"
    # Each is what the thread's own list gives, with its thread's id.
    own = await page(http, f"/apps/{APP}/threads/a/checkpoints")
    assert [{**c, "threadId": "a"} for c in own["checkpoints"]] == [by_id["c3"], by_id["c1"]]


async def test_filters_narrow_the_list_as_they_narrow_a_threads(http: httpx.AsyncClient) -> None:
    await put(http, "a", "c1", userId="ada", step=1)
    await put(http, "b", "c2", userId="bo", step=2)
    await put(http, "a", "c3", ns="child:1", step=2)
    await put(http, "c", "c4", userId="ada", step=3)
    assert keys(await page(http, userId="ada")) == [
        ("c4", "c", ""),
        ("c3", "a", "child:1"),
        ("c1", "a", ""),
    ]
    assert keys(await page(http, userId="bo")) == [("c2", "b", "")]
    assert keys(await page(http, userId="cy")) == []
    assert keys(await page(http, checkpointNs="child:1")) == [("c3", "a", "child:1")]
    assert [c for c, _, _ in keys(await page(http, checkpointNs=""))] == ["c4", "c2", "c1"]
    assert [c for c, _, _ in keys(await page(http, metadata='{"step": 2}'))] == ["c3", "c2"]
    assert [c for c, _, _ in keys(await page(http, metadata='{"thread": "a", "step": 1}'))] == [
        "c1"
    ]
    assert [c for c, _, _ in keys(await page(http, before="c3"))] == ["c2", "c1"]
    assert [c for c, _, _ in keys(await page(http, before="c3", userId="ada"))] == ["c1"]
    assert [c for c, _, _ in keys(await page(http, limit=2))] == ["c4", "c3"]


async def test_expired_deleted_and_other_apps_threads_are_not_listed(
    http: httpx.AsyncClient, clock: Clock
) -> None:
    await put(http, "short", "c1", ttlSeconds=60)
    await put(http, "long", "c2", ttlSeconds=600)
    await put(http, "gone", "c3")
    await put(http, "elsewhere", "c4", app="other")
    assert [c for c, _, _ in keys(await page(http))] == ["c3", "c2", "c1"]
    assert (await http.delete(f"/apps/{APP}/threads/gone")).status_code == 204
    clock.advance(60)
    assert keys(await page(http)) == [("c2", "long", "")]
    assert keys(await page(http, "/apps/other/checkpoints")) == [("c4", "elsewhere", "")]
    assert await page(http, "/apps/empty/checkpoints") == {"checkpoints": [], "nextPageToken": None}


async def test_a_walk_lists_each_checkpoint_once_ties_between_threads_and_namespaces_included(
    http: httpx.AsyncClient,
) -> None:
    """The same checkpoint id in several threads and namespaces (a copied
    thread has its source's ids) is ordered by thread, then namespace, and
    no page boundary between them loses or repeats one."""
    expected = []
    for index in range(5):
        for thread in ("t1", "t2", "t3"):
            for ns in ("", "child:1"):
                await put(http, thread, f"c{index}", ns=ns)
                expected.append((f"c{index}", thread, ns))
    expected.sort(reverse=True)
    for limit in (1, 2, 4, 7, 100):
        listed, pages = await walk(http, limit=limit)
        assert listed == expected, limit
        assert pages == -(-len(expected) // limit)
    listed, _ = await walk(http, limit=3, checkpointNs="child:1", before="c3")
    assert listed == [key for key in expected if key[2] == "child:1" and key[0] < "c3"]


async def test_a_page_ends_early_to_fit_one_response(database_url: str, clock: Clock) -> None:
    settings = Settings(
        database_url=database_url,
        db_timeout_seconds=30,
        sweep_interval_seconds=0,
        max_event_bytes=100_000,
        max_state_bytes=100_000,
        max_response_bytes=600_000,
    )
    app = create_app(settings, clock=clock)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            for index in range(10):
                await put(
                    client,
                    f"t{index}",
                    f"c{index}",
                    checkpoint={"type": "bytes", "data": b64(bytes(100_000))},
                )
            first = await client.get(LISTED)
            assert first.status_code == 200
            assert len(first.content) <= 600_000
            assert 1 <= len(first.json()["checkpoints"]) < 10
            listed, pages = await walk(client)
    assert [c for c, _, _ in listed] == [f"c{index}" for index in reversed(range(10))]
    assert pages > 2


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"limit": "0"}, 422),
        ({"limit": "1001"}, 422),
        ({"limit": "NaN"}, 422),
        ({"limit": str(10**40)}, 422),
        ({"userId": "a\x00b"}, 422),
        ({"userId": "x" * 129}, 422),
        ({"userId": ""}, 422),
        ({"checkpointNs": "a\x00"}, 422),
        # Bytes that are not UTF-8, as in every query.
        ("checkpointNs=%ED%A0%80", 400),
        ("userId=%FF", 400),
        ({"before": "a\x00"}, 422),
        ({"before": "c" * 20_000}, 422),
        ({"checkpointNs": "n" * 20_000}, 422),
        ({"metadata": '{"step": NaN}'}, 422),
        ({"metadata": '{"step": 1e999}'}, 422),
        ({"metadata": "{"}, 422),
        ({"metadata": "[1]"}, 422),
        ({"metadata": "[" * 5000 + "]" * 5000}, 422),
        ({"metadata": '{"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}}}}}}}'}, 200),
        ({"pageToken": "garbage"}, 400),
        ({"pageToken": "x" * 5000}, 400),
        ({"pageToken": ""}, 400),
    ],
)
async def test_hostile_queries_are_a_4xx_problem_never_a_500(
    http: httpx.AsyncClient, params: dict[str, str] | str, status: int
) -> None:
    await put(http, "t1", "c1")
    if isinstance(params, str):  # bytes no str holds: sent as the query as it is
        response = await http.get(f"{LISTED}?{params}")
    else:
        response = await http.get(LISTED, params=params)
    assert response.status_code == status, response.text
    if status == 200:
        assert response.json() == {"checkpoints": [], "nextPageToken": None}
    else:
        assert response.headers["content-type"] == "application/problem+json"


def forged(position: Any, user: str = "") -> str:
    """A token as the server makes them (app.core.pagination) holding `position`."""
    from session_state.core.pagination import encode_token

    return encode_token("checkpoints", (APP, user), position)


@pytest.mark.parametrize(
    "position",
    [
        [],
        ["c1", "t1"],
        ["c1", "t1", "", "extra"],
        [1, "t1", ""],
        ["c1", None, ""],
        ["c1", "t1", "a\x00"],
    ],
)
async def test_a_token_holding_anything_but_three_texts_is_a_400(
    http: httpx.AsyncClient, position: Any
) -> None:
    response = await http.get(LISTED, params={"pageToken": forged(position)})
    assert response.status_code == 400, response.text
    assert response.json()["detail"] == "pageToken is not a valid page token"


async def test_a_token_of_another_list_is_a_400(http: httpx.AsyncClient) -> None:
    for index in range(3):
        await put(http, f"t{index}", f"c{index}", userId="ada")
    token = (await page(http, limit=1))["nextPageToken"]
    assert token is not None
    for path, params in [
        (LISTED, {"userId": "ada"}),
        ("/apps/other/checkpoints", {}),
        (f"/apps/{APP}/threads", {}),
    ]:
        response = await http.get(path, params={**params, "pageToken": token})
        assert response.status_code == 400, response.text
        assert response.json()["detail"] == "pageToken does not belong to this list"
    # A forged position past every checkpoint is an empty page, not an error.
    empty = await http.get(LISTED, params={"pageToken": forged(["", "", ""])})
    assert empty.json() == {"checkpoints": [], "nextPageToken": None}
