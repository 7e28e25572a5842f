"""A second agent process for the OpenAI Agents SDK session tests: opens the
same session (the SDK's SQLiteSession on a file, or SessionStateSession on a
server) and adds, pops or reads items, printing what it got as JSON.

    python -m tests.client.openai_worker <store> <session_id> add <writer> <batches>
    python -m tests.client.openai_worker <store> <session_id> pop
    python -m tests.client.openai_worker <store> <session_id> read

<store> is "sqlite:<path>" or "server:<base_url>:<app_name>".
"""

import asyncio
import json
import sys
from typing import Any

from agents import SQLiteSession
from agents.memory import Session

from session_state_client.openai_agents import SessionStateSession

USER_ID = "agents"


def open_session(store: str, session_id: str) -> Session:
    kind, _, where = store.partition(":")
    if kind == "sqlite":
        return SQLiteSession(session_id, where)
    base_url, _, app_name = where.rpartition(":")
    return SessionStateSession(session_id, app_name=app_name, user_id=USER_ID, base_url=base_url)


async def close(session: Session) -> None:
    if isinstance(session, SessionStateSession):
        await session.close()
    elif isinstance(session, SQLiteSession):
        session.close()


def item(writer: str, batch: int, part: str) -> dict[str, Any]:
    return {"role": "user", "content": f"{writer}-{batch}-{part}"}


async def main(store: str, session_id: str, command: str, *arguments: str) -> None:
    session = open_session(store, session_id)
    try:
        if command == "add":
            writer, batches = arguments[0], int(arguments[1])
            for batch in range(batches):
                await session.add_items([item(writer, batch, "a"), item(writer, batch, "b")])
        elif command == "pop":
            popped = []
            while (found := await session.pop_item()) is not None:
                popped.append(found)
            print(json.dumps(popped))
        elif command == "read":
            print(json.dumps(await session.get_items()))
    finally:
        await close(session)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
