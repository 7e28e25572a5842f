"""A real highly available PostgreSQL cluster for tests: etcd and two Patroni
nodes (PostgreSQL 15, synchronous replication, pg_rewind), from Debian's
packages (`apt-get install patroni etcd-server postgresql-15`).

Patroni runs as the `postgres` user when the tests run as root (PostgreSQL
refuses root); the cluster's files live in a folder of its own under the
system's temporary folder (pytest's are private to root), removed by `stop()`.
Its timings are short so that a failover takes seconds: the leader key lives
TTL seconds, and a crashed primary's standby is promoted when it expires.
"""

import contextlib
import grp
import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

POSTGRESQL_BIN = Path("/usr/lib/postgresql/15/bin")
# A leader key lives TTL seconds: a crashed primary's standby is promoted
# that long after the crash at most. Patroni needs loop_wait + 2 x
# retry_timeout <= ttl.
TTL_SECONDS = 10
LOOP_WAIT_SECONDS = 1
RETRY_TIMEOUT_SECONDS = 3


def missing_tools() -> str | None:
    """What of the cluster's software is not installed here, or None."""
    needs = {
        "patroni": shutil.which("patroni"),
        "etcd": shutil.which("etcd"),
        f"PostgreSQL 15 ({POSTGRESQL_BIN})": (POSTGRESQL_BIN / "postgres").exists() or None,
    }
    missing = [name for name, found in needs.items() if not found]
    if not missing:
        return None
    return f"{', '.join(missing)} not installed (apt-get install patroni etcd-server postgresql-15)"


@dataclass
class Node:
    name: str
    postgres_port: int
    rest_port: int
    folder: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def config_file(self) -> Path:
        return self.folder / "patroni.yml"

    @property
    def log_file(self) -> Path:
        return self.folder / "patroni.log"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.postgres_port}"

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None


