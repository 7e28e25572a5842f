"""What users install is what is tested: the server's wheel and sdist and the
client's wheel, built from the sources as the Dockerfile copies them,
installed (not editable) into a fresh virtual environment outside the
checkout, and run from a folder outside it, so that nothing of the checkout
can stand in for a module the wheel left out.

The image's own commands are run as it runs them (its entry point, command,
environment and health check, compose's migrate command), so these tests
also check the image without a Docker engine."""

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.conftest import free_port, unavailable
from tests.test_container_files import (
    compose,
    dockerfile_instructions,
    exec_form,
    healthcheck_command,
    image_env,
    only,
)

ROOT = Path(__file__).parent.parent
# Left out of the copy as .dockerignore leaves them out of the image's build.
NOT_SOURCES = shutil.ignore_patterns(
    "__pycache__", "*.py[cod]", "*.egg-info", "build", "dist", "*.db", "*.db-wal", "*.db-shm"
)
# Modules that run when imported: Alembic's environment script, and the
# command line's `python -m session_state.cli` entry (it runs the command).
NOT_IMPORTABLE_ALONE = {"session_state.migrations.env", "session_state.cli.__main__"}


@dataclass
class Installed:
    server_wheel: Path
    server_wheel_from_sdist: Path
    client_wheel: Path
    venv: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"


def _uv() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if found is None:
        unavailable("The installed-package tests", "uv is not installed (pip install uv)")
    return found


def _source_files(folder: Path) -> set[str]:
    """Every file a package folder holds, as paths relative to it."""
    return {
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


def _copy_as_the_dockerfile_does(target: Path) -> None:
    """The build stage's COPY instructions, relative to its WORKDIR, and nothing
    else: a checkout's own build/ or egg-info would leak into the wheel."""
    last_from = max(
        i for i, (keyword, _) in enumerate(dockerfile_instructions()) if keyword == "FROM"
    )
    for keyword, arguments in dockerfile_instructions()[:last_from]:
        if keyword != "COPY" or "--from=" in arguments:
            continue
        *sources, destination = arguments.split()
        for source in sources:
            into = target / destination
            into = into / source if destination.endswith("/") else into
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, into, ignore=NOT_SOURCES)
            else:
                into.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(ROOT / source, into)


def _built(process: subprocess.Popen[str], folder: Path, pattern: str) -> Path:
    _, errors = process.communicate(timeout=300)
    assert process.returncode == 0, errors
    (found,) = folder.glob(pattern)
    return found


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    work = tmp_path_factory.mktemp("installed")
    assert not work.is_relative_to(ROOT)
    uv = _uv()
    server_source, client_source = work / "server-src", work / "client-src"
    _copy_as_the_dockerfile_does(server_source)
    shutil.copytree(ROOT / "client", client_source, ignore=NOT_SOURCES)

    def build(*arguments: str | Path) -> subprocess.Popen[str]:
        command = [uv, "build", "--quiet", "--python", sys.executable, *map(str, arguments)]
        return subprocess.Popen(command, stderr=subprocess.PIPE, text=True)

    # Both from the source tree, as `pip install .` and the Dockerfile build.
    server = build("--sdist", "--wheel", server_source, "-o", work / "server")
    # uv's default: the sdist, then the wheel built from that sdist.
    client = build(client_source, "-o", work / "client")
    server_wheel = _built(server, work / "server", "*.whl")
    sdist = _built(server, work / "server", "*.tar.gz")
    client_wheel = _built(client, work / "client", "*.whl")

    from_sdist = build("--wheel", sdist, "-o", work / "from-sdist")
    venv = work / "venv"
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, venv], check=True)
    subprocess.run(
        [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            venv / "bin" / "python",
            server_wheel,
            f"{client_wheel}[adk,openai-agents,langgraph]",
        ],
        check=True,
    )
    return Installed(
        server_wheel=server_wheel,
        server_wheel_from_sdist=_built(from_sdist, work / "from-sdist", "*.whl"),
        client_wheel=client_wheel,
        venv=venv,
    )


def _wheel_files(wheel: Path) -> dict[str, str]:
    """The wheel's files (its .dist-info aside) and their hashes, from RECORD."""
    with zipfile.ZipFile(wheel) as archive:
        (record,) = (name for name in archive.namelist() if name.endswith(".dist-info/RECORD"))
        rows = csv.reader(io.StringIO(archive.read(record).decode()))
        return {path: digest for path, digest, _ in rows if ".dist-info/" not in path}


def _server_files() -> set[str]:
    migrations = {f"session_state/migrations/{name}" for name in _source_files(ROOT / "migrations")}
    return {f"session_state/{name}" for name in _source_files(ROOT / "app")} | migrations


def _client_files() -> set[str]:
    package = ROOT / "client" / "session_state_client"
    return {f"session_state_client/{name}" for name in _source_files(package)}


def test_the_server_wheel_holds_every_file_of_app_and_migrations_and_nothing_else(installed):
    """A package listed by hand was once left out (`session-state serve`
    failed on ModuleNotFoundError); one package, session_state, and no
    top-level `app` or `migrations` to collide with a user's own."""
    in_wheel = set(_wheel_files(installed.server_wheel))
    expected = _server_files()
    assert sorted(expected - in_wheel) == [], "left out of the wheel"
    assert sorted(in_wheel - expected) == [], "in the wheel, not in app/ or migrations/"
    assert "session_state/migrations/script.py.mako" in in_wheel
    assert "session_state/py.typed" in in_wheel


