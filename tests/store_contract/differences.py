"""The "Backend differences" table of docs/design.md, as the contract suite
reads it: each row names a contract test that fails on one backend on
purpose, and the text its failure shows there."""

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DESIGN = Path(__file__).resolve().parents[2] / "docs" / "design.md"
SECTION = "## Backend differences"
BACKENDS = ("sqlite", "postgresql")


@dataclass(frozen=True)
class Difference:
    test: str
    backend: str
    # Text the test's failure report holds on that backend: the first
    # `code span` of the row's "what it does instead".
    telltale: str
    behaviour: str


def _section(document: str) -> str:
    start = document.index(SECTION) + len(SECTION)
    following = document.find("\n## ", start)
    return document[start : None if following < 0 else following]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def read_differences(document: str | None = None) -> list[Difference]:
    """The table's rows (none when it has only its header)."""
    text = DESIGN.read_text() if document is None else document
    rows = [line for line in _section(text).splitlines() if line.lstrip().startswith("|")]
    differences = []
    for line in rows[2:]:  # the header and its rule
        test, backend, behaviour = _cells(line)[:3]
        telltale = re.search(r"`([^`]+)`", behaviour)
        differences.append(
            Difference(test.strip("`"), backend, telltale[1] if telltale else "", behaviour)
        )
    return differences


@cache
def differences_by_test() -> dict[tuple[str, str], Difference]:
    return {(row.test, row.backend): row for row in read_differences()}
