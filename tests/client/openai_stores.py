"""Where the OpenAI Agents SDK session tests keep their sessions: the SDK's
SQLiteSession on a file (the reference) or SessionStateSession on a started
server; and worker processes (tests.client.openai_worker) on the same store."""

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from agents import SessionSettings, SQLiteSession
from agents.memory import Session

from session_state_client.openai_agents import SessionStateSession
from tests.client.openai_worker import USER_ID
from tests.conftest import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
WORKER = "tests.client.openai_worker"


class Stores:
    """Sessions by id on one store: the reference SQLite file, or a server."""

    def __init__(self, kind: str, tmp_path: Path, server: ServerProcess | None) -> None:
        self.kind = kind
        self.app_name = f"app-{uuid.uuid4().hex[:10]}"
        self.db_path = tmp_path / "agents.db"
        self.server = server
        self.opened: list[Session] = []

    @property
    def address(self) -> str:
        """How a worker process opens the same store (tests.client.openai_worker)."""
        if self.server is None:
            return f"sqlite:{self.db_path}"
        return f"server:{self.server.base_url}:{self.app_name}"

    def open(
        self, session_id: str, settings: SessionSettings | dict[str, Any] | None = None
    ) -> Session:
        session: Session
        if self.server is None:
            session = SQLiteSession(session_id, self.db_path, session_settings=settings)
        else:
            session = SessionStateSession(
                session_id,
                app_name=self.app_name,
                user_id=USER_ID,
                session_settings=settings,
                base_url=self.server.base_url,
            )
        self.opened.append(session)
        return session

    async def close(self) -> None:
        for session in self.opened:
            if isinstance(session, SessionStateSession):
                await session.close()
            elif isinstance(session, SQLiteSession):
                session.close()


def run_worker(stores: Stores, session_id: str, *arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.client.openai_worker",
            stores.address,
            session_id,
            *arguments,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> Any:
    out, _ = process.communicate(timeout=120)
    assert process.returncode == 0
    return json.loads(out) if out.strip() else None
