"""The OpenAPI spec's request examples are the documents' runnable ones.

Every JSON request body of the spec has an example, and each example body
is sent, verbatim, by a curl command of a runnable block of README.md or of
docs/*.md (which tests/test_docs_examples.py runs against a real server, with
its convention for which blocks run). Each body the README's quick start
sends is the spec's example for its endpoint; docs/ also sends other bodies
(errors, retries, edge cases), so only the first direction holds there.
Either side edited alone fails here, so Swagger UI's "Try it out" starts
from a request the documents run as printed."""

import json
import re
import shlex
from typing import Any
from urllib.parse import urlsplit

from session_state.main import create_app
from tests.test_docs_examples import _NOT_RUN, DOCS, README, examples_of, fenced_blocks

ASSIGNMENT = re.compile(r"^(\w+)=(\S+)$", re.M)
# What a docs/ block gets exported (test_docs_examples.run_bash), at `serve`'s default address.
DOCS_VARIABLES = {
    "BASE": "http://127.0.0.1:8000",
    "B": "http://127.0.0.1:8000/apps/travel/users/ada",
}
BODY_OPTIONS = ("-d", "--data", "--data-raw", "--json")

Request = tuple[str, str, Any]
"""(method, path, JSON body; None when the body is not JSON as printed)."""


def _expanded(token: str, variables: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda match: variables.get(match[1], match[0]), token)


def _requests_of(block: str, variables: dict[str, str]) -> list[Request]:
    """The requests with a body that the curl commands of a bash block send;
    `variables` (the shell's) is updated with the block's assignments."""
    for name, value in ASSIGNMENT.findall(block):
        variables[name] = _expanded(shlex.split(value)[0], variables)
    found: list[Request] = []
    tokens = shlex.split(block.replace("\\\n", " "), comments=True)
    starts = [index for index, token in enumerate(tokens) if token == "curl"]
    ends = [*starts[1:], len(tokens)] if starts else []
    for start, end in zip(starts, ends, strict=True):
        command = [_expanded(token, variables) for token in tokens[start:end]]
        option = next((token for token in command if token in BODY_OPTIONS), None)
        if option is None or "--get" in command or "-G" in command:
            continue
        method = command[command.index("-X") + 1] if "-X" in command else "POST"
        url = next(token for token in command if token.startswith("http"))
        try:
            body = json.loads(command[command.index(option) + 1])
        except json.JSONDecodeError:
            body = None  # a shell loop's template, say
        found.append((method, urlsplit(url).path, body))
    return found


def _readme_requests() -> list[Request]:
    """The requests with a body of the README's runnable bash blocks, in order
    (the marked deployment-only ones send none)."""
    found = []
    # Later blocks use what the quick start set (`B`), as a reader's shell does.
    variables: dict[str, str] = {}
    for block in fenced_blocks(README.read_text()):
        if block.language == "bash" and not _NOT_RUN.match(block.above):
            found += _requests_of(block.code, variables)
    return found


def _docs_requests() -> list[Request]:
    """Those of docs/'s `bash run` blocks: each block is a shell of its own."""
    found = []
    for document in DOCS:
        for example in examples_of(document):
            if example.language == "bash":
                found += _requests_of(example.code, dict(DOCS_VARIABLES))
    return found


def _spec_bodies() -> dict[tuple[str, str], dict[str, Any]]:
    """(method, path template as a regular expression) -> the JSON media
    type of every operation with a JSON request body."""
    media_types = {}
    for template, operations in create_app().openapi()["paths"].items():
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" in content:
                media_types[(method.upper(), pattern)] = content["application/json"]
    return media_types


def _spec_examples() -> dict[tuple[str, str], list[Any]]:
    """(method, path template as a regular expression) -> example bodies."""
    return {
        endpoint: [example["value"] for example in media.get("examples", {}).values()]
        for endpoint, media in _spec_bodies().items()
    }


def test_every_json_request_body_has_an_example() -> None:
    examples = _spec_examples()
    assert len(examples) >= 18, sorted(examples)
    missing = [endpoint for endpoint, bodies in examples.items() if not bodies]
    assert not missing, missing


def test_every_spec_example_is_sent_by_a_runnable_block() -> None:
    sent = _readme_requests() + _docs_requests()
    for (method, pattern), bodies in _spec_examples().items():
        for body in bodies:
            assert any(
                sent_method == method and re.match(pattern, path) and sent_body == body
                for sent_method, path, sent_body in sent
            ), (method, pattern, body)


def test_the_docs_requests_are_read() -> None:
    """The parsing above finds docs/'s bodies, so the test above can fail."""
    sent = _docs_requests()
    assert len(sent) >= 40, len(sent)
    assert any(path == "/apps/travel/users/ada/sessions" for _, path, _ in sent), sent
    assert any(path == "/apps/travel/store/batch" for _, path, _ in sent), sent


def test_every_body_the_readme_sends_is_the_spec_example_of_its_endpoint() -> None:
    examples = _spec_examples()
    for method, path, body in _readme_requests():
        matching = [
            endpoint_examples
            for (example_method, pattern), endpoint_examples in examples.items()
            if example_method == method and re.match(pattern, path)
        ]
        assert len(matching) == 1 and body in matching[0], (method, path, body)
