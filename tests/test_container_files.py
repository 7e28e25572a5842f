"""The Dockerfile and docker-compose.yml, checked without a Docker engine: their
wiring, and the image's own commands run outside a container as it runs them."""

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import free_port

ROOT = Path(__file__).parent.parent


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    instructions = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, arguments = line.partition(" ")
            instructions.append((keyword.upper(), arguments.strip()))
    return instructions


def final_stage() -> list[tuple[str, str]]:
    instructions = dockerfile_instructions()
    last_from = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last_from:]


def exec_form(arguments: str) -> list[str]:
    parsed = json.loads(arguments)
    assert isinstance(parsed, list), f"{arguments} is not in exec form"
    return parsed


def image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, arguments in final_stage():
        if keyword == "ENV":
            for pair in shlex.split(arguments):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def only(keyword: str) -> str:
    values = [arguments for found, arguments in final_stage() if found == keyword]
    assert len(values) == 1, f"expected one {keyword} in the final stage, got {values}"
    return values[0]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def healthcheck_command() -> list[str]:
    arguments = only("HEALTHCHECK")
    return exec_form(arguments[arguments.index("CMD") + len("CMD") :].strip())


def test_the_dockerfile_is_multi_stage_slim_and_unprivileged():
    froms = [arguments for keyword, arguments in dockerfile_instructions() if keyword == "FROM"]
    assert len(froms) >= 2
    assert froms[-1].split()[0] == "python:3.11-slim"
    assert only("USER") not in ("root", "0")
    assert any(keyword == "COPY" and "--from=" in arguments for keyword, arguments in final_stage())


def test_the_image_runs_session_state_serve_and_checks_healthz():
    assert exec_form(only("ENTRYPOINT")) == ["session-state"]
    assert exec_form(only("CMD")) == ["serve"]
    assert "/healthz" in " ".join(healthcheck_command())
    assert only("EXPOSE") == image_env()["SESSION_STATE_PORT"]
    assert image_env()["SESSION_STATE_HOST"] == "0.0.0.0"


