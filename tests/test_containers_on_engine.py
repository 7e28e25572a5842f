"""The image and the compose stack on a real Docker engine: the project's image
built from the Dockerfile as it is, docker-compose.yml brought up as it is,
sessions created, appended to and read through the published port, three API
replicas sharing one PostgreSQL, and /readyz answering 503 while PostgreSQL is
stopped and 200 once it is back. Then docker-compose.ha.yml (etcd, two Patroni
nodes from deploy/patroni, the API on both by a multi-host URL): a session
written and read through the published port, the Patroni primary's container
killed while a writer appends and retries the same event on a 503, appends
acknowledged again within 30 s with every acknowledged one stored once and in
order, and the old primary following again once started. Everything made here
is removed afterwards but the Patroni nodes' image (Debian's packages only),
which stays cached with the base images.

The engine and the base images come from `.ci/docker-engine.sh`: a dockerd of
its own, with stand-ins for python:3.11-slim and postgres:16 built from Debian
packages (no image registry is reachable where CI runs), cached in its data
root between runs. Marked `docker`: left out of the default run (and CI);
`pytest -m docker` runs it.
Under CI (CI=true) an engine that cannot be prepared is a failure, not a skip."""

import itertools
import json
import os
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import httpx
import pytest

ROOT = Path(__file__).parent.parent
ENGINE_SCRIPT = ROOT / ".ci" / "docker-engine.sh"
IMAGE = "session-state:local"  # the `image:` of docker-compose.yml's api and migrate
IN_CI = os.environ.get("CI", "").lower() in ("1", "true")

pytestmark = pytest.mark.docker


