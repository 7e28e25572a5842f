"""JSON bodies at their edges, over real HTTP on both backends: a repeated
key is refused (never last-wins), on every body, the append's fast path
included, and nothing is written; a body of the wrong kind names no internal
class; a body that is not JSON is told with its line and column; a request
line too long for the parser is a problem+json 400 too."""

import json
import socket
import uuid

import httpx
import pytest

from session_state.core import json_codec
from tests.test_append_fast_path import _fast_path_count

PROBLEM = "application/problem+json"


def _base(server) -> str:
    return f"{server.base_url}/apps/edges-{uuid.uuid4().hex[:8]}/users/u"


def _post(url: str, text: str, method: str = "POST") -> httpx.Response:
    return httpx.request(
        method, url, content=text.encode(), headers={"Content-Type": "application/json"}
    )


def _assert_repeated(answer: httpx.Response, key: str) -> None:
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"] == PROBLEM
    assert answer.json()["code"] == "bad_request"
    assert (
        answer.json()["detail"]
        == f'an object in the body repeats the key "{key}": send each key once'
    )


def test_a_create_with_a_repeated_key_is_refused_and_creates_nothing(server):
    base = _base(server)
    answer = _post(f"{base}/sessions", '{"sessionId":"dup1","sessionId":"dup2"}')
    _assert_repeated(answer, "sessionId")
    for session in ("dup1", "dup2"):
        assert httpx.get(f"{base}/sessions/{session}").status_code == 404


async def test_an_append_with_a_repeated_key_is_refused_on_the_fast_path(server):
    base = _base(server)
    assert _post(f"{base}/sessions", '{"sessionId":"s"}').status_code == 201
    async with httpx.AsyncClient() as client:
        before = await _fast_path_count(client, server.base_url, "answered")
        # Deep inside, with whitespace before the colon: still found.
        text = (
            '{"id":"e1","author":"u","actions":{"stateDelta":'
            '{"step": 1, "note": "at 10:30 \\": x", "step" : 2}}}'
        )
        answer = await client.post(
            f"{base}/sessions/s/events", content=text, headers={"Content-Type": "application/json"}
        )
        _assert_repeated(answer, "step")
        # The fast path answered it, not FastAPI's route behind it.
        assert await _fast_path_count(client, server.base_url, "answered") == before + 1
        session = (await client.get(f"{base}/sessions/s")).json()
        assert session["events"] == [] and session["state"] == {}
        batch = '{"events":[{"id":"a","author":"u"},{"id":"b","author":"u","author":"v"}]}'
        answer = await client.post(
            f"{base}/sessions/s/events/batch",
            content=batch,
            headers={"Content-Type": "application/json"},
        )
        _assert_repeated(answer, "author")
        assert (await client.get(f"{base}/sessions/s")).json()["events"] == []


def test_every_json_body_refuses_a_repeated_key(server):
    base = _base(server)
    app = base.rsplit("/users/", 1)[0]
    assert _post(f"{base}/sessions", '{"sessionId":"s"}').status_code == 201
    refused = {
        ("PATCH", f"{base}/sessions/s"): '{"stateDelta":{"a":1},"stateDelta":{"b":2}}',
        ("POST", f"{base}/sessions/s/fork"): '{"sessionId":"f1","sessionId":"f2"}',
        ("POST", f"{app}/store/batch"): (
            '{"ops":[{"op":"put","namespace":["n"],"key":"k","key":"j","value":{}}]}'
        ),
    }
    for (method, url), text in refused.items():
        answer = _post(url, text, method)
        assert answer.status_code == 400, (url, answer.text)
        assert "repeats the key" in answer.json()["detail"]
    # Nothing was written by any of them.
    assert httpx.get(f"{base}/sessions/s").json()["state"] == {}
    assert httpx.get(f"{base}/sessions/f1").status_code == 404
    assert httpx.get(f"{base}/sessions/f2").status_code == 404


