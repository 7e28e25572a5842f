"""The service's rules on LangGraph's long-term store, on both backends:
TTL measured by the app's clock and refreshed on read, expired items missing
for every reader and freed by the sweeper, erasure of a user (the items
whose namespace starts with them) and of an app, API keys scoped to apps,
and hostile input refused with 422, never a 500."""

from typing import Any

import httpx
import pytest

from session_state.core.config import Settings
from session_state.langgraph.store.domain import ScanBudget
from session_state.main import create_app
from tests.conftest import Clock
from tests.hostile import assert_problem

APP = "memories"
BATCH = f"/apps/{APP}/store/batch"


async def _batch(client: httpx.AsyncClient, *ops: dict[str, Any], app: str = APP) -> list[Any]:
    answer = await client.post(f"/apps/{app}/store/batch", json={"ops": list(ops)})
    assert answer.status_code == 200, answer.text
    results: list[Any] = answer.json()["results"]
    return results


def _put(namespace: list[str], key: str, value: Any, ttl: float | None = None) -> dict[str, Any]:
    return {"op": "put", "namespace": namespace, "key": key, "value": value, "ttlSeconds": ttl}


def _get(namespace: list[str], key: str, refresh: bool = True) -> dict[str, Any]:
    return {"op": "get", "namespace": namespace, "key": key, "refreshTtl": refresh}


async def test_ttl_is_refreshed_by_reads_that_ask_and_expired_items_are_missing(
    clocked_client: httpx.AsyncClient, clock: Clock
) -> None:
    await _batch(clocked_client, _put(["ann", "notes"], "n1", {"v": 1}, ttl=60))
    await _batch(clocked_client, _put(["ann", "notes"], "forever", {"v": 2}))
    clock.advance(50)
    [item] = await _batch(clocked_client, _get(["ann", "notes"], "n1"))
    assert item["expiresAt"] == pytest.approx(clock.now - 50 + 60)  # as it was when read
    clock.advance(50)  # 100 s after the put, 50 after the refresh
    [item] = await _batch(clocked_client, _get(["ann", "notes"], "n1", refresh=False))
    assert item is not None and item["expiresAt"] == pytest.approx(clock.now + 10)
    # A search refreshes what it returns.
    [found] = await _batch(
        clocked_client, {"op": "search", "namespacePrefix": ["ann"], "refreshTtl": True}
    )
    assert sorted(entry["key"] for entry in found) == ["forever", "n1"]
    clock.advance(59)
    [item] = await _batch(clocked_client, _get(["ann", "notes"], "n1", refresh=False))
    assert item is not None
    clock.advance(2)
    [item, found, namespaces] = await _batch(
        clocked_client,
        _get(["ann", "notes"], "n1"),
        {"op": "search", "namespacePrefix": ["ann"]},
        {"op": "listNamespaces"},
    )
    assert item is None
    assert [entry["key"] for entry in found] == ["forever"]
    assert namespaces == [["ann", "notes"]]
    # Put again after expiry: a new item, created now.
    await _batch(clocked_client, _put(["ann", "notes"], "n1", {"v": 3}, ttl=60))
    [item] = await _batch(clocked_client, _get(["ann", "notes"], "n1"))
    assert item["createdAt"] == pytest.approx(clock.now) and item["value"] == {"v": 3}


async def _stored_keys(app: Any) -> list[tuple[str, str]]:
    """Every row, expired or not (read as at the epoch)."""
    async with app.state.store.storage.transaction(write=False) as items:
        rows = await items.search(APP, "", 0.0, 1000, 0, None, [], ScanBudget(1000))
    return sorted((".".join(row.namespace), row.key) for row in rows)


async def test_the_sweeper_frees_expired_items_and_nothing_else(
    clocked_app: Any, clocked_client: httpx.AsyncClient, clock: Clock
) -> None:
    await _batch(
        clocked_client,
        _put(["ann"], "short", {"v": 1}, ttl=10),
        _put(["ann"], "long", {"v": 2}, ttl=1000),
        _put(["bob"], "forever", {"v": 3}),
    )
    clock.advance(11)
    assert await _stored_keys(clocked_app) == [
        ("ann", "long"),
        ("ann", "short"),
        ("bob", "forever"),
    ]
    await clocked_app.state.sweeper.sweep_once()
    assert await _stored_keys(clocked_app) == [("ann", "long"), ("bob", "forever")]