def test_compose_gates_the_api_on_a_healthy_database_and_a_finished_migration():
    services = compose()["services"]
    postgres, migrate, api = services["postgres"], services["migrate"], services["api"]
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    volume = postgres["volumes"][0].split(":")[0]
    assert volume in compose()["volumes"]
    assert migrate["command"] == ["migrate"]
    assert migrate["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert migrate["restart"] == "no"
    assert api["command"] == exec_form(only("CMD"))
    assert api["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "migrate": {"condition": "service_completed_successfully"},
    }
    assert migrate["build"] == api["build"] == "."
    assert migrate["image"] == api["image"]
    assert "/healthz" in " ".join(api["healthcheck"]["test"])


def test_compose_points_the_api_at_its_postgres_with_matching_credentials():
    services = compose()["services"]
    database = services["postgres"]["environment"]
    for name in ("migrate", "api"):
        url = httpx.URL(
            services[name]["environment"]["SESSION_STATE_DATABASE_URL"].replace(
                "postgresql+asyncpg", "postgresql"
            )
        )
        assert url.host == "postgres"
        assert url.username == database["POSTGRES_USER"]
        assert url.password == database["POSTGRES_PASSWORD"]
        assert url.path == f"/{database['POSTGRES_DB']}"


def test_the_api_is_published_on_loopback_and_scales_without_host_port_collisions():
    (port,) = compose()["services"]["api"]["ports"]
    address, host_port, container_port = port.rsplit(":", 2)
    # On the loopback unless SESSION_STATE_PUBLISH_ADDRESS says otherwise.
    assert address == "${SESSION_STATE_PUBLISH_ADDRESS:-127.0.0.1}"
    # No host port: every replica gets one of its own.
    assert host_port == ""
    assert container_port == image_env()["SESSION_STATE_PORT"]


@pytest.fixture(scope="module")
def installed_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project installed from a wheel, as the build stage does: only what
    the wheel carries (one package, session_state) is importable from there."""
    work = tmp_path_factory.mktemp("image")
    # What the Dockerfile copies, and nothing else (a checkout's own build/
    # folder, say, would leak stale packages into the wheel).
    source = work / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("app", "migrations"):
        shutil.copytree(
            ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", work, source],
        check=True,
    )
    wheel = next(work.glob("session_state-*.whl"))
    target = work / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", target, wheel],
        check=True,
    )
    return target


def _run_image(site: Path, workdir: Path, command: list[str], env: dict[str, str]):
    entrypoint = [str(site / "bin" / exec_form(only("ENTRYPOINT"))[0])]
    full_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SESSION_STATE_")},
        **image_env(),
        "PYTHONPATH": str(site),
        # The image's PATH leads to its interpreter first; here, to this one.
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        **env,
    }
    return entrypoint + command, full_env, workdir


def test_the_wheel_installs_one_package_named_session_state(installed_image):
    """A top-level `app` or `migrations` in site-packages would shadow, or be
    shadowed by, a user's own (`app` is the usual name of a FastAPI
    project's package)."""
    top_level = {
        path.name
        for path in installed_image.iterdir()
        if not path.name.endswith(".dist-info") and path.name not in {"bin", "__pycache__"}
    }
    assert top_level == {"session_state"}
    migrations = installed_image / "session_state" / "migrations"
    assert (migrations / "script.py.mako").is_file()
    assert sorted(path.name for path in (migrations / "versions").glob("0*.py"))[0].startswith(
        "0001"
    )


def test_the_images_commands_work_outside_a_container(installed_image, tmp_path, request):
    if not request.getfixturevalue("postgres_available"):
        pytest.skip("PostgreSQL not reachable")
    url = request.getfixturevalue("fresh_postgres_url")
    port = str(free_port())
    env = {"SESSION_STATE_DATABASE_URL": url, "SESSION_STATE_PORT": port}

    imported = subprocess.run(
        [
            sys.executable,
            "-c",
            "import session_state, session_state.migrations as m; "
            "print(session_state.__file__, m.__file__)",
        ],
        env={**os.environ, "PYTHONPATH": str(installed_image)},
        cwd=tmp_path,  # as the image's WORKDIR: not the checkout
        capture_output=True,
        text=True,
        check=True,
    )
    assert imported.stdout.count(str(installed_image)) == 2, "not running the wheel's code"

    migrate_command = compose()["services"]["migrate"]["command"]
    command, full_env, workdir = _run_image(installed_image, tmp_path, migrate_command, env)
    migrated = subprocess.run(command, env=full_env, cwd=workdir, capture_output=True, text=True)
    assert migrated.returncode == 0, migrated.stderr

    command, full_env, workdir = _run_image(installed_image, tmp_path, exec_form(only("CMD")), env)
    server = subprocess.Popen(command, env=full_env, cwd=workdir)
    try:
        deadline = time.monotonic() + 30
        healthy = None
        while time.monotonic() < deadline:
            healthy = subprocess.run(healthcheck_command(), env=full_env, capture_output=True)
            if healthy.returncode == 0:
                break
            time.sleep(0.3)
        assert healthy is not None and healthy.returncode == 0, healthy.stderr
        created = httpx.post(f"http://127.0.0.1:{port}/apps/a/users/u/sessions", json={})
        assert created.status_code == 201
    finally:
        server.terminate()
        assert server.wait(timeout=30) == 0


def test_the_image_serves_on_its_embedded_default_with_no_configuration(installed_image, tmp_path):
    port = str(free_port())
    command, full_env, workdir = _run_image(
        installed_image, tmp_path, exec_form(only("CMD")), {"SESSION_STATE_PORT": port}
    )
    server = subprocess.Popen(command, env=full_env, cwd=workdir)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if subprocess.run(healthcheck_command(), env=full_env).returncode == 0:
                break
            time.sleep(0.3)
        assert httpx.post(f"http://127.0.0.1:{port}/apps/a/users/u/sessions").status_code == 201
        assert (tmp_path / "session_state.db").exists()
    finally:
        server.terminate()
        server.wait(timeout=30)
