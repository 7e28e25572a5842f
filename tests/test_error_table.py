"""One table of errors: each error's status and code is defined once, on its
class (`app/errors.py`) or, for the framework's own errors, in
`app/api/problems.py`; the tables in docs/api.md and the README list exactly
those, so neither can name a code the server never sends or miss one it does."""

import re
from pathlib import Path

from session_state.api import problems
from session_state.errors import ServiceError

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^\| (\d{3}|other) \| `(\w+)` \|", re.M)
README_ROW = re.compile(r"^\| (\d{3}) \| (.+?) \|$", re.M)


def _error_classes(base: type[ServiceError]) -> list[type[ServiceError]]:
    found = []
    for subclass in base.__subclasses__():
        found += [subclass, *_error_classes(subclass)]
    return found


def codes_the_server_sends() -> set[tuple[str, str]]:
    sent = {
        (str(error.status), error.code) for error in [ServiceError, *_error_classes(ServiceError)]
    }
    sent |= {(str(status), code) for status, code in problems.GENERIC_CODES.items()}
    sent.add(("other", problems.OTHER_HTTP_ERROR_CODE))
    return sent


def test_the_api_documents_every_error_code_and_no_other():
    documented = set(ROW.findall((ROOT / "docs" / "api.md").read_text()))
    assert documented == codes_the_server_sends()


def test_the_readme_summary_names_every_status_and_code_and_no_other():
    summary = (ROOT / "README.md").read_text().split("| status | code: typical cause |")[1]
    summary = summary.split("\n\n")[0]
    listed = {
        (status, code)
        for status, cells in README_ROW.findall(summary)
        for code in re.findall(r"`([a-z_]+)`", cells)
    }
    sent = {pair for pair in codes_the_server_sends() if pair[0] != "other"}
    assert listed == sent