async def test_erasing_a_user_removes_the_items_their_namespaces_start_with(
    client: httpx.AsyncClient,
) -> None:
    for app in (APP, "other"):
        await _batch(
            client,
            _put(["ann"], "a", {"v": 1}),
            _put(["ann", "deep", "er"], "b", {"v": 2}),
            _put(["annie"], "c", {"v": 3}),
            _put(["bob", "ann"], "d", {"v": 4}),
            app=app,
        )
    assert (await client.delete(f"/apps/{APP}/users/ann")).status_code == 204
    [namespaces] = await _batch(client, {"op": "listNamespaces"})
    assert namespaces == [["annie"], ["bob", "ann"]]
    [namespaces] = await _batch(client, {"op": "listNamespaces"}, app="other")
    assert len(namespaces) == 4
    assert (await client.delete(f"/apps/{APP}?confirm={APP}")).status_code == 204
    assert await _batch(client, {"op": "listNamespaces"}) == [[]]
    [namespaces] = await _batch(client, {"op": "listNamespaces"}, app="other")
    assert len(namespaces) == 4


async def test_single_operation_routes_answer_as_the_batch(client: httpx.AsyncClient) -> None:
    items = f"/apps/{APP}/store/items"
    where = {"namespace": ["ann", "notes"], "key": "k 1"}
    assert (await client.get(items, params=where)).status_code == 404
    answer = await client.put(items, params=where, json={"value": {"a": [1, 2]}, "ttlSeconds": 5})
    assert answer.status_code == 204
    found = (await client.get(items, params=where)).json()
    assert (found["namespace"], found["key"], found["value"]) == (
        ["ann", "notes"],
        "k 1",
        {"a": [1, 2]},
    )
    search = await client.post(f"/apps/{APP}/store/search", json={"filter": {"a": [1, 2]}})
    assert [item["key"] for item in search.json()["items"]] == ["k 1"]
    namespaces = await client.post(f"/apps/{APP}/store/namespaces", json={"maxDepth": 1})
    assert namespaces.json() == {"namespaces": [["ann"]]}
    assert (await client.delete(items, params=where)).status_code == 204
    assert (await client.get(items, params=where)).status_code == 404


async def test_api_keys_are_scoped_to_apps(database_url: str) -> None:
    app = create_app(Settings(database_url=database_url, api_keys={"k" * 32: ["travel"]}))
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": "Bearer " + "k" * 32}
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1", headers=headers
        ) as http,
    ):
        ops = {"ops": [_put(["ann"], "k", {"v": 1})]}
        assert (await http.post("/apps/travel/store/batch", json=ops)).status_code == 200
        assert_problem(await http.post("/apps/other/store/batch", json=ops), 403, "forbidden")
        answer = await http.post(
            "/apps/travel/store/batch", json=ops, headers={"Authorization": ""}
        )
        assert answer.status_code == 401


def _nested(depth: int) -> dict[str, Any]:
    filter_: dict[str, Any] = {"v": 1}
    for _ in range(depth):
        filter_ = {"v": filter_}
    return filter_


HOSTILE_OPS: list[Any] = [
    _put(["ann\x00"], "k", {"v": 1}),
    _put(["ann"], "k\x00", {"v": 1}),
    _put(["ann"], "k", {"v": "a\x00b"}),
    _put(["ann"], "k", {"v\x00": 1}),
    _put(["a.b"], "k", {"v": 1}),
    _put([], "k", {"v": 1}),
    _put([""], "k", {"v": 1}),
    _put(["ann"], "", {"v": 1}),
    _put(["x" * 257], "k", {"v": 1}),
    _put(["l"] * 33, "k", {"v": 1}),
    _put(["ann"], "k" * 1025, {"v": 1}),
    _put(["ann"], "k", [1, 2]),
    _put(["ann"], "k", "text"),
    _put(["ann"], "k", {"v": 1}, ttl=-1),
    _put(["ann"], "k", {"v": 1}, ttl=0),
    _put(["ann"], "k", {"v": 1}, ttl=1e12),
    {"op": "put", "namespace": ["ann"], "key": 7, "value": {}},
    {"op": "drop", "namespace": ["ann"], "key": "k"},
    {"op": "search", "filter": {"v": {"$regex": "."}}},
    {"op": "search", "filter": {"v": {"$gt": "a"}}},
    {"op": "search", "filter": {"v": {"$gt": 1, "plain": 2}}},
    # Bounded: past 128 conditions or 16 levels, a filter is refused, never
    # compiled into an unbounded query.
    {"op": "search", "filter": {f"k{number}": number for number in range(129)}},
    {"op": "search", "filter": {"v": {"$eq": list(range(200))}}},
    {"op": "search", "filter": {"v": {"$in": [1]}}},
    {"op": "search", "filter": _nested(17)},
    {"op": "search", "filter": {'say "hi"': 1}},
    {"op": "search", "filter": {"v": {"w": {"$gt": "a"}}}},
    {"op": "search", "limit": 0},
    {"op": "search", "limit": 1001},
    {"op": "search", "offset": -1},
    {"op": "search", "offset": 2**63},
    {"op": "search", "query": "tea\x00"},
    {"op": "search", "namespacePrefix": ["a.b"]},
    {"op": "listNamespaces", "maxDepth": 0},
    {"op": "listNamespaces", "matchConditions": [{"matchType": "middle", "path": ["a"]}]},
    {"op": "listNamespaces", "matchConditions": [{"matchType": "prefix", "path": ["a\x00"]}]},
]