def test_the_wheel_built_from_the_sdist_is_the_same_wheel(installed):
    direct = _wheel_files(installed.server_wheel)
    assert _wheel_files(installed.server_wheel_from_sdist) == direct


def test_the_client_wheel_holds_every_file_of_the_client_package(installed):
    in_wheel = set(_wheel_files(installed.client_wheel))
    assert in_wheel == _client_files()
    assert "session_state_client/py.typed" in in_wheel


def _module_names(package: str, files: set[str]) -> list[str]:
    names = []
    for name in sorted(files):
        if name.endswith(".py"):
            module = name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
            names.append(module)
    assert package in names
    return names


def _clean_environment(installed: Installed) -> dict[str, str]:
    """The machine's environment without anything pointing at the checkout or
    its virtual environment, the installed one first on PATH."""
    left_out = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in left_out and not key.startswith("SESSION_STATE_")
    }
    environment["PATH"] = os.pathsep.join([str(installed.bin), os.environ.get("PATH", "")])
    return environment


IMPORT_EVERY_MODULE = """
import importlib, json, sys
found = {name: importlib.import_module(name).__file__ for name in json.load(sys.stdin)}
print(json.dumps({"modules": found, "path": sys.path}))
"""


def test_every_module_of_the_server_and_client_imports_from_the_installed_wheels(
    installed, tmp_path
):
    """Adapters included (ADK, OpenAI Agents SDK, LangGraph, installed as the
    client's extras); from a folder outside the checkout, each module is the
    installed one."""
    names = _module_names("session_state", _server_files()) + _module_names(
        "session_state_client", _client_files()
    )
    names = [name for name in names if name not in NOT_IMPORTABLE_ALONE]
    imported = subprocess.run(
        [installed.bin / "python", "-c", IMPORT_EVERY_MODULE],
        input=json.dumps(names),
        env=_clean_environment(installed),
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert imported.returncode == 0, imported.stderr
    answer = json.loads(imported.stdout)
    outside = {
        name: file
        for name, file in answer["modules"].items()
        if not Path(file).is_relative_to(installed.venv)
    }
    assert outside == {}, "not the installed modules"
    assert set(answer["modules"]) == set(names)
    assert not [entry for entry in answer["path"] if entry and Path(entry).is_relative_to(ROOT)]


@contextmanager
def _serving(installed: Installed, workdir: Path, environment: dict[str, str]) -> Iterator[str]:
    """The image's CMD through its ENTRYPOINT, until its health check passes;
    stopped as `docker stop` stops it (SIGTERM), which must end it cleanly."""
    entrypoint = str(installed.bin / exec_form(only("ENTRYPOINT"))[0])
    log = workdir / "serve.log"
    with log.open("ab") as output:
        process = subprocess.Popen(
            [entrypoint, *exec_form(only("CMD"))],
            env=environment,
            cwd=workdir,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{environment['SESSION_STATE_PORT']}"
    try:
        deadline = time.monotonic() + 90  # a loaded 2-core machine is slow to start one
        while True:
            assert process.poll() is None, f"serve exited: {log.read_text()}"
            assert time.monotonic() < deadline, f"serve did not start: {log.read_text()}"
            try:
                if httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        health = subprocess.run(healthcheck_command(), env=environment, capture_output=True)
        assert health.returncode == 0, health.stderr
        yield base_url
    except BaseException:
        process.kill()
        process.wait()
        raise
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0, log.read_text()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_installed_server_migrates_serves_and_keeps_its_data_over_a_restart(
    installed, backend, tmp_path, request
):
    """compose's migrate command, then serve, from a folder outside the
    checkout: SQLite is the image's default with no URL set (a file in the
    working folder), PostgreSQL a fresh database."""
    environment = {
        **_clean_environment(installed),
        **{key: value for key, value in image_env().items() if key != "PATH"},
        "SESSION_STATE_PORT": str(free_port()),
    }
    if backend == "postgresql":
        url = request.getfixturevalue("fresh_postgres_url")
        environment["SESSION_STATE_DATABASE_URL"] = url
        shown = f"PostgreSQL {make_url(url).host}:{make_url(url).port}/{make_url(url).database}"
    else:
        shown = f"SQLite file {tmp_path.resolve() / 'session_state.db'}"

    migrated = subprocess.run(
        [installed.bin / "session-state", *compose()["services"]["migrate"]["command"]],
        env=environment,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert migrated.returncode == 0, migrated.stderr
    assert shown in migrated.stdout

    session = "/apps/travel/users/ann/sessions/trip"
    with _serving(installed, tmp_path, environment) as base_url:
        created = httpx.post(
            f"{base_url}/apps/travel/users/ann/sessions",
            json={"sessionId": "trip", "state": {"user:tier": "gold"}},
        )
        assert created.status_code == 201, created.text
        appended = httpx.post(
            f"{base_url}{session}/events",
            json={"id": "e1", "author": "user", "actions": {"stateDelta": {"step": 1}}},
        )
        assert appended.status_code == 201, appended.text
        before = httpx.get(f"{base_url}{session}").json()
    assert [event["id"] for event in before["events"]] == ["e1"]
    assert before["state"] == {"user:tier": "gold", "step": 1}
    assert f"from {shown}" in (tmp_path / "serve.log").read_text()

    with _serving(installed, tmp_path, environment) as base_url:
        after = httpx.get(f"{base_url}{session}")
    assert after.status_code == 200
    assert after.json() == before
    if backend == "sqlite":
        assert (tmp_path / "session_state.db").is_file()
