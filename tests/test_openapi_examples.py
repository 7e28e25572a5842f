"""The OpenAPI spec's request examples are the README's: each example body
the spec shows is sent, verbatim, by a curl command of the README's runnable
blocks (which tests/test_docs_examples.py runs against a real server), and
each body those commands send is the spec's example for its endpoint. Either
one edited alone fails here, so Swagger UI's "Try it out" keeps running the
README's scenario as printed."""

import json
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from session_state.main import create_app

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = re.compile(r"^(\w+)=(\S+)$", re.M)


def _expanded(token: str, variables: dict[str, str]) -> str:
    return re.sub(r"\$(\w+)", lambda match: variables.get(match[1], match[0]), token)


def _readme_requests() -> list[tuple[str, str, Any]]:
    """(method, path, JSON body) of every curl command in the README's bash
    blocks that sends a body (the docs test runs them all, in order, but the
    marked deployment-only ones, which send none)."""
    found = []
    readme = (ROOT / "README.md").read_text()
    # Later blocks use what the quick start set (`B`), as a reader's shell does.
    variables: dict[str, str] = {}
    for block in re.findall(r"```bash[^\n]*\n(.*?)```", readme, re.S):
        variables.update(ASSIGNMENT.findall(block))
        tokens = shlex.split(block.replace("\\\n", " "), comments=True)
        starts = [index for index, token in enumerate(tokens) if token == "curl"]
        ends = [*starts[1:], len(tokens)] if starts else []
        for start, end in zip(starts, ends, strict=True):
            command = [_expanded(token, variables) for token in tokens[start:end]]
            if "-d" not in command:
                continue
            method = command[command.index("-X") + 1] if "-X" in command else "POST"
            url = next(token for token in command if token.startswith("http"))
            body = json.loads(command[command.index("-d") + 1])
            found.append((method, urlsplit(url).path, body))
    return found


def _spec_examples() -> dict[tuple[str, str], list[Any]]:
    """(method, path template as a regular expression) -> example bodies."""
    examples: dict[tuple[str, str], list[Any]] = {}
    for template, operations in create_app().openapi()["paths"].items():
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        for method, operation in operations.items():
            media = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            for example in media.get("examples", {}).values():
                examples.setdefault((method.upper(), pattern), []).append(example["value"])
    return examples


def test_every_spec_example_is_sent_by_the_readme():
    sent = _readme_requests()
    examples = _spec_examples()
    assert len(examples) >= 4  # create, append, patch, memory ingestion
    for (method, pattern), bodies in examples.items():
        for body in bodies:
            assert any(
                sent_method == method and re.match(pattern, path) and sent_body == body
                for sent_method, path, sent_body in sent
            ), (method, pattern, body)


def test_every_body_the_readme_sends_is_the_spec_example_of_its_endpoint():
    examples = _spec_examples()
    for method, path, body in _readme_requests():
        matching = [
            endpoint_examples
            for (example_method, pattern), endpoint_examples in examples.items()
            if example_method == method and re.match(pattern, path)
        ]
        assert len(matching) == 1 and body in matching[0], (method, path, body)
