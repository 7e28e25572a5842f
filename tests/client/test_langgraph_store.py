"""SessionStateStore (LangGraph's BaseStore on this server) gives the answers
LangGraph's own InMemoryStore gives for the same script of operations: puts,
gets, searches with filters and pages, namespaces by prefix, suffix and
depth, deletes, batches. Values, keys and namespaces are compared, not
timestamps; a search's order is the store's own (InMemoryStore: insertion,
PostgresStore and this one: last updated first), so its items are compared
as sets and its pages by what they hold together."""

import uuid
from typing import Any

import httpx
from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from session_state_client.langgraph import SessionStateStore
from tests.conftest import ServerProcess

ITEMS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (("alice", "memories"), "m1", {"text": "Likes green tea", "kind": "preference", "score": 3}),
    (("alice", "memories"), "m2", {"text": "Lives in Lyon", "kind": "fact", "score": 7}),
    (
        ("alice", "memories", "work"),
        "m3",
        {"kind": "fact", "score": 5, "tags": ["a", "b"], "nested": {"x": 1, "y": "z"}},
    ),
    (("alice", "profile"), "name", {"kind": "fact", "name": "Alice", "score": 9.5}),
    (("bob", "memories"), "m1", {"text": "Drinks coffee", "kind": "preference", "score": 9}),
    (("bob", "memories", "work"), "m2", {"kind": "fact", "score": 2, "active": True}),
    (("shared", "docs", "v1"), "readme", {"kind": "doc", "score": 1}),
    (
        ("alice", "archive"),
        "m5",
        {
            "kind": None,
            "score": 9.0,
            "tags": ["a"],
            "nested": {"x": 1, "y": "z", "deep": {"list": [{"a": 1, "b": 2}, 2], "n": None}},
        },
    ),
]

FILTERS: list[dict[str, Any]] = [
    {"kind": "fact"},
    {"kind": "preference", "score": 3},
    {"score": {"$gt": 4}},
    {"score": {"$gte": 5, "$lt": 9}},
    {"score": {"$lte": 3}},
    {"kind": {"$ne": "fact"}},
    {"kind": {"$eq": "doc"}},
    {"tags": ["a", "b"]},
    {"tags": ["b", "a"]},
    {"nested": {"x": 1}},
    {"missing": "nothing"},
    # Nested objects are contained, arrays element by element, as deep as it goes.
    {"nested": {"x": 1, "y": "z"}},
    {"nested": {}},
    {"nested": {"x": {"$gte": 1}, "deep": {"list": [{"a": 1}, 2]}}},
    {"nested": {"deep": {"list": [{"a": 1}]}}},
    {"nested": {"deep": {"n": None}}},
    {"tags": ["a"]},
    {"tags": []},
    # null: null or no such key; numbers by value.
    {"kind": None},
    {"missing": None},
    {"missing": {"$eq": None}},
    {"missing": {"$ne": "x"}},
    {"score": 9.0},
    {"score": 9},
    {"score": {"$ne": 9}},
    {"active": True},
    {"active": {"$ne": True}},
    # $eq and $ne compare whole values.
    {"tags": {"$eq": ["a", "b"]}},
    {"nested": {"$eq": {"x": 1}}},
    {"nested": {"$ne": {"x": 1}}},
    {"nested": {"$eq": {"x": 1, "y": "z"}}},
    {"kind": "fact", "score": {"$gt": 4, "$lte": 7}},
]
PREFIXES: list[tuple[str, ...]] = [(), ("alice",), ("alice", "memories"), ("bob",), ("nobody",)]


def _items(found: list[Item] | list[Any]) -> list[tuple[tuple[str, ...], str, Any]]:
    return sorted((item.namespace, item.key, item.value) for item in found)


