"""One table of errors: each error's status and code is defined once, on its
class (`app/core/errors.py`) or, for the framework's own errors, in
`app/http/problems.py`; the table in docs/api.md (the only one) lists exactly
those, so it can neither name a code the server never sends nor miss one it
does."""

import re
from pathlib import Path

from session_state.core.errors import ServiceError
from session_state.http import problems

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^\| (\d{3}|other) \| `(\w+)` \|", re.M)


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
