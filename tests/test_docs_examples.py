"""The examples of README.md and docs/*.md run, against a started server.

How a block is marked to run: its fence's info string is the language, then
the word `run`, then options (GitHub highlights by the first word only):

    ```bash run
    ```python run expect=404 setup=trip-1
    ```bash run server=own expect=401,403

Blocks without `run` (install commands, docker, the adk CLI, fragments) are
not run. For each Markdown file, one `session-state serve` on a SQLite file
of its own is started; its blocks run in the order they are written, so a
block may use what an earlier block of the same file stored.

- `bash run`: `bash -e -o pipefail` with `BASE` (the server's address) and
  `B` (`$BASE/apps/travel/users/ada`, the quick start's user) exported, the
  virtual environment's `bin/` first on PATH, and `SESSION_STATE_DATABASE_URL`
  set to the server's database (for `session-state sessions ...`). Every
  `curl` is recorded (a wrapper adds `--dump-header`): a block fails on an
  exit code other than 0 and on any answer of 400 or more that it does not
  declare with `expect=`; every status it declares must be answered at least
  once.
- `python run`: run with the virtual environment's Python, top-level `await`
  allowed (`async with` in an example), `SESSION_STATE_BASE_URL` set to the
  server; it fails on an exception (an `assert` in the block included).
- In both, the text `http://127.0.0.1:8000` (`serve`'s default address, as
  readers type it) is replaced with the server's address.
- `setup=NAME` runs a named setup first (see SETUPS): what the block needs and
  does not create itself, declared where the block is.
- `server=own` runs the block against a server of its own, started with the
  block's `export SESSION_STATE_...=...` lines as its environment (API keys,
  say).
"""

