"""Group commit: appends that arrive together are sent to PostgreSQL in one
statement (app/db/append_batches.py), and each request still gets its own
answer: one stale, conflicting, oversized or misdirected append never fails
or changes its neighbours. On SQLite, where each append goes by itself, the
same requests get the same answers."""

import asyncio

from app.config import Settings
from tests.conftest import asgi_client
from tests.test_observability import _metric

APP = "batches"
USER = "u"
LIMIT = 2048
BIG = "x" * 3000


def path(session_id: str) -> str:
    return f"/apps/{APP}/users/{USER}/sessions/{session_id}"


async def test_appends_sent_together_each_get_their_own_answer(database_url):
    settings = Settings(database_url=database_url, max_state_bytes=LIMIT)
    async with asgi_client(settings) as http:
        names = [f"s{index}" for index in range(8)] + [
            "retried",
            "conflicting",
            "stale",
            "too-big",
            "app-too-big",
        ]
        revisions = {}
        for name in names:
            created = await http.post(
                f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": name}
            )
            revisions[name] = created.headers["ETag"]
        stored = {"id": "kept", "author": "agent", "timestamp": 1.0}
        for name in ("retried", "conflicting"):
            assert (await http.post(f"{path(name)}/events", json=stored)).status_code == 201
        moved = await http.post(f"{path('stale')}/events", json={"author": "agent"})
        assert moved.status_code == 201
        before = (await http.get("/metrics")).text

        def good(index: int) -> dict[str, object]:
            return {
                "author": "agent",
                "actions": {
                    "stateDelta": {
                        "mine": index,
                        f"user:of_s{index}": index,
                        f"app:of_s{index}": index,
                        "app:shared": index,
                    }
                },
            }

        requests = [
            http.post(f"{path(f's{index}')}/events", json=good(index)) for index in range(8)
        ]
        requests += [
            http.post(f"{path('retried')}/events", json=stored),
            http.post(f"{path('conflicting')}/events", json={**stored, "author": "other"}),
            http.post(
                f"{path('stale')}/events",
                json={"author": "agent", "actions": {"stateDelta": {"app:stale": 1}}},
                headers={"If-Match": revisions["stale"]},
            ),
            http.post(f"{path('missing')}/events", json=good(0)),
            http.post(
                f"{path('too-big')}/events",
                json={"author": "agent", "actions": {"stateDelta": {"big": BIG, "app:x": 1}}},
            ),
            http.post(
                f"{path('app-too-big')}/events",
                json={"author": "agent", "actions": {"stateDelta": {"app:big": BIG, "y": 1}}},
            ),
        ]
        responses = await asyncio.gather(*requests)
        after = (await http.get("/metrics")).text

        assert [response.status_code for response in responses] == [201] * 8 + [
            200,
            409,
            412,
            404,
            422,
            422,
        ]
        assert responses[8].json() == stored
        assert [responses[index].json()["code"] for index in (9, 10, 11, 12, 13)] == [
            "event_id_conflict",
            "stale_session",
            "session_not_found",
            "state_too_large",
            "state_too_large",
        ]
        for index in range(8):
            session = (await http.get(path(f"s{index}"))).json()
            assert [event["actions"]["stateDelta"]["mine"] for event in session["events"]] == [
                index
            ]
            assert session["state"]["mine"] == index
            assert session["state"][f"user:of_s{index}"] == index
            assert responses[index].headers["ETag"] == '"1"'
        # (Keys without their app: prefix.)
        app_state = (await http.get(f"/apps/{APP}/state")).json()["state"]
        # The shared key holds one of the values written; none of the refused
        # appends wrote anything.
        assert app_state.pop("shared") in range(8)
        assert app_state == {f"of_s{index}": index for index in range(8)}
        for name, events in (("retried", 1), ("conflicting", 1), ("stale", 1), ("too-big", 0)):
            session = (await http.get(path(name))).json()
            assert len(session["events"]) == events, name
            assert "big" not in session["state"]

    if database_url.startswith("postgresql"):
        # At least one statement carried more than one append.
        batches = _metric(after, "session_state_append_batch_size_count") - _metric(
            before, "session_state_append_batch_size_count"
        )
        appends = _metric(after, "session_state_append_batch_size_sum") - _metric(
            before, "session_state_append_batch_size_sum"
        )
        assert appends == len(requests)
        assert batches < appends


async def test_a_sessions_appends_sent_together_are_all_stored(database_url):
    """Appends to one session never share a statement (each goes in a later
    batch), so none is lost, and the state is that of the last one stored."""
    async with asgi_client(Settings(database_url=database_url)) as http:
        await http.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": "one"})
        for other in range(4):
            await http.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": f"o{other}"})
        requests = []
        for step in range(30):
            event = {"id": f"e{step}", "author": "agent", "actions": {"stateDelta": {"n": step}}}
            requests.append(http.post(f"{path('one')}/events", json=event))
            requests.append(
                http.post(
                    f"{path(f'o{step % 4}')}/events", json={"author": "agent", "id": f"x{step}"}
                )
            )
        statuses = [response.status_code for response in await asyncio.gather(*requests)]
        assert statuses == [201] * 60
        session = (await http.get(path("one"))).json()
        assert sorted(event["id"] for event in session["events"]) == sorted(
            f"e{step}" for step in range(30)
        )
        assert session["state"]["n"] == session["events"][-1]["actions"]["stateDelta"]["n"]
