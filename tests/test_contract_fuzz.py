"""Schemathesis against the OpenAPI spec of a running server: generated
requests for every operation; no 5xx, and every response as the spec says."""

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

EXAMPLES_PER_OPERATION = int(os.environ.get("FUZZ_EXAMPLES", "50"))
# What the contract promises: no 5xx, and status, content type, headers and
# body of every response as documented. (Schemathesis' "schema-valid data is
# accepted" check does not apply: page tokens are opaque and an event may be
# refused for content no schema expresses, with a documented 400 or 422.)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def api_schema(sqlite_server):
    return schemathesis.openapi.from_url(f"{sqlite_server.base_url}/openapi.json")


def test_every_operation_answers_as_its_spec_says(api_schema):
    # Schemathesis' own pytest plugin does not run under this pytest; the
    # same generation and checks, driven per operation with Hypothesis.
    failures = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 14
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def check(case):
            case.call_and_validate(checks=CHECKS)

        try:
            check()
        except (Exception, BaseExceptionGroup) as error:
            failures.append(f"{operation.label}: {error}")
    assert not failures, "\n\n".join(failures)