import ast
import asyncio
import os
import re
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import ServerProcess

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DEFAULT_ADDRESS = "http://127.0.0.1:8000"
VENV_BIN = Path(sys.executable).parent
BLOCK_TIMEOUT_SECONDS = 120
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Example:
    document: Path
    line: int
    language: str
    code: str
    expect: frozenset[int] = frozenset()
    setup: tuple[str, ...] = ()
    own_server: bool = False

    @property
    def name(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


@dataclass(frozen=True)
class Block:
    line: int
    info: str
    code: str


def fenced_blocks(text: str) -> Iterator[Block]:
    """Every fenced code block of a Markdown text (CommonMark fences)."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence = opening["fence"]
        body: list[str] = []
        index += 1
        while index < len(lines):
            closing = lines[index].strip()
            if closing.startswith(fence[0] * len(fence)) and not closing.strip(fence[0]):
                break
            body.append(lines[index])
            index += 1
        start = index - len(body)
        yield Block(start, opening["info"].strip(), textwrap.dedent("\n".join(body)) + "\n")
        index += 1


def examples_of(document: Path) -> list[Example]:
    found = []
    for block in fenced_blocks(document.read_text()):
        words = block.info.split()
        if len(words) < 2 or words[1] != "run":
            continue
        language, options = words[0], dict(word.split("=", 1) for word in words[2:])
        unknown = set(options) - {"expect", "setup", "server"}
        assert not unknown, f"{document.name}:{block.line}: unknown options {unknown}"
        assert language in ("bash", "python"), f"{document.name}:{block.line}: {language}"
        found.append(
            Example(
                document=document,
                line=block.line,
                language=language,
                code=block.code,
                expect=frozenset(int(s) for s in options.get("expect", "").split(",") if s),
                setup=tuple(s for s in options.get("setup", "").split(",") if s),
                own_server=options.get("server") == "own",
            )
        )
    return found


EXAMPLES = [example for document in DOCUMENTS for example in examples_of(document)]


# Named setups: what a block needs that an earlier block of its file does not
# leave behind. Each is idempotent.


def _setup_trip_1(base_url: str, _work: Path) -> None:
    """The quick start's session: travel/ada/trip-1 with its first event."""
    sessions = f"{base_url}/apps/travel/users/ada/sessions"
    created = httpx.post(sessions, json={"sessionId": "trip-1", "state": {"stage": "new"}})
    assert created.status_code in (201, 409), created.text
    appended = httpx.post(
        f"{sessions}/trip-1/events",
        json={
            "id": "e1",
            "author": "planner",
            "content": {"role": "model", "parts": [{"text": "Booked a hotel in Lisbon."}]},
            "actions": {"stateDelta": {"stage": "booked"}},
        },
    )
    assert appended.status_code in (200, 201, 409), appended.text


def _setup_adk_sessions(_base_url: str, work: Path) -> None:
    """adk_sessions.db in the block's folder: sessions written by ADK's own
    DatabaseSessionService, as an agent that used it leaves them."""
    from google.adk.events import Event, EventActions
    from google.adk.sessions import DatabaseSessionService

    async def write() -> None:
        service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{work / 'adk_sessions.db'}")
        try:
            session = await service.create_session(
                app_name="travel", user_id="ada", session_id="adk-1", state={"user:tier": "gold"}
            )
            delta = {"stage": "booked", "app:agents": ["planner"]}
            event = Event(author="planner", actions=EventActions(state_delta=delta))
            await service.append_event(session, event)
        finally:
            await service.close()

    asyncio.run(write())


SETUPS: dict[str, Callable[[str, Path], None]] = {
    "trip-1": _setup_trip_1,
    "adk-sessions": _setup_adk_sessions,
}


@dataclass
class Servers:
    """One started server per document, and any a block asks for."""

    root: Path
    started: dict[Path, ServerProcess] = field(default_factory=dict)

    def for_document(self, document: Path) -> ServerProcess:
        if document not in self.started:
            self.started[document] = self.start(f"doc-{len(self.started)}")
        return self.started[document]

    def start(self, name: str, **env: str) -> ServerProcess:
        folder = self.root / name
        folder.mkdir(exist_ok=True)
        return ServerProcess(f"sqlite+aiosqlite:///{folder / 'docs.db'}", **env).start()

    def stop(self) -> None:
        for server in self.started.values():
            server.stop()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    started = Servers(tmp_path_factory.mktemp("docs"))
    yield started
    started.stop()


def _server_environment(code: str) -> dict[str, str]:
    """The `export SESSION_STATE_X=...` lines of a block, as settings."""
    settings = {}
    for line in code.splitlines():
        words = shlex.split(line, comments=True)
        if len(words) == 2 and words[0] == "export" and words[1].startswith("SESSION_STATE_"):
            name, _, value = words[1].partition("=")
            settings[name] = value
    return settings


_CURL_WRAPPER = """#!/bin/sh
# Records the response heads of every request this block sends.
n=$(cat "$CURL_LOG/.count" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$CURL_LOG/.count"
exec {curl} --dump-header "$CURL_LOG/head.$n" "$@"
"""


def _statuses(log: Path) -> list[int]:
    """The final status of each recorded request, in order."""
    found = []
    for head in sorted(log.glob("head.*"), key=lambda path: int(path.suffix[1:])):
        codes = re.findall(r"^HTTP/[\d.]+ (\d{3})", head.read_text(), flags=re.MULTILINE)
        if codes:
            found.append(int(codes[-1]))
    return found


def run_bash(example: Example, base_url: str, database_url: str, work: Path) -> None:
    log = work / "curl"
    bin_dir = work / "bin"
    log.mkdir()
    bin_dir.mkdir()
    curl = bin_dir / "curl"
    curl.write_text(_CURL_WRAPPER.format(curl=_real_curl()))
    curl.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{VENV_BIN}:{os.environ.get('PATH', '')}",
        "BASE": base_url,
        "B": f"{base_url}/apps/travel/users/ada",
        "CURL_LOG": str(log),
        "SESSION_STATE_DATABASE_URL": database_url,
    }
    code = example.code.replace(DEFAULT_ADDRESS, base_url)
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", code],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_SECONDS,
    )
    output = f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    assert done.returncode == 0, f"{example.name} exited {done.returncode}\n{output}"
    statuses = _statuses(log)
    unexpected = [status for status in statuses if status >= 400 and status not in example.expect]
    assert not unexpected, f"{example.name}: HTTP {unexpected} not expected\n{output}"
    missing = example.expect - set(statuses)
    assert not missing, f"{example.name}: expected HTTP {sorted(missing)}, got {statuses}\n{output}"