@dataclass
class HaCluster:
    """etcd and two Patroni nodes; `start()`, then faults, then `stop()`."""

    postgres_ports: tuple[int, int] = (5451, 5452)
    rest_ports: tuple[int, int] = (18661, 18662)
    etcd_ports: tuple[int, int] = (18680, 18681)
    root: Path = field(init=False)
    nodes: list[Node] = field(init=False)
    etcd: subprocess.Popen[bytes] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="session-state-ha-"))
        self.nodes = [
            Node(f"node{index + 1}", postgres_port, rest_port, self.root / f"node{index + 1}")
            for index, (postgres_port, rest_port) in enumerate(
                zip(self.postgres_ports, self.rest_ports, strict=True)
            )
        ]

    # -- addresses -------------------------------------------------------------

    def database_url(self, database: str, target_session_attrs: str = "read-write") -> str:
        """libpq's multi-host URL of the cluster's `database`, as the service reads it."""
        servers = ",".join(node.address for node in self.nodes)
        return (
            f"postgresql://postgres@{servers}/{database}"
            f"?target_session_attrs={target_session_attrs}"
        )

    def node(self, name: str) -> Node:
        return next(node for node in self.nodes if node.name == name)

    # -- life ------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> "HaCluster":
        self._refuse_busy_ports()
        self._own(self.root)
        self._start_etcd()
        for node in self.nodes:
            node.folder.mkdir()
            self._own(node.folder)
            node.config_file.write_text(yaml.safe_dump(self._node_config(node)))
        # The first bootstraps the cluster; the second then clones it.
        self._start_patroni(self.nodes[0])
        self.wait_until(lambda: self.leader() == self.nodes[0].name, timeout, "a leader")
        self._start_patroni(self.nodes[1])
        self.wait_healthy(timeout)
        return self

    def stop(self) -> None:
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                # Patroni stops its PostgreSQL on SIGTERM (a fast shutdown).
                node.process.terminate()
        for node in self.nodes:
            if node.process is not None:
                try:
                    node.process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    _kill_group(node.process.pid)
                node.process = None
            self._kill_postgres(node)
        if self.etcd is not None:
            self.etcd.terminate()
            try:
                self.etcd.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.etcd.kill()
                self.etcd.wait()
            self.etcd = None
        shutil.rmtree(self.root, ignore_errors=True)

    # -- state -----------------------------------------------------------------

    def members(self) -> list[dict[str, Any]]:
        """The members as Patroni's REST API reports them (from any live node)."""
        for node in self.nodes:
            if node.process is None or node.process.poll() is not None:
                continue
            try:
                response = httpx.get(f"{node.rest_url}/cluster", timeout=2)
            except httpx.HTTPError:
                continue
            if response.status_code == 200:
                members: list[dict[str, Any]] = response.json().get("members", [])
                return members
        return []

    def leader(self) -> str | None:
        """The node that is a running primary, or None."""
        for member in self.members():
            if member.get("role") == "leader" and member.get("state") == "running":
                return str(member["name"])
        return None

    def is_healthy(self) -> bool:
        """A running primary and a synchronous standby that follows it."""
        members = self.members()
        roles = {member.get("role") for member in members}
        states = {member.get("state") for member in members}
        return (
            len(members) == len(self.nodes)
            and roles == {"leader", "sync_standby"}
            and states <= {"running", "streaming"}
        )

    def wait_healthy(self, timeout: float = 120.0) -> None:
        self.wait_until(self.is_healthy, timeout, "a primary and its synchronous standby")

    def wait_until(self, condition: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.2)
        raise RuntimeError(
            f"the cluster did not reach {what} within {timeout} s: members "
            f"{json.dumps(self.members())}\n{self.log_tails()}"
        )

    def log_tails(self, lines: int = 30) -> str:
        tails = []
        for path in [self.root / "etcd.log", *(node.log_file for node in self.nodes)]:
            with contextlib.suppress(OSError):
                tails.append(
                    f"--- {path.name}\n" + "\n".join(path.read_text().splitlines()[-lines:])
                )
        return "\n".join(tails)

    # -- faults ----------------------------------------------------------------

    def switchover(self, timeout: float = 60.0) -> tuple[str, str]:
        """A graceful switchover to the synchronous standby, as an operator does
        it (Patroni's REST API, as `patronictl switchover --force`); returns
        (old primary, new primary) once the new one runs. The old primary
        follows as a standby on its own."""
        old = self._current_leader(timeout)
        new = next(node.name for node in self.nodes if node.name != old)
        response = httpx.post(
            f"{self.node(old).rest_url}/switchover",
            json={"leader": old, "candidate": new},
            timeout=timeout,
        )
        if response.status_code != 200:
            raise RuntimeError(f"switchover refused: {response.status_code} {response.text}")
        self.wait_until(lambda: self.leader() == new, timeout, f"{new} as the primary")
        return old, new

    def crash_primary(self) -> str:
        """kill -9 of the primary's Patroni and of its PostgreSQL (postmaster
        and every backend), as a machine that loses power; returns its name."""
        old = self._current_leader(30)
        node = self.node(old)
        assert node.process is not None
        _kill_group(node.process.pid)
        node.process.wait()
        node.process = None
        self._kill_postgres(node)
        return old

    def rejoin(self, name: str, timeout: float = 120.0) -> None:
        """Starts the crashed node's Patroni again: it rewinds its data
        (pg_rewind) if it diverged and follows the new primary as its
        synchronous standby."""
        self._start_patroni(self.node(name))
        self.wait_healthy(timeout)

    # -- helpers ---------------------------------------------------------------

    def _current_leader(self, timeout: float) -> str:
        self.wait_until(lambda: self.leader() is not None, timeout, "a leader")
        leader = self.leader()
        assert leader is not None
        return leader

    def _refuse_busy_ports(self) -> None:
        import socket

        for port in (*self.postgres_ports, *self.rest_ports, *self.etcd_ports):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    raise RuntimeError(f"port {port} is taken: the cluster needs it")

    def _start_etcd(self) -> None:
        client, peer = (f"http://127.0.0.1:{port}" for port in self.etcd_ports)
        log = (self.root / "etcd.log").open("ab")
        self.etcd = subprocess.Popen(
            [
                "etcd",
                "--name=etcd",
                f"--data-dir={self.root / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=etcd={peer}",
                "--initial-cluster-state=new",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **_as_postgres(),
        )
        self.wait_until(self._etcd_answers, 30, "etcd answering")

    def _etcd_answers(self) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{self.etcd_ports[0]}/health", timeout=1).is_success
        except httpx.HTTPError:
            return False

    def _start_patroni(self, node: Node) -> None:
        log = node.log_file.open("ab")
        node.process = subprocess.Popen(
            ["patroni", str(node.config_file)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=node.folder,
            env=_postgres_environment(),
            start_new_session=True,
            **_as_postgres(),
        )

    def _kill_postgres(self, node: Node) -> None:
        """kill -9 of the node's postmaster and its backends: Patroni starts
        the postmaster in a session of its own, which its backends share."""
        pid = node.postmaster_pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            _kill_group(os.getpgid(pid))

    def _node_config(self, node: Node) -> dict[str, Any]:
        return {
            "scope": f"session-state-{self.root.name}",
            "namespace": "/session-state-tests/",
            "name": node.name,
            "log": {"level": "INFO"},
            "restapi": {
                "listen": f"127.0.0.1:{node.rest_port}",
                "connect_address": f"127.0.0.1:{node.rest_port}",
            },
            "etcd3": {"hosts": [f"127.0.0.1:{self.etcd_ports[0]}"]},
            "bootstrap": {
                "dcs": {
                    "ttl": TTL_SECONDS,
                    "loop_wait": LOOP_WAIT_SECONDS,
                    "retry_timeout": RETRY_TIMEOUT_SECONDS,
                    "maximum_lag_on_failover": 1024 * 1024,
                    # A commit is acknowledged once the standby has it: the
                    # standby promoted after a crash holds every acknowledged write.
                    "synchronous_mode": True,
                    "postgresql": {
                        "use_pg_rewind": True,
                        "use_slots": True,
                        "parameters": {
                            "wal_level": "replica",
                            "hot_standby": "on",
                            "wal_log_hints": "on",
                            "synchronous_commit": "on",
                            "max_wal_senders": 10,
                            "max_replication_slots": 10,
                            "max_connections": 100,
                        },
                    },
                },
                "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}],
            },
            "postgresql": {
                "listen": node.address,
                "connect_address": node.address,
                "data_dir": str(node.data_dir),
                "bin_dir": str(POSTGRESQL_BIN),
                "pgpass": str(node.folder / "pgpass"),
                "authentication": {
                    "superuser": {"username": "postgres", "password": "postgres"},
                    "replication": {"username": "replicator", "password": "replicator"},
                },
                "pg_hba": [
                    "local all all trust",
                    "host replication replicator 127.0.0.1/32 trust",
                    "host all all 127.0.0.1/32 trust",
                ],
                "parameters": {"unix_socket_directories": str(node.folder)},
            },
        }

    @staticmethod
    def _own(path: Path) -> None:
        if os.geteuid() == 0:
            os.chown(path, pwd.getpwnam("postgres").pw_uid, grp.getgrnam("postgres").gr_gid)


def _as_postgres() -> dict[str, Any]:
    """Popen's arguments that run a child as the postgres user when we are root."""
    if os.geteuid() != 0:
        return {}
    return {"user": "postgres", "group": "postgres", "extra_groups": []}


def _postgres_environment() -> dict[str, str]:
    keep = {"PATH", "LANG", "LC_ALL", "TZ"}
    environment = {name: value for name, value in os.environ.items() if name in keep}
    if os.geteuid() == 0:
        environment["HOME"] = pwd.getpwnam("postgres").pw_dir
        environment["USER"] = "postgres"
    return environment


def _kill_group(process_group: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process_group, signal.SIGKILL)
