"""The Dockerfile and docker-compose.yml, checked without a Docker engine: their
wiring. The image's own commands are run outside a container, on the
project installed from its wheel, in tests/test_installed_packages.py."""

import json
import shlex
from pathlib import Path

import httpx
import yaml

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