async def _script(store: BaseStore) -> list[Any]:
    """What the store answers, in a comparable form."""
    answers: list[Any] = []
    for namespace, key, value in ITEMS:
        await store.aput(namespace, key, value)
    # An update replaces the value.
    await store.aput(
        ("alice", "memories"), "m1", {"text": "Likes jasmine tea", "kind": "preference", "score": 4}
    )
    for namespace, key, _ in ITEMS:
        found = await store.aget(namespace, key)
        answers.append(None if found is None else (found.namespace, found.key, found.value))
    answers.append(await store.aget(("alice", "memories"), "absent"))
    # (Not a get in a namespace that has no item: InMemoryStore's reads leave
    # that namespace behind, empty, and list_namespaces then names it.)
    for prefix in PREFIXES:
        answers.append(_items(await store.asearch(prefix, limit=100)))
        for filter_ in FILTERS:
            answers.append(
                (prefix, filter_, _items(await store.asearch(prefix, filter=filter_, limit=100)))
            )
    # Pages: the same number of items each, together every item once.
    for limit, filter_ in [(2, None), (3, {"kind": "fact"}), (1, {"score": {"$gt": 0}})]:
        pages = [
            await store.asearch(("alice",), filter=filter_, limit=limit, offset=offset)
            for offset in range(0, 8, limit)
        ]
        answers.append([len(page) for page in pages])
        answers.append(sorted(entry for page in pages for entry in _items(page)))
    for kwargs in [
        {},
        {"prefix": ("alice",)},
        {"prefix": ("alice", "memories")},
        {"suffix": ("memories",)},
        {"suffix": ("work",)},
        {"prefix": ("*", "memories")},
        {"suffix": ("memories", "*")},
        {"prefix": ("alice",), "suffix": ("work",)},
        {"max_depth": 1},
        {"max_depth": 2},
        {"prefix": ("alice",), "max_depth": 2},
        {"limit": 2, "offset": 1},
        {"max_depth": 2, "limit": 3, "offset": 2},
        {"prefix": ("nobody",)},
    ]:
        answers.append((kwargs, await store.alist_namespaces(**kwargs)))
    # Deletes: the item is gone for every reader; its namespace too once empty.
    await store.adelete(("alice", "memories"), "m2")
    await store.adelete(("shared", "docs", "v1"), "readme")
    await store.adelete(("shared", "docs", "v1"), "never-there")
    answers.append(await store.aget(("alice", "memories"), "m2"))
    answers.append(_items(await store.asearch((), limit=100)))
    # (InMemoryStore still lists a namespace whose items were all deleted;
    # PostgresStore and this store do not: compared in the test below.)
    # A batch's reads see the store as it was before its puts.
    results = await store.abatch(
        [
            GetOp(("alice", "memories"), "m1"),
            PutOp(("alice", "memories"), "m1", {"text": "changed"}),
            GetOp(("alice", "memories"), "m1"),
            PutOp(("alice", "memories"), "m1", {"text": "changed again"}),
            SearchOp(("alice", "memories"), filter={"text": "changed again"}),
        ]
    )
    answers.append([_items([r]) if isinstance(r, Item) else r for r in results])
    found = await store.aget(("alice", "memories"), "m1")
    answers.append(found.value if found else None)
    return answers


async def test_the_same_script_answers_as_langgraphs_in_memory_store(server: ServerProcess) -> None:
    await answers_as_langgraphs_in_memory_store(server.base_url)


async def answers_as_langgraphs_in_memory_store(base_url: str) -> None:
    """Also run with encryption at rest on (test_langgraph_encryption)."""
    expected = await _script(InMemoryStore())
    async with SessionStateStore(base_url, app_name=f"lg-{uuid.uuid4().hex[:10]}") as store:
        assert await _script(store) == expected
        # A namespace whose last item was deleted is gone, as in PostgresStore.
        assert ("shared", "docs", "v1") not in await store.alist_namespaces()


def test_the_sync_methods_answer_as_the_async_ones(server: ServerProcess) -> None:
    reference = InMemoryStore()
    with SessionStateStore(server.base_url, app_name=f"lg-{uuid.uuid4().hex[:10]}") as store:
        for target in (reference, store):
            for namespace, key, value in ITEMS:
                target.put(namespace, key, value)
            target.delete(("bob", "memories"), "m1")
        for target in (reference, store):
            found = target.get(("alice", "profile"), "name")
            assert found is not None and found.value == ITEMS[3][2]
        assert _items(store.search(("alice",), filter={"kind": "fact"})) == _items(
            reference.search(("alice",), filter={"kind": "fact"})
        )
        assert store.list_namespaces(max_depth=2) == reference.list_namespaces(max_depth=2)
        assert store.get(("bob", "memories"), "m1") is None


async def test_query_matches_every_word_of_the_items_text(server: ServerProcess) -> None:
    async with SessionStateStore(server.base_url, app_name=f"lg-{uuid.uuid4().hex[:10]}") as store:
        for namespace, key, value in ITEMS:
            await store.aput(namespace, key, value)
        assert [item.key for item in await store.asearch((), query="GREEN tea")] == ["m1"]
        assert [item.key for item in await store.asearch(("bob",), query="coffee")] == ["m1"]
        assert await store.asearch(("alice",), query="coffee") == []
        found = await store.asearch(("alice",), query="tea", filter={"kind": "fact"})
        assert found == []
        # Keywords, filter and page together: every word, in the database.
        for number in range(6):
            await store.aput(
                ("carol",), f"n{number}", {"note": f"Tea number {number}", "n": number}
            )
        pages = [
            await store.asearch(
                ("carol",), query="tea NUMBER", filter={"n": {"$gte": 1}}, limit=2, offset=offset
            )
            for offset in (0, 2, 4)
        ]
        assert [sorted(item.key for item in page) for page in pages] == [
            ["n4", "n5"],
            ["n2", "n3"],
            ["n1"],
        ]


async def test_a_put_ttl_is_minutes_and_the_server_keeps_seconds(server: ServerProcess) -> None:
    app_name = f"lg-{uuid.uuid4().hex[:10]}"
    async with SessionStateStore(
        server.base_url, app_name=app_name, ttl={"default_ttl": 2.0}
    ) as store:
        await store.aput(("alice",), "with-default", {"v": 1})
        await store.aput(("alice",), "with-own", {"v": 2}, ttl=0.5)
        await store.aput(("alice",), "forever", {"v": 3}, ttl=None)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        answer = await http.post(
            f"/apps/{app_name}/store/search",
            json={"namespacePrefix": ["alice"], "refreshTtl": False},
        )
    lifetimes = {
        item["key"]: None
        if item["expiresAt"] is None
        else round(item["expiresAt"] - item["updatedAt"])
        for item in answer.json()["items"]
    }
    assert lifetimes == {"with-default": 120, "with-own": 30, "forever": None}
