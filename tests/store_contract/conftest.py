"""The store contract suite's fixtures: each test runs against `SqliteStore`
and `PostgresStore` in turn (the `database_url` parameter), on empty tables,
with no HTTP in between. A test listed in docs/design.md's "Backend
differences" for one backend must fail there, showing the row's telltale;
listed and passing, it fails: the row goes when the difference does."""

from collections.abc import Iterator

import pytest

from ..contract_backends import backend, database_url, second_store, store
from .differences import differences_by_test

# The backends' fixtures, shared by every contract suite (tests/contract_backends.py).
__all__ = ["backend", "database_url", "second_store", "store"]


def _backend_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return None if callspec is None else callspec.params.get("database_url")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.when != "call":
        return
    listed = differences_by_test().get(
        (getattr(item, "originalname", item.name), _backend_of(item))
    )
    if listed is None:
        return
    if report.passed:
        report.outcome = "failed"
        report.longrepr = (
            f"{listed.test} is listed in docs/design.md (Backend differences) as departing "
            f"from the contract on {listed.backend}, but it holds there now: remove the row"
        )
    elif listed.telltale and listed.telltale in str(report.longrepr):
        report.outcome = "skipped"
        report.wasxfail = f"a listed backend difference: {listed.behaviour}"
    else:
        report.sections.append(
            (
                "backend difference",
                f"listed for {listed.backend}, but the failure does not show "
                f"{listed.telltale!r}: it fails for another reason",
            )
        )