def test_the_same_key_in_two_objects_is_not_a_repeat(server):
    base = _base(server)
    text = '{"sessionId":"two","state":{"a":{"k":1},"b":{"k":2},"note":"\\":"}}'
    answer = _post(f"{base}/sessions", text)
    assert answer.status_code == 201, answer.text
    assert answer.json()["state"] == {"a": {"k": 1}, "b": {"k": 2}, "note": '":'}


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("/sessions", "[1, 2]"),
        ("/sessions", '"a string"'),
        ("/sessions/s/fork", "[]"),
    ],
)
def test_a_body_of_the_wrong_kind_names_no_internal_class(server, path, text):
    base = _base(server)
    _post(f"{base}/sessions", '{"sessionId":"s"}')
    answer = _post(f"{base}{path}", text)
    assert answer.status_code == 422, answer.text
    assert answer.json()["errors"] == [{"loc": ["body"], "msg": "must be a JSON object"}]
    assert "Request" not in answer.text and "instance" not in answer.text


def test_a_body_that_is_not_json_is_told_with_its_line_and_column(server):
    answer = _post(f"{_base(server)}/sessions", '{\n  "sessionId": "s",\n  "state": {,}\n}')
    assert answer.status_code == 400 and answer.headers["content-type"] == PROBLEM
    assert answer.json()["detail"] == (
        "the body is not valid JSON: Expecting property name enclosed in double quotes "
        "(line 3, column 13)"
    )


def _raw_answer(server, request: bytes) -> tuple[bytes, bytes]:
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as connection:
        connection.sendall(request)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    return head, body


def test_a_request_line_too_long_is_a_problem_too(server):
    at_limit = b"/" + b"a" * 65534  # the longest target the parser takes: answered by the app
    head, _ = _raw_answer(
        server, b"GET " + at_limit + b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    assert head.startswith(b"HTTP/1.1 404 ")
    too_long = b"/apps/a/users/u/sessions?x=" + b"a" * 70_000
    head, body = _raw_answer(server, b"GET " + too_long + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"content-type: application/problem+json" in head.lower()
    assert json.loads(body) == {
        "type": "urn:session-state:problem:bad_request",
        "title": "Bad request",
        "status": 400,
        "detail": "the request line is too long: a URL may hold at most 65535 bytes",
        "code": "bad_request",
    }
    head, body = _raw_answer(server, b"GET / HTTP/1.1\r\nHost: localhost\r\nNo colon\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and b"problem+json" in head
    assert json.loads(body)["detail"].startswith("the request is not valid HTTP/1.1")


def test_repeated_key_finds_only_real_repeats():
    cases = {
        b'{"a":1,"a":2}': "a",
        b'{"a":1,"b":{"c":1,"c" :2}}': "c",
        b'[{"a":1},{"a":2}]': None,
        b'{"a":"\\":\\":","b":1}': None,
        b'{"a\\\\":1,"a\\\\" :2}': "a\\",
    }
    for text, repeated in cases.items():
        parsed = json_codec.loads(text)
        keys = _count_keys(parsed)
        assert json_codec.repeated_key(text, keys) == repeated, text


def _count_keys(value) -> int:
    if isinstance(value, dict):
        return len(value) + sum(_count_keys(item) for item in value.values())
    if isinstance(value, list):
        return sum(_count_keys(item) for item in value)
    return 0


@pytest.mark.parametrize(
    "texts",
    [
        ['{"a":1}', '{"b":[1,2]}'],
        # Another writer's spacing (PostgreSQL's jsonb text), inside and between.
        ['{"a": 1, "b": "x"}', '{"c": {"d": null}}'],
        # An integer beyond 64 bits, which orjson would read as a float.
        ['{"a":1}', '{"big":123456789012345678901234567890}', '{"c":"x"}'],
        # Commas and braces inside strings.
        ['{"a":"},{\\"b\\":1}"}', '{"é":"中😀"}'],
        ['{"f":1.0}', '{"g":1e16}', '{"h":-0.0}'],
        [],
    ],
)
def test_split_joined_gives_each_document_its_own_text_and_value(texts):
    for separator in (",", ", ", " ,\n"):
        joined = separator.join(texts)
        split = list(json_codec.split_joined(joined))
        assert [text for text, _ in split] == texts
        assert [value for _, value in split] == [json.loads(text) for text in texts]


def test_split_joined_refuses_documents_without_a_comma_between():
    with pytest.raises(json_codec.InvalidJSON):
        list(json_codec.split_joined('{"a":1} {"b":2}'))