def _real_curl() -> str:
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder) / "curl"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    pytest.skip("curl is not installed")


# Runs a block with top-level await allowed, as the examples write async code.
_PYTHON_RUNNER = """
import ast, asyncio, sys
source = open(sys.argv[1]).read()
code = compile(source, sys.argv[2], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__"})
if asyncio.iscoroutine(result):
    asyncio.run(result)
"""


def run_python(example: Example, base_url: str, work: Path) -> None:
    script = work / "example.py"
    script.write_text(example.code.replace(DEFAULT_ADDRESS, base_url))
    env = {**os.environ, "SESSION_STATE_BASE_URL": base_url}
    env.pop("SESSION_STATE_API_KEY", None)
    done = subprocess.run(
        [sys.executable, "-c", _PYTHON_RUNNER, str(script), example.name],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_SECONDS,
    )
    output = f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    assert done.returncode == 0, f"{example.name} failed\n{output}"


@pytest.mark.parametrize("example", EXAMPLES, ids=[example.name for example in EXAMPLES])
def test_example_runs(example: Example, servers: Servers, tmp_path: Path) -> None:
    if example.own_server:
        server = servers.start(f"own-{example.line}", **_server_environment(example.code))
    else:
        server = servers.for_document(example.document)
    try:
        for name in example.setup:
            SETUPS[name](server.base_url, tmp_path)
        if example.language == "bash":
            run_bash(example, server.base_url, server.database_url, tmp_path)
        else:
            run_python(example, server.base_url, tmp_path)
    finally:
        if example.own_server:
            server.stop()


def test_the_promised_examples_are_marked_to_run() -> None:
    """The quick start, memory and every curl example of the API reference
    run; a block that loses its marker fails here, not silently."""
    marked = {example.document.name: example for example in EXAMPLES}
    assert "README.md" in marked and "api.md" in marked
    readme = (ROOT / "README.md").read_text()
    for heading in ("### Example: the seed scenario with curl", "### Long-term memory"):
        section = readme.split(heading, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
        assert "```bash run" in section, f"README {heading!r} has no example marked to run"
    api = (ROOT / "docs" / "api.md").read_text()
    for block in fenced_blocks(api):
        if "curl " in block.code:
            assert block.info.startswith("bash run"), f"docs/api.md:{block.line} is not run"


def test_python_examples_compile() -> None:
    """Python blocks not run (ADK wiring, fragments) still parse."""
    for document in DOCUMENTS:
        for block in fenced_blocks(document.read_text()):
            if block.info.split()[:1] == ["python"]:
                ast.parse(block.code, f"{document.name}:{block.line}")


# Links of README.md and docs/*.md stay inside the repository and lead
# somewhere: a file that exists, a heading that exists.

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)|!\[[^\]]*\]\((?P<image>[^)\s]+)\)")


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors of a Markdown text."""
    anchors = set()
    outside_code = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    for heading in re.findall(r"^#{1,6} +(.+?) *$", outside_code, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


@pytest.mark.parametrize("document", DOCUMENTS, ids=[d.name for d in DOCUMENTS])
def test_links_stay_inside_the_repository_and_resolve(document: Path) -> None:
    text = document.read_text()
    for match in _LINK.finditer(text):
        target = match["target"] or match["image"]
        if re.match(r"^[a-z]+:", target):
            assert target.startswith("https://"), f"{document.name}: {target}"
            continue
        path_text, _, anchor = target.partition("#")
        linked = (document.parent / path_text).resolve() if path_text else document
        assert linked.is_relative_to(ROOT), f"{document.name}: {target} leaves the repository"
        assert linked.exists(), f"{document.name}: {target} does not exist"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked.read_text()), f"{document.name}: no #{anchor}"