@pytest.mark.parametrize("op", HOSTILE_OPS, ids=range(len(HOSTILE_OPS)))
async def test_hostile_operations_are_422_and_store_nothing(
    client: httpx.AsyncClient, op: dict[str, Any]
) -> None:
    answer = await client.post(BATCH, json={"ops": [_put(["ann"], "ok", {"v": 1}), op]})
    assert_problem(answer, 422, "validation_error")
    assert await _batch(client, {"op": "listNamespaces"}) == [[]]


_PUT_VALUE = b'{"ops":[{"op":"put","namespace":["a"],"key":"k","value":'


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        # Not JSON at all (JSON has no NaN or Infinity): the body is refused whole.
        (_PUT_VALUE + b'{"v":NaN}}]}', 400, "bad_request"),
        (_PUT_VALUE + b'{"v":-Infinity}}]}', 400, "bad_request"),
        (_PUT_VALUE + b'{"v":1e999}}]}', 422, "validation_error"),
        (_PUT_VALUE + b'{"v":' * 70 + b"1" + b"}" * 70 + b"}]}", 422, "validation_error"),
        (b'{"ops":[{"op":"search","filter":{"v":{"$gt":1e999}}}]}', 422, "validation_error"),
        (b'{"ops":"all"}', 422, "validation_error"),
        (
            b'{"ops":[' + b'{"op":"listNamespaces"},' * 1000 + b'{"op":"listNamespaces"}]}',
            422,
            "validation_error",
        ),
    ],
    ids=["nan", "infinity", "overflow", "depth", "filter-overflow", "not-a-list", "too-many"],
)
async def test_hostile_bodies_are_refused_never_a_500(
    client: httpx.AsyncClient, body: bytes, status: int, code: str
) -> None:
    answer = await client.post(BATCH, content=body, headers={"Content-Type": "application/json"})
    assert_problem(answer, status, code)


async def test_a_value_past_the_item_limit_is_422_item_too_large(client: httpx.AsyncClient) -> None:
    big = {"text": "x" * (1024 * 1024)}
    answer = await client.post(BATCH, json={"ops": [_put(["ann"], "k", big)]})
    assert_problem(answer, 422, "item_too_large")


ORDERED_VALUES: list[Any] = [
    -100, -10, -9.5, -2, -1, -0.5, 0, 0.25, 1, 2, 9, 9.75, 10, 11, 19, 100, 1000, 12_345_678_901,
    # Not numbers: never ordered, whatever their text.
    "10", "9", "-5", True, None, [10],
]  # fmt: skip
THRESHOLDS = [9, 10, -1, -9.5, 0.3, 2, 100, -0.5, 1e10]
COMPARED = {
    "$gt": lambda value, bound: value > bound,
    "$gte": lambda value, bound: value >= bound,
    "$lt": lambda value, bound: value < bound,
    "$lte": lambda value, bound: value <= bound,
}


async def test_ordering_operators_compare_numbers_by_value_not_as_text(
    client: httpx.AsyncClient,
) -> None:
    """10 > 9, -10 < -9.5, 0.25 < 2, 12345678901 > 1e10: compared as numbers
    (text would put "10" before "9" and "-10" after "-9.5"); strings,
    booleans and the rest are never ordered."""
    await _batch(
        client,
        *(_put(["nums"], f"k{index}", {"n": value}) for index, value in enumerate(ORDERED_VALUES)),
    )
    numbers = {
        f"k{index}": value
        for index, value in enumerate(ORDERED_VALUES)
        if isinstance(value, int | float) and not isinstance(value, bool)
    }
    for operator, compare in COMPARED.items():
        for bound in THRESHOLDS:
            [found] = await _batch(
                client,
                {
                    "op": "search",
                    "namespacePrefix": ["nums"],
                    "filter": {"n": {operator: bound}},
                    "limit": 100,
                },
            )
            got = sorted(item["key"] for item in found)
            wanted = sorted(key for key, value in numbers.items() if compare(value, bound))
            assert got == wanted, (operator, bound)
    # A range of two operators, and one nested in an object.
    [between] = await _batch(
        client,
        {
            "op": "search",
            "namespacePrefix": ["nums"],
            "filter": {"n": {"$gt": -10, "$lte": 10}},
            "limit": 100,
        },
    )
    assert sorted(item["value"]["n"] for item in between) == [
        -9.5, -2, -1, -0.5, 0, 0.25, 1, 2, 9, 9.75, 10
    ]  # fmt: skip
    await _batch(
        client, _put(["deep"], "a", {"m": {"n": 10}}), _put(["deep"], "b", {"m": {"n": 9}})
    )
    [deep] = await _batch(
        client, {"op": "search", "namespacePrefix": ["deep"], "filter": {"m": {"n": {"$gt": 9}}}}
    )
    assert [item["key"] for item in deep] == ["a"]
