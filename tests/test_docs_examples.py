"""The examples of README.md and docs/*.md run, against a started server.

README.md runs as a reader runs it, top to bottom, with nothing set up in
between. One `session-state serve` is started as the README's first command
starts it: the virtual environment's, in a folder of its own, so on the
embedded default SQLite file (`./session_state.db` there), with no
`SESSION_STATE_*` variable set, so every setting at its default but the port.
Then every `bash` and `python` block runs in the order written, in that folder:

- `bash`: `bash -euo pipefail`, the virtual environment's `bin/` first on
  PATH (as after `. .venv/bin/activate`);
- `python`: `python -` with the virtual environment's Python, the block on
  stdin; it fails on an exception and on an `Unclosed` warning (a client or
  connection left open).

`127.0.0.1:8000` and `localhost:8000` (`serve`'s default address, as readers
type it) get the test's port; nothing else in a block changes. A block that is
not for running (installs, deployment) has a line just above it such as

    *Deployment only (not run by the tests).*

and the test skips those and only those; `text` blocks are output, never run,
and a block of any other language must be marked. Every `curl` of a bash block
is recorded (a wrapper on PATH adds `--dump-header`): a block fails on an
answer of 400 or more that its fence does not declare (```bash expect=404),
and on a declared status that never came.

docs/*.md: a block runs when its fence's info string is the language, then
the word `run`, then options (GitHub highlights by the first word only):

    ```bash run
    ```bash run server=own expect=401,403

Every other `bash` or `python` block of docs/ carries the README's marker
line just above it (installs, deployment, benchmarks), so a runnable example
cannot be left out silently; `text`, `json`, `yaml`, `sql` and `http` blocks
are never run. For each document one `session-state serve` on a SQLite file
of its own is started, in a folder of its own where the document's blocks
run; they run in the order they are written, so a block may use what an
earlier block of the same file stored or wrote there (the file's tests run
on one xdist worker, `--dist loadfile`). A `bash run` block gets `BASE` (the server's address), `B`
(`$BASE/apps/travel/users/ada`) and `SESSION_STATE_DATABASE_URL` (the server's
database) exported; `server=own` runs the block against a server of its own,
started with the block's `export SESSION_STATE_...=...` lines as its
environment (API keys, say). `expect=` and the address are as in the README.
"""

import ast
import os
import re
import shlex
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import ServerProcess, free_port

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
DOCUMENTS = [README, *DOCS]
VENV_BIN = Path(sys.executable).parent
BLOCK_TIMEOUT_SECONDS = 120
_DEFAULT_ADDRESS = re.compile(r"\b(127\.0\.0\.1|localhost):8000\b")
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
# The line just above a README block that is not for running.
_NOT_RUN = re.compile(r"^\*(?P<what>[^*]+?) \(not run by the tests\b[^*]*\)\.\*$")


