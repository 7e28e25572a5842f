"""Writes the sync client from the async one: SessionStateClient
(session_state_client/_sync_client.py) from AsyncSessionStateClient
(session_state_client/_async_client.py), so that the 23 calls, their
signatures, docstrings and the retry loop are written once.

    python client/tools/unasync.py            # writes _sync_client.py
    python client/tools/unasync.py --check    # exits 1 if it is not what it would write

What changes, and nothing else:
- `async` and `await` are dropped (`async def`, `async for`, `async with`);
- the names in RENAMES, as whole names in code (never inside strings);
- the passages in PASSAGES, where the two clients' documentation differs;
- the members in ASYNC_ONLY are left out.
Every rename and passage must be found, so a change to the source that
leaves one behind fails here rather than writing a client that is subtly
different. The result is formatted by ruff as the rest of the code is.
"""

import argparse
import ast
import difflib
import io
import itertools
import subprocess
import sys
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "session_state_client"
SOURCE = PACKAGE / "_async_client.py"
TARGET = PACKAGE / "_sync_client.py"
ASYNC_CLASS = "AsyncSessionStateClient"

HEADER = (
    "# Generated from _async_client.py by client/tools/unasync.py: do not edit.\n"
    "# Change the async client and run `python client/tools/unasync.py`.\n"
)

# Async name -> sync name.
RENAMES = {
    "AsyncSessionStateClient": "SessionStateClient",
    "AsyncIterator": "Iterator",
    "async_pages": "pages",
    "AiohttpTransport": "HttpxTransport",
    "AppendCoalescer": "DirectAppends",
    "AIOHTTP_ERRORS": "HTTPX_ERRORS",
    "aiohttp_failure": "httpx_failure",
    "aiohttp": "httpx",
    "ClientSession": "Client",
    "asyncio": "time",
    "aclose": "close",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
}

# Members of the async client with no sync counterpart: asyncio's name for
# close, and the `with` block for code that runs the async client on loops
# of its own (the sync client's `with` comes from `async with`).
ASYNC_ONLY = frozenset({"aclose", "__enter__", "__exit__"})

# Text of the async source -> the sync client's: where their documentation differs.
PASSAGES = [
    (
        '"""AsyncSessionStateClient: one method per API call.\n\n'
        "The source of the sync client too: client/tools/unasync.py writes\n"
        "SessionStateClient (`_sync_client.py`) from this module, so a change here is\n"
        'followed there by running it (a test fails while the two differ)."""',
        '"""SessionStateClient: one method per API call, generated from the async\n'
        'client (_async_client.py)."""',
    ),
    ('__all__ = ["AsyncSessionStateClient"]', '__all__ = ["SessionStateClient"]'),
    (
        "Asynchronous client of a session-state server (transport: aiohttp).",
        "Synchronous client of a session-state server (transport: httpx).",
    ),
    (
        "has seen of it (`minRevision`), as the sync client's do.",
        "has seen of it (`minRevision`), so a server reading from replicas never\n"
        "    answers with an older one: the client reads its own writes.",
    ),
    (
        "timeout: seconds or an httpx.Timeout, meaning what it means to the\n"
        "            sync client: a bound on connecting and on each read, not on the\n"
        "            whole request. Default 30 s, 5 s to connect.",
        "timeout: seconds or an httpx.Timeout: a bound on connecting and on\n"
        "            each read (and write), not on the whole request. Default 30 s,\n"
        "            5 s to connect.",
    ),
    (
        "http_client: an aiohttp.ClientSession to use, on its own event loop\n"
        "            (its timeout, headers and proxy settings are kept; requests go to\n"
        "            `base_url`).",
        "http_client: an httpx.Client to use (its base URL, if it has one,\n"
        "            and its timeout are kept).",
    ),
    (
        '"""Closes the connections the client opened, on every event loop\n'
        "        that used it (not an `http_client` given). A later call opens new\n"
        '        ones."""',
        '"""Closes the connections the client opened (not an `http_client` given)."""',
    ),
]


def generate(source: str | None = None) -> str:
    """The sync client's module, as it is to be written."""
    text = SOURCE.read_text() if source is None else source
    text = _without_async_only_members(text)
    text = _with_sync_passages(text)
    text = _unasync_tokens(text)
    return _formatted(HEADER + text)


def _without_async_only_members(text: str) -> str:
    (cls,) = (
        node
        for node in ast.parse(text).body
        if isinstance(node, ast.ClassDef) and node.name == ASYNC_CLASS
    )
    members = [
        node
        for node in cls.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in ASYNC_ONLY
    ]
    missing = ASYNC_ONLY - {member.name for member in members}
    if missing:
        raise SystemExit(f"unasync: {ASYNC_CLASS} has no {sorted(missing)}")
    lines = text.splitlines(keepends=True)
    for member in sorted(members, key=lambda node: node.lineno, reverse=True):
        first = min([member.lineno, *(d.lineno for d in member.decorator_list)]) - 1
        assert member.end_lineno is not None
        del lines[first : member.end_lineno]
    return "".join(lines)


def _with_sync_passages(text: str) -> str:
    for async_text, sync_text in PASSAGES:
        found = text.count(async_text)
        if found != 1:
            raise SystemExit(f"unasync: passage found {found} times, not once:\n{async_text}")
        text = text.replace(async_text, sync_text)
    return text


def _unasync_tokens(text: str) -> str:
    """`async`/`await` dropped and RENAMES applied, token by token: strings and
    comments are left as they are."""
    lines = text.splitlines(keepends=True)
    # (row, start column, end column, replacement), applied right to left.
    edits: list[tuple[int, int, int, str]] = []
    unused = set(RENAMES)
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    for token, following in itertools.pairwise(tokens):
        if token.type != tokenize.NAME:
            continue
        (row, start), (_, end) = token.start, token.end
        if token.string in ("async", "await"):
            # The space after it goes too: `await x` -> `x`.
            if following.start[0] == row:
                end = following.start[1]
            edits.append((row, start, end, ""))
        elif token.string in RENAMES:
            edits.append((row, start, end, RENAMES[token.string]))
            unused.discard(token.string)
    if unused:
        raise SystemExit(f"unasync: names never found in the source: {sorted(unused)}")
    for row, start, end, replacement in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:start] + replacement + line[end:]
    return "".join(lines)


def _formatted(text: str) -> str:
    """As ruff leaves it: imports in order, `for x in y: yield x` as
    `yield from y`, formatted."""
    for command in (
        ["check", "--select", "I,UP028", "--fix", "--unsafe-fixes", "--quiet", "--exit-zero"],
        ["format", "--quiet"],
    ):
        text = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--stdin-filename", str(TARGET), "-"],
            input=text,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is out of date")
    expected = generate()
    if not parser.parse_args().check:
        TARGET.write_text(expected)
        return 0
    current = TARGET.read_text() if TARGET.exists() else ""
    if current == expected:
        return 0
    diff = difflib.unified_diff(
        current.splitlines(keepends=True),
        expected.splitlines(keepends=True),
        str(TARGET),
        "generated",
    )
    sys.stdout.writelines(diff)
    return 1


if __name__ == "__main__":
    sys.exit(main())
