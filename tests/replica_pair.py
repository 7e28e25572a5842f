"""A PostgreSQL 15 primary and its streaming replica for tests, made with
initdb and `pg_basebackup -R` in a folder of their own (the shared test
cluster allows no replication connections, and a base backup of it would copy
every test database).

Run as the `postgres` user when the tests run as root (PostgreSQL refuses
root), in a folder under the system's temporary folder (pytest's are private
to root); `stop()` removes it. About 2 s to start here.
"""

import contextlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.ha_cluster import POSTGRESQL_BIN, _as_postgres, _postgres_environment

DATABASE = "session_state_replicas"


def missing_tools() -> str | None:
    needed = ("initdb", "pg_ctl", "pg_basebackup")
    if all((POSTGRESQL_BIN / tool).exists() for tool in needed):
        return None
    return f"PostgreSQL 15 is not installed in {POSTGRESQL_BIN} (apt-get install postgresql-15)"


@dataclass
class ReplicaPair:
    primary_port: int
    replica_port: int
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ss-replicas-")))

    @property
    def primary_dir(self) -> Path:
        return self.folder / "primary"

    @property
    def replica_dir(self) -> Path:
        return self.folder / "replica"

    def url(self, port: int, database: str = DATABASE) -> str:
        return f"postgresql://postgres@127.0.0.1:{port}/{database}"

    @property
    def primary_url(self) -> str:
        return self.url(self.primary_port)

    @property
    def replica_url(self) -> str:
        return self.url(self.replica_port)

    def start(self) -> "ReplicaPair":
        self._own(self.folder)
        self._run(POSTGRESQL_BIN / "initdb", "-D", self.primary_dir, "-A", "trust", "-N")
        self._start(self.primary_dir, self.primary_port)
        self._run(POSTGRESQL_BIN / "createdb", "-h", "127.0.0.1", "-p", self.primary_port, DATABASE)
        self._run(
            POSTGRESQL_BIN / "pg_basebackup",
            "-h", "127.0.0.1", "-p", self.primary_port, "-U", "postgres",
            "-D", self.replica_dir, "-R", "-X", "stream", "-c", "fast",
        )  # fmt: skip
        self.start_replica()
        return self

    def start_replica(self) -> None:
        self._start(self.replica_dir, self.replica_port)

    def stop_replica(self) -> None:
        self._run(POSTGRESQL_BIN / "pg_ctl", "-D", self.replica_dir, "-m", "immediate", "stop")

    def stop(self) -> None:
        for data_dir in (self.replica_dir, self.primary_dir):
            if (data_dir / "postmaster.pid").exists():
                with contextlib.suppress(subprocess.CalledProcessError):
                    self._run(POSTGRESQL_BIN / "pg_ctl", "-D", data_dir, "-m", "immediate", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)

    def log_tails(self, lines: int = 20) -> str:
        tails = []
        for name in ("primary", "replica"):
            log = self.folder / f"{name}.log"
            if log.exists():
                text = log.read_text(errors="replace").splitlines()[-lines:]
                tails.append(f"--- {name} ---\n" + "\n".join(text))
        return "\n".join(tails)

    def _start(self, data_dir: Path, port: int) -> None:
        options = (
            f"-c port={port} -c listen_addresses=127.0.0.1 "
            f"-c unix_socket_directories={self.folder} -c fsync=off"
        )
        log = self.folder / f"{data_dir.name}.log"
        self._run(
            POSTGRESQL_BIN / "pg_ctl", "-D", data_dir, "-l", log, "-o", options, "-w", "start"
        )

    def _run(self, *command: object) -> None:
        subprocess.run(
            [str(part) for part in command],
            check=True,
            capture_output=True,
            cwd=self.folder,
            env=_postgres_environment(),
            **_as_postgres(),
        )

    @staticmethod
    def _own(path: Path) -> None:
        if os.geteuid() == 0:
            shutil.chown(path, "postgres", "postgres")