def unavailable(reason: str) -> NoReturn:
    if IN_CI:
        pytest.fail(f"Docker could not be prepared in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def run(command: list[str], env: dict[str, str], timeout: float) -> str:
    """Runs a command in the checkout; its output is in the failure message."""
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@dataclass
class Engine:
    env: dict[str, str]
    compose: list[str]
    timings: dict[str, float] = field(default_factory=dict)

    def docker(self, *arguments: str, timeout: float = 120) -> str:
        return run(["docker", *arguments], self.env, timeout)


def compose_command(env: dict[str, str]) -> list[str] | None:
    """Compose v2 (the docker plugin) when present, else v1 (`docker-compose`,
    Debian's package: it supports the compose file as it is)."""
    probe = subprocess.run(["docker", "compose", "version"], env=env, capture_output=True)
    if probe.returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


@pytest.fixture(scope="module")
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    if os.geteuid() != 0:
        unavailable("starting dockerd and running debootstrap need root")
    missing = [tool for tool in ("docker", "dockerd", "debootstrap") if not shutil.which(tool)]
    if missing:
        unavailable(f"not installed: {', '.join(missing)} (apt-get install docker.io debootstrap)")
    already_running = subprocess.run(["bash", ENGINE_SCRIPT, "status"]).returncode == 0
    started = time.monotonic()
    prepared = subprocess.run(
        ["bash", ENGINE_SCRIPT, "start"], capture_output=True, text=True, timeout=900
    )
    if prepared.returncode != 0:
        if not already_running:
            subprocess.run(["bash", ENGINE_SCRIPT, "stop"], timeout=120)
        unavailable(f"{ENGINE_SCRIPT.name} start failed:\n{prepared.stderr}")
    # Compose reads SESSION_STATE_* from its environment: only what is set here.
    env = {key: value for key, value in os.environ.items() if not key.startswith("SESSION_STATE_")}
    env |= {"DOCKER_HOST": prepared.stdout.strip(), "DOCKER_BUILDKIT": "0"}
    compose = compose_command(env)
    if compose is None:
        unavailable("no compose: neither `docker compose` nor `docker-compose`")
    prepared_engine = Engine(env, compose)
    prepared_engine.timings["engine and base images"] = time.monotonic() - started
    try:
        yield prepared_engine
    finally:
        if not already_running:
            subprocess.run(["bash", ENGINE_SCRIPT, "stop"], timeout=120)
        summary = ", ".join(
            f"{step} {seconds:.1f} s" for step, seconds in prepared_engine.timings.items()
        )
        # Printed past pytest's capture, so that CI's log keeps the timings.
        capture = request.config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():
            print(f"\ncontainers on a real engine: {summary}")


@dataclass
class Stack:
    engine: Engine
    project: str

    def compose(self, *arguments: str, timeout: float = 180) -> str:
        command = [*self.engine.compose, "--project-name", self.project, *arguments]
        return run(command, self.engine.env, timeout)

    def api_containers(self) -> list[dict]:
        ids = self.compose("ps", "-q", "api").split()
        return json.loads(self.engine.docker("inspect", *ids))

    def api_urls(self) -> list[str]:
        urls = []
        for container in self.api_containers():
            bindings = container["NetworkSettings"]["Ports"]["8000/tcp"]
            assert {binding["HostIp"] for binding in bindings} == {"127.0.0.1"}, bindings
            urls.append(f"http://127.0.0.1:{bindings[0]['HostPort']}")
        return urls

    def timed(self, step: str, started: float) -> None:
        self.engine.timings[step] = time.monotonic() - started


def wait_for(condition, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.5)


def status_of(url: str) -> int | None:
    try:
        return httpx.get(url, timeout=5).status_code
    except httpx.TransportError:
        return None


def all_ready(stack: Stack) -> bool:
    return all(status_of(f"{url}/readyz") == 200 for url in stack.api_urls())


PROJECT_PREFIX = "session-state-ci-"


def _remove_stale_stacks(engine: Engine) -> None:
    """Stacks of earlier runs killed before their teardown (a CI timeout, say)
    would keep running on the reused engine: take them down first."""
    labels = engine.docker(
        "ps", "--all", "--format", '{{.Label "com.docker.compose.project"}}'
    ).split()
    for project in sorted({label for label in labels if label.startswith(PROJECT_PREFIX)}):
        Stack(engine, project).compose("down", "--volumes", "--remove-orphans")


@pytest.fixture(scope="module")
def image(engine: Engine) -> Iterator[str]:
    """The project's image, built once for both compose files' stacks."""
    started = time.monotonic()
    try:
        # The build context is the checkout, as `docker compose build` sends it;
        # the host's network because this engine has no default bridge.
        engine.docker("build", "--quiet", "--network", "host", "-t", IMAGE, ".", timeout=600)
        engine.timings["image build"] = time.monotonic() - started
        yield IMAGE
    finally:
        # The project's image and its build stage; the base images stay cached.
        subprocess.run(["docker", "image", "rm", IMAGE], env=engine.env, capture_output=True)
        engine.docker("image", "prune", "--force")


@pytest.fixture(scope="module")
def stack(engine: Engine, image: str) -> Iterator[Stack]:
    """docker-compose.yml up under a project name of its own (its own network,
    volume and container names; the API on host ports the engine picks)."""
    _remove_stale_stacks(engine)
    stack = Stack(engine, f"{PROJECT_PREFIX}{uuid.uuid4().hex[:8]}")
    try:
        started = time.monotonic()
        stack.compose("up", "--detach", "--no-build")
        wait_for(lambda: all_ready(stack), "the API answers /readyz 200")
        stack.timed("compose up", started)
        yield stack
    finally:
        started = time.monotonic()
        stack.compose("down", "--volumes", "--remove-orphans")
        stack.timed("compose down", started)


def test_sessions_are_created_appended_and_read_through_the_published_port(stack: Stack):
    (url,) = stack.api_urls()
    base = f"{url}/apps/travel/users/ada/sessions"
    created = httpx.post(base, json={"sessionId": "trip-1", "state": {"stage": "new"}})
    assert created.status_code == 201, created.text
    appended = httpx.post(
        f"{base}/trip-1/events",
        headers={"If-Match": created.headers["ETag"]},
        json={
            "id": "e1",
            "author": "planner",
            "content": {"role": "model", "parts": [{"text": "Booked."}]},
            "actions": {"stateDelta": {"stage": "booked"}},
        },
    )
    assert appended.status_code == 201, appended.text
    read = httpx.get(f"{base}/trip-1").json()
    assert read["state"] == {"stage": "booked"}
    assert [event["id"] for event in read["events"]] == ["e1"]


def test_three_replicas_share_one_database_and_pass_their_healthchecks(stack: Stack):
    started = time.monotonic()
    stack.compose("up", "--detach", "--no-build", "--scale", "api=3")
    wait_for(lambda: len(stack.api_urls()) == 3 and all_ready(stack), "three ready replicas")
    first, second, third = stack.api_urls()
    assert len({first, second, third}) == 3

    base = "/apps/travel/users/grace/sessions"
    created = httpx.post(f"{first}{base}", json={"sessionId": "shared"})
    assert created.status_code == 201, created.text
    appended = httpx.post(
        f"{second}{base}/shared/events",
        headers={"If-Match": created.headers["ETag"]},
        json={"id": "e1", "author": "user", "actions": {"stateDelta": {"seen_by": "second"}}},
    )
    assert appended.status_code == 201, appended.text
    for url in (first, second, third):
        read = httpx.get(f"{url}{base}/shared")
        assert read.status_code == 200, read.text
        assert read.json()["state"] == {"seen_by": "second"}
        assert [event["id"] for event in read.json()["events"]] == ["e1"]

    # The compose healthcheck, run by the engine inside each container.
    wait_for(
        lambda: all(c["State"]["Health"]["Status"] == "healthy" for c in stack.api_containers()),
        "every replica's healthcheck passes",
    )
    stack.timed("scale to 3 and healthy", started)


def test_readyz_answers_503_while_postgresql_is_stopped_and_recovers(stack: Stack):
    started = time.monotonic()
    urls = stack.api_urls()
    stack.compose("stop", "postgres")
    for url in urls:
        assert status_of(f"{url}/readyz") == 503
        assert status_of(f"{url}/healthz") == 200, "liveness must not depend on the database"

    stack.compose("start", "postgres")
    wait_for(lambda: all_ready(stack), "every replica ready again after PostgreSQL restarts")
    for url in urls:
        read = httpx.get(f"{url}/apps/travel/users/grace/sessions/shared")
        assert read.status_code == 200, read.text
    stack.timed("postgres stop and recovery", started)


def test_reads_answer_503_while_postgresql_is_stopped(stack: Stack):
    (url, *_) = stack.api_urls()
    stack.compose("stop", "postgres")
    try:
        read = httpx.get(f"{url}/apps/travel/users/grace/sessions/shared")
        assert read.status_code == 503, read.text
        assert read.headers["content-type"].startswith("application/problem+json")
    finally:
        stack.compose("start", "postgres")
        wait_for(lambda: all_ready(stack), "every replica ready again after PostgreSQL restarts")


# -- docker-compose.ha.yml: etcd, two Patroni nodes and the API on both ---------

HA_COMPOSE_FILE = "docker-compose.ha.yml"
NODE_IMAGE = "session-state-patroni:local"  # the `image:` of its etcd and Patroni nodes
NODES = ("patroni1", "patroni2")
# Not PROJECT_PREFIX: the clean-up of stale stacks above reads docker-compose.yml.
HA_PROJECT_PREFIX = "session-state-ha-ci-"
FAILOVER_DEADLINE_SECONDS = 30
APPENDS_AFTER_FAILOVER = 20


class HaStack(Stack):
    def compose(self, *arguments: str, timeout: float = 180) -> str:
        return super().compose("--file", HA_COMPOSE_FILE, *arguments, timeout=timeout)

    def container(self, service: str) -> str:
        return self.compose("ps", "-q", service).strip()

    def members(self) -> dict[str, str]:
        """Patroni's members and their roles, asked of any running node."""
        for node in NODES:
            container = self.container(node)
            try:
                answer = self.engine.docker(
                    "exec",
                    container,
                    "python3",
                    "-c",
                    "import urllib.request; print(urllib.request.urlopen("
                    "'http://127.0.0.1:8008/cluster', timeout=2).read().decode())",
                    timeout=20,
                )
            except AssertionError:
                continue
            return {m["name"]: m["role"] for m in json.loads(answer)["members"]}
        return {}

    def leader(self) -> str | None:
        return next((name for name, role in self.members().items() if role == "leader"), None)


def _remove_stale_ha_stacks(engine: Engine) -> None:
    """HA stacks of earlier runs killed before their teardown."""
    labels = engine.docker(
        "ps", "--all", "--format", '{{.Label "com.docker.compose.project"}}'
    ).split()
    for project in sorted({label for label in labels if label.startswith(HA_PROJECT_PREFIX)}):
        HaStack(engine, project).compose("down", "--volumes", "--remove-orphans")


@pytest.fixture(scope="module")
def ha_stack(engine: Engine, image: str) -> Iterator[HaStack]:
    """docker-compose.ha.yml up under a project name of its own. Its nodes'
    image holds only Debian's packages and deploy/patroni: it stays cached on
    the engine, as the base images do."""
    _remove_stale_ha_stacks(engine)
    stack = HaStack(engine, f"{HA_PROJECT_PREFIX}{uuid.uuid4().hex[:8]}")
    try:
        started = time.monotonic()
        engine.docker(
            "build", "--quiet", "--network", "host", "-t", NODE_IMAGE, "deploy/patroni", timeout=600
        )
        stack.timed("HA: nodes' image build", started)
        started = time.monotonic()
        stack.compose("up", "--detach", "--no-build", timeout=300)
        wait_for(lambda: all_ready(stack), "the API answers /readyz 200")
        stack.timed("HA: compose up", started)
        yield stack
    finally:
        started = time.monotonic()
        stack.compose("down", "--volumes", "--remove-orphans")
        stack.timed("HA: compose down", started)


@dataclass
class Writer:
    """Appends numbered events to one session, retrying the same event (same
    id, same body) on a 503 or a transport error until it is acknowledged."""

    path: str
    acknowledged: list[tuple[str, float]] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with httpx.Client(timeout=10) as http:
            number = 0
            while not self.stop.is_set():
                number += 1
                event_id = f"e{number:05d}"
                event = {"id": event_id, "author": "user", "actions": {"stateDelta": {"n": number}}}
                while not self.stop.is_set():
                    try:
                        response = http.post(f"{self.path}/events", json=event)
                    except httpx.TransportError:
                        time.sleep(0.1)
                        continue
                    if response.status_code in (200, 201):
                        self.acknowledged.append((event_id, time.monotonic()))
                        break
                    if response.status_code != 503 or "Retry-After" not in response.headers:
                        answer = f"{response.status_code} {response.text}"
                        self.unexpected.append(f"{event_id}: {answer}")
                    time.sleep(0.1)

    def acknowledged_since(self, moment: float) -> list[float]:
        return [when for _, when in self.acknowledged if when > moment]


def test_appends_survive_a_kill_of_the_patroni_primary_container(ha_stack: HaStack):
    (url,) = ha_stack.api_urls()
    base = f"{url}/apps/travel/users/ada/sessions"
    created = httpx.post(base, json={"sessionId": "ha", "state": {"stage": "new"}})
    assert created.status_code == 201, created.text
    read = httpx.get(f"{base}/ha")
    assert read.status_code == 200 and read.json()["state"] == {"stage": "new"}, read.text
    # Healthy nodes and a ready API come a moment before Patroni names the standby synchronous.
    wait_for(
        lambda: sorted(ha_stack.members().values()) == ["leader", "sync_standby"],
        "a primary and its synchronous standby",
    )
    old_leader = ha_stack.leader()
    assert old_leader is not None

    writer = Writer(f"{base}/ha")
    thread = threading.Thread(target=writer.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(writer.acknowledged) >= 20, "appends acknowledged before the kill")
        started = time.monotonic()
        # As a machine that loses power and stays down: without its restart
        # policy the engine would start it again at once, before the leader key
        # expired, and it would take its lock back (no failover to test).
        container = ha_stack.container(old_leader)
        ha_stack.engine.docker("update", "--restart", "no", container)
        ha_stack.engine.docker("kill", container)
        # docker kill returns once the container is dead: later acknowledgements
        # come from the promoted standby.
        killed_at = time.monotonic()
        wait_for(
            lambda: len(writer.acknowledged_since(killed_at)) >= APPENDS_AFTER_FAILOVER,
            "appends acknowledged again after the primary's container was killed",
            timeout=FAILOVER_DEADLINE_SECONDS + 30,
        )
    finally:
        writer.stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    again_after = writer.acknowledged_since(killed_at)[0] - killed_at
    times = [when for _, when in writer.acknowledged]
    gap = max(later - earlier for earlier, later in itertools.pairwise(times))
    ha_stack.engine.timings["HA: appends acknowledged again after the kill"] = again_after
    ha_stack.engine.timings["HA: longest gap between acknowledged appends"] = gap
    assert again_after <= FAILOVER_DEADLINE_SECONDS
    assert writer.unexpected == []

    assert ha_stack.leader() == next(node for node in NODES if node != old_leader)
    stored = httpx.get(f"{base}/ha")
    assert stored.status_code == 200, stored.text
    stored_ids = [event["id"] for event in stored.json()["events"]]
    acknowledged = [event_id for event_id, _ in writer.acknowledged]
    # Nothing acknowledged lost or stored twice; at most the last event, whose
    # answer the stopped writer did not wait for, stored unacknowledged.
    assert stored_ids[: len(acknowledged)] == acknowledged
    assert len(stored_ids) - len(acknowledged) <= 1, stored_ids[len(acknowledged) :]
    assert stored.json()["state"] == {"stage": "new", "n": len(stored_ids)}
    ha_stack.timed("HA: kill of the primary and failover", started)

    # The old primary, started again, follows the new one (pg_rewind if its
    # WAL diverged) as its synchronous standby; the API reads through.
    started = time.monotonic()
    ha_stack.compose("start", old_leader)
    wait_for(
        lambda: ha_stack.members().get(old_leader) == "sync_standby",
        "the old primary following as the synchronous standby",
    )
    assert httpx.get(f"{base}/ha").json()["events"][-1]["id"] == stored_ids[-1]
    ha_stack.timed("HA: old primary rejoins", started)