@dataclass(frozen=True)
class Block:
    line: int
    info: str
    code: str
    above: str = ""
    """The last non-blank line before the opening fence."""

    @property
    def language(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    @property
    def options(self) -> dict[str, str]:
        return dict(word.split("=", 1) for word in self.info.split()[1:] if "=" in word)


def fenced_blocks(text: str) -> Iterator[Block]:
    """Every fenced code block of a Markdown text (CommonMark fences)."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        above = next((line for line in reversed(lines[:index]) if line.strip()), "")
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
        code = textwrap.dedent("\n".join(body)) + "\n"
        yield Block(start, opening["info"].strip(), code, above.strip())
        index += 1


def _expected_statuses(options: dict[str, str]) -> frozenset[int]:
    return frozenset(int(status) for status in options.get("expect", "").split(",") if status)


def _with_port(code: str, port: int) -> str:
    return _DEFAULT_ADDRESS.sub(lambda match: f"{match[1]}:{port}", code)


_CURL_WRAPPER = """#!/bin/sh
# Records the response heads of every request this block sends.
n=$(cat "$CURL_LOG/.count" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$CURL_LOG/.count"
exec {curl} --dump-header "$CURL_LOG/head.$n" "$@"
"""


def _real_curl() -> str:
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder) / "curl"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    pytest.skip("curl is not installed")


def _curl_recorder(folder: Path) -> tuple[Path, Path]:
    """A `curl` on PATH that records every answer: (its bin folder, its log)."""
    log = folder / "curl"
    bin_dir = folder / "bin"
    log.mkdir(parents=True)
    bin_dir.mkdir()
    curl = bin_dir / "curl"
    curl.write_text(_CURL_WRAPPER.format(curl=_real_curl()))
    curl.chmod(0o755)
    return bin_dir, log


def _statuses(log: Path) -> list[int]:
    """The final status of each recorded request, in order."""
    found = []
    for head in sorted(log.glob("head.*"), key=lambda path: int(path.suffix[1:])):
        codes = re.findall(r"^HTTP/[\d.]+ (\d{3})", head.read_text(), flags=re.MULTILINE)
        if codes:
            found.append(int(codes[-1]))
    return found


def _check_statuses(name: str, log: Path, expect: frozenset[int], output: str) -> None:
    statuses = _statuses(log)
    unexpected = [status for status in statuses if status >= 400 and status not in expect]
    assert not unexpected, f"{name}: HTTP {unexpected} not expected\n{output}"
    missing = expect - set(statuses)
    assert not missing, f"{name}: expected HTTP {sorted(missing)}, got {statuses}\n{output}"


def _output(done: subprocess.CompletedProcess[str]) -> str:
    return f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"


def _run_python(name: str, code: str, env: dict[str, str], cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-"],
        input=code,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_SECONDS,
    )
    assert done.returncode == 0, f"{name} failed\n{_output(done)}"
    assert "Unclosed" not in done.stderr, f"{name} left a connection open\n{_output(done)}"


# README.md, top to bottom.


def readme_blocks() -> list[Block]:
    return list(fenced_blocks(README.read_text()))


def _reader_environment(path_first: Path) -> dict[str, str]:
    """A reader's shell: no SESSION_STATE_ variable, the venv active."""
    env = {
        name: value for name, value in os.environ.items() if not name.startswith("SESSION_STATE_")
    }
    env["PATH"] = f"{path_first}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    return env


@dataclass
class DefaultServer:
    """`session-state serve --port N` in `folder`, every setting its default."""

    folder: Path
    log: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    # As generous as the conftest's servers: a loaded 2-core machine is slow to start one.
    def start(self, env: dict[str, str], timeout: float = 120.0) -> None:
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [str(VENV_BIN / "session-state"), "serve", "--port", str(self.port)],
                cwd=self.folder,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"serve exited\n{self.log.read_text()}"
            try:
                answer = httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1)
                if answer.status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"serve did not start in {timeout} s\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def test_the_readme_runs_top_to_bottom_against_one_server(tmp_path: Path) -> None:
    folder = tmp_path / "reader"
    folder.mkdir()
    curl_bin, curl_log = _curl_recorder(tmp_path / "recorder")
    env = _reader_environment(curl_bin)
    server = DefaultServer(folder, tmp_path / "serve.log")
    server.start(env)
    ran, skipped, marked = [], [], []
    try:
        for block in readme_blocks():
            name = f"README.md:{block.line} ({block.language})"
            if _NOT_RUN.match(block.above):
                marked.append(block.line)
            if block.language == "text":
                continue
            if block.language not in ("bash", "python") or _NOT_RUN.match(block.above):
                skipped.append(block.line)
                continue
            assert set(block.options) <= {"expect"}, f"{name}: only expect= in the README"
            code = _with_port(block.code, server.port)
            if block.language == "python":
                _run_python(name, code, env, folder)
            else:
                for head in curl_log.glob("head.*"):
                    head.unlink()
                (curl_log / ".count").unlink(missing_ok=True)
                done = subprocess.run(
                    ["bash", "-euo", "pipefail", "-c", code],
                    env={**env, "CURL_LOG": str(curl_log)},
                    cwd=folder,
                    capture_output=True,
                    text=True,
                    timeout=BLOCK_TIMEOUT_SECONDS,
                )
                output = _output(done)
                assert done.returncode == 0, f"{name} exited {done.returncode}\n{output}"
                _check_statuses(name, curl_log, _expected_statuses(block.options), output)
            assert server.process is not None and server.process.poll() is None, (
                f"serve exited during {name}\n{server.log.read_text()}"
            )
            ran.append(block.line)
    finally:
        server.stop()
    assert skipped == marked, f"skipped {skipped}, marked not run {marked}"
    # The server was the embedded default, the database the blocks' commands read.
    assert (folder / "session_state.db").is_file()
    assert len(ran) >= 5, ran  # the quick start and the three frameworks


# What a block marked not to run may hold: installs and deployment.
DEPLOYMENT = (
    "pip install",
    "docker compose",
    "adk api_server",
    "services:",
    "postgresql+asyncpg://",
    "SESSION_STATE_API_KEYS=",
    "SESSION_STATE_JWT_JWKS=",
    "SESSION_STATE_ENCRYPTION_KEYS=",
    "session-state reencrypt",
)


def test_only_installs_and_deployment_are_marked_not_to_run() -> None:
    """A marker is a promise to the reader, not a way to quiet a failing
    example: each marked block installs or deploys, and every marker line
    sits right above a block."""
    blocks = readme_blocks()
    marked = [block for block in blocks if _NOT_RUN.match(block.above)]
    for block in marked:
        assert any(word in block.code for word in DEPLOYMENT), f"README.md:{block.line}"
        assert block.language != "text", f"README.md:{block.line}: text is never run"
    marker_lines = [
        line
        for line in README.read_text().splitlines()
        if line.startswith("*") and "not run by the tests" in line
    ]
    assert len(marker_lines) == len(marked), marker_lines
    assert all(_NOT_RUN.match(line) for line in marker_lines), marker_lines


def test_the_readme_opens_with_serve_on_its_defaults_and_the_tests() -> None:
    """The first block, in the first section, is the two commands; the first
    serves as the test above serves (nothing but the port added)."""
    readme = README.read_text()
    first = readme_blocks()[0]
    sections = [index for index, line in enumerate(readme.splitlines()) if line.startswith("## ")]
    assert sections[0] < first.line < sections[1], (first.line, sections[:2])
    commands = [line for line in first.code.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2, commands
    assert commands[0].endswith("&& .venv/bin/session-state serve"), commands[0]
    assert "SESSION_STATE_" not in commands[0]
    assert commands[1].endswith("&& .venv/bin/pytest"), commands[1]


def test_the_readme_is_a_front_door() -> None:
    """The README stays short: the rest is in docs/, which it maps."""
    lines = README.read_text().splitlines()
    assert len(lines) <= 300, len(lines)
    for document in [*DOCS, ROOT / "CONTRIBUTING.md"]:
        assert f"]({document.relative_to(ROOT)})" in README.read_text(), document.name


def test_the_promised_sections_run() -> None:
    """The quick start and one example each for ADK, the OpenAI Agents SDK
    and LangGraph run (not marked, not text)."""
    readme = README.read_text()
    for heading in (
        "### Sessions, events and state with curl",
        "### Labels, lists and memory",
        "### ADK",
        "### OpenAI Agents SDK",
        "### LangGraph",
    ):
        section = readme.split(heading + "\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
        runs = [
            block
            for block in fenced_blocks(section)
            if block.language in ("bash", "python") and not _NOT_RUN.match(block.above)
        ]
        assert runs, f"README {heading!r} has no example that runs"


# docs/*.md, the blocks marked `run`.


@dataclass(frozen=True)
class Example:
    document: Path
    line: int
    language: str
    code: str
    expect: frozenset[int] = frozenset()
    own_server: bool = False

    @property
    def name(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def examples_of(document: Path) -> list[Example]:
    found = []
    for block in fenced_blocks(document.read_text()):
        words = block.info.split()
        if len(words) < 2 or words[1] != "run":
            continue
        unknown = set(block.options) - {"expect", "server"}
        assert not unknown, f"{document.name}:{block.line}: unknown options {unknown}"
        assert block.language in ("bash", "python"), f"{document.name}:{block.line}"
        found.append(
            Example(
                document=document,
                line=block.line,
                language=block.language,
                code=block.code,
                expect=_expected_statuses(block.options),
                own_server=block.options.get("server") == "own",
            )
        )
    return found


EXAMPLES = [example for document in DOCS for example in examples_of(document)]


@dataclass
class Servers:
    """One started server per document, and any a block asks for."""

    root: Path
    started: dict[Path, ServerProcess] = field(default_factory=dict)

    def for_document(self, document: Path) -> ServerProcess:
        if document not in self.started:
            self.started[document] = self.start(self.folder(document).name)
        return self.started[document]

    def folder(self, document: Path) -> Path:
        """Where the document's server keeps its database and its blocks run."""
        return self.root / f"doc-{document.stem}"

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


def run_bash(example: Example, server: ServerProcess, work: Path, recorder: Path) -> None:
    bin_dir, log = _curl_recorder(recorder)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "BASE": server.base_url,
        "B": f"{server.base_url}/apps/travel/users/ada",
        "CURL_LOG": str(log),
        "SESSION_STATE_DATABASE_URL": server.database_url,
    }
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", _with_port(example.code, server.port)],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_SECONDS,
    )
    output = _output(done)
    assert done.returncode == 0, f"{example.name} exited {done.returncode}\n{output}"
    _check_statuses(example.name, log, example.expect, output)


@pytest.mark.parametrize("example", EXAMPLES, ids=[example.name for example in EXAMPLES])
def test_example_runs(example: Example, servers: Servers, tmp_path: Path) -> None:
    if example.own_server:
        server = servers.start(f"own-{example.line}", **_server_environment(example.code))
        work = tmp_path
    else:
        server = servers.for_document(example.document)
        work = servers.folder(example.document)
    try:
        if example.language == "bash":
            run_bash(example, server, work, tmp_path)
        else:
            env = {**os.environ, "SESSION_STATE_BASE_URL": server.base_url}
            env.pop("SESSION_STATE_API_KEY", None)
            _run_python(example.name, _with_port(example.code, server.port), env, work)
    finally:
        if example.own_server:
            server.stop()


def test_every_curl_example_of_the_api_reference_is_marked_to_run() -> None:
    """A block of docs/api.md that loses its marker fails here, not silently."""
    assert any(example.document.name == "api.md" for example in EXAMPLES)
    api = (ROOT / "docs" / "api.md").read_text()
    for block in fenced_blocks(api):
        if "curl " in block.code:
            assert block.info.startswith("bash run"), f"docs/api.md:{block.line} is not run"


def test_every_shell_and_python_block_of_the_docs_runs_or_says_why_not() -> None:
    """In docs/, a `bash` or `python` block without `run` must carry the
    README's marker, and only installs, deployment and benchmarks may."""
    not_for_running = (*DEPLOYMENT, "python -m bench")
    for document in DOCS:
        for block in fenced_blocks(document.read_text()):
            name = f"{document.name}:{block.line}"
            if block.language not in ("bash", "python"):
                continue
            words = block.info.split()
            runs = len(words) > 1 and words[1] == "run"
            marked = _NOT_RUN.match(block.above) is not None
            assert runs != marked, f"{name}: mark it `run`, or say above it why it is not run"
            if marked:
                assert any(word in block.code for word in not_for_running), name


def test_the_moved_sections_of_the_docs_run() -> None:
    """What left the README for docs/ still runs there: every client and
    adapter, memory, the commands, backups and the migration from ADK."""
    promised = {
        "clients.md": (
            "## The clients",
            "## ADK: switch from DatabaseSessionService in three lines",
            "### ADK's own servers, by URI",
            "## OpenAI Agents SDK",
            "## LangGraph",
            "## LangGraph: long-term store",
        ),
        "memory.md": ("# Long-term memory", "## Memory search by meaning"),
        "cli.md": ("## Finding what is stored",),
        "operations.md": (
            "## Expiry and the sweeper",
            "## Backup, restore, moving between databases",
        ),
        "migrating-from-adk.md": ("# Migrating from ADK's DatabaseSessionService",),
    }
    for name, headings in promised.items():
        document = ROOT / "docs" / name
        runs = {example.line for example in EXAMPLES if example.document == document}
        lines = document.read_text().splitlines()
        for heading in headings:
            start = lines.index(heading)
            level = heading.split()[0]
            end = next(
                (
                    index
                    for index in range(start + 1, len(lines))
                    if re.match(rf"^#{{1,{len(level)}}} ", lines[index])
                    and not _inside_code(lines, index)
                ),
                len(lines),
            )
            assert any(start < line <= end for line in runs), f"docs/{name} {heading!r}: no run"


def _inside_code(lines: list[str], index: int) -> bool:
    return sum(1 for line in lines[:index] if _FENCE.match(line)) % 2 == 1


def test_python_examples_compile() -> None:
    """Python blocks not run (fragments of docs/) still parse."""
    for document in DOCUMENTS:
        for block in fenced_blocks(document.read_text()):
            if block.language == "python":
                ast.parse(block.code, f"{document.name}:{block.line}")


# Links of the documents stay inside the repository and lead somewhere: a
# file that exists, a heading that exists.

LINKED = [*DOCUMENTS, ROOT / "CONTRIBUTING.md", ROOT / "client" / "README.md"]

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)|!\[[^\]]*\]\((?P<image>[^)\s]+)\)")


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors of a Markdown text."""
    anchors = set()
    outside_code = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    for heading in re.findall(r"^#{1,6} +(.+?) *$", outside_code, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


@pytest.mark.parametrize("document", LINKED, ids=[str(d.relative_to(ROOT)) for d in LINKED])
def test_links_stay_inside_the_repository_and_resolve(document: Path) -> None:
    text = document.read_text()
    for match in _LINK.finditer(text):
        target = match["target"] or match["image"]
        assert not re.match(r"^[a-z]+:", target), f"{document.name}: {target} is outside"
        path_text, _, anchor = target.partition("#")
        linked = (document.parent / path_text).resolve() if path_text else document
        assert linked.is_relative_to(ROOT), f"{document.name}: {target} leaves the repository"
        assert linked.exists(), f"{document.name}: {target} does not exist"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked.read_text()), f"{document.name}: no #{anchor}"
