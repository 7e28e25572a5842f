"""Hostile searches of LangGraph's store with encryption at rest on, on both
backends: the database cannot look into sealed values, so a search with a
filter or a query opens the prefix's items in the server; one request reads
at most SESSION_STATE_MAX_STORE_SCAN_ROWS of them (counted by the metric
session_state_store_sealed_rows_read_total), its searches together, and a
search that cannot fill its page within them is refused with 400
store_search_too_broad rather than scanning on. Searches that fill their
page within the bound answer as before.

The items are put in two batches: the second's (n00600 to n01199) are the
newer, and share one update time, so a search meets them first, by key."""

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY

from session_state.core.config import Settings
from tests.conftest import asgi_client
from tests.encryption_keys import key_set
from tests.hostile import assert_problem

APP = "memories"
BATCH = f"/apps/{APP}/store/batch"
SCAN_ROWS = 500
ITEMS = 1200
METRIC = "session_state_store_sealed_rows_read_total"


@pytest.fixture
async def encrypted_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    bounded = settings.model_copy(
        update={"encryption_keys": key_set("k1"), "max_store_scan_rows": SCAN_ROWS}
    )
    async with asgi_client(bounded) as http:
        for start in range(0, ITEMS, 600):
            puts = [
                {"op": "put", "namespace": ["ada", "notes"], "key": f"n{index:05}",
                 "value": {"n": index, "text": f"note {index}"}}
                for index in range(start, min(start + 600, ITEMS))
            ]  # fmt: skip
            answer = await http.post(BATCH, json={"ops": puts})
            assert answer.status_code == 200, answer.text
        yield http


def _rows_read() -> float:
    return REGISTRY.get_sample_value(METRIC) or 0.0


def _search(**options: Any) -> dict[str, Any]:
    return {"op": "search", "namespacePrefix": ["ada"], **options}


async def _read_by(http: httpx.AsyncClient, *ops: dict[str, Any]) -> tuple[httpx.Response, float]:
    """The answer to a batch of those ops, and the sealed rows it read."""
    before = _rows_read()
    answer = await http.post(BATCH, json={"ops": list(ops)})
    return answer, _rows_read() - before


@pytest.mark.parametrize(
    "search",
    [
        _search(filter={"n": -1}),
        _search(query="absent"),
        _search(filter={"n": {"$gte": 0}}, offset=ITEMS - 5),
    ],
    ids=["filter-never-matches", "query-never-matches", "offset-past-the-bound"],
)
async def test_a_search_that_cannot_fill_its_page_reads_a_bounded_number_of_rows(
    encrypted_client: httpx.AsyncClient, search: dict[str, Any]
) -> None:
    answer, read = await _read_by(encrypted_client, search)

    assert read <= SCAN_ROWS
    body = assert_problem(answer, 400, "store_search_too_broad")
    assert "SESSION_STATE_MAX_STORE_SCAN_ROWS" in body["detail"]


async def test_the_searches_of_one_batch_share_the_bound(
    encrypted_client: httpx.AsyncClient,
) -> None:
    # Each alone reads 400 rows (two statements' worth) to fill its page.
    each = _search(filter={"n": {"$gte": 600}}, limit=250)
    alone, _ = await _read_by(encrypted_client, each)
    assert alone.status_code == 200, alone.text

    answer, read = await _read_by(encrypted_client, each, each)

    assert read <= SCAN_ROWS
    assert_problem(answer, 400, "store_search_too_broad")


async def test_searches_that_fill_their_page_within_the_bound_answer_as_before(
    encrypted_client: httpx.AsyncClient,
) -> None:
    answer, read = await _read_by(
        encrypted_client,
        _search(filter={"n": {"$lt": 700}}, limit=5, offset=10),
        _search(query="note 600", limit=1),
        _search(filter={"n": -1}, namespacePrefix=["bob"]),
    )

    assert answer.status_code == 200, answer.text
    assert read <= SCAN_ROWS
    paged, worded, elsewhere = answer.json()["results"]
    assert [item["key"] for item in paged] == [f"n{index:05}" for index in range(610, 615)]
    assert [item["key"] for item in worded] == ["n00600"]
    assert elsewhere == []
