"""Erasing a user, or a whole app: everything of it goes, nothing of anyone
else's does; twice is the same as once; appends racing it end as 201 or 404,
never 500, and leave nothing behind once the erasure has answered."""

import asyncio
import logging

import httpx
import pytest

APP = "/apps/travel"


def _user(user: str, app: str = APP) -> str:
    return f"{app}/users/{user}"


async def _seed(
    client: httpx.AsyncClient, user: str, sessions: int = 2, events: int = 3, app: str = APP
) -> None:
    for number in range(sessions):
        session_id = f"{user}-{number}"
        created = await client.post(
            f"{_user(user, app)}/sessions",
            json={"sessionId": session_id, "state": {"user:name": user, "k": number}},
        )
        assert created.status_code == 201, created.text
        for index in range(events):
            event = {
                "author": "planner",
                "content": {"role": "model", "parts": [{"text": f"booked flight {index}"}]},
                "actions": {"stateDelta": {"step": index, f"app:seen_{user}": index}},
            }
            path = f"{_user(user, app)}/sessions/{session_id}/events"
            assert (await client.post(path, json=event)).status_code == 201
        ingested = await client.post(f"{_user(user, app)}/memory", json={"sessionId": session_id})
        assert ingested.status_code == 200, ingested.text


async def _what_is_left(client: httpx.AsyncClient, user: str, app: str = APP) -> dict:
    sessions = (await client.get(f"{_user(user, app)}/sessions")).json()["sessions"]
    state = (await client.get(f"{_user(user, app)}/state")).json()["state"]
    memories = (await client.get(f"{_user(user, app)}/memory", params={"query": "flight"})).json()
    return {"sessions": sessions, "state": state, "memories": memories["memories"]}


async def test_erasing_a_user_removes_everything_of_theirs_and_nothing_else(client, caplog):
    await _seed(client, "ada")
    await _seed(client, "bob")
    caplog.set_level(logging.INFO, logger="session_state")

    erased = await client.delete(_user("ada"))

    assert erased.status_code == 204
    assert await _what_is_left(client, "ada") == {"sessions": [], "state": {}, "memories": []}
    assert (await client.get(f"{_user('ada')}/sessions/ada-0")).status_code == 404
    bob = await _what_is_left(client, "bob")
    assert len(bob["sessions"]) == 2 and bob["state"] == {"name": "bob"} and bob["memories"]
    # App state is the app's, not the user's: an erased user's app: keys stay.
    assert (await client.get(f"{APP}/state")).json()["state"] == {"seen_ada": 2, "seen_bob": 2}
    # The log says who and how much, never what.
    [record] = [r for r in caplog.records if r.getMessage() == "erased"]
    assert (record.app, record.user) == ("travel", "ada")
    assert (record.sessions, record.events, record.state_keys) == (2, 6, 1)
    assert record.memories == 6
    assert "flight" not in caplog.text


async def test_erasing_twice_is_the_same_as_once(client):
    await _seed(client, "ada", sessions=1)
    assert (await client.delete(_user("ada"))).status_code == 204
    assert (await client.delete(_user("ada"))).status_code == 204
    assert (await client.delete(_user("nobody"))).status_code == 204
    assert (await _what_is_left(client, "ada"))["sessions"] == []


async def test_a_user_with_many_sessions_is_erased_in_batches(client, app_under_test):
    app_under_test.state.erasure.batch_events = 4  # several transactions
    await _seed(client, "ada", sessions=7, events=3)
    assert (await client.delete(_user("ada"))).status_code == 204
    assert await _what_is_left(client, "ada") == {"sessions": [], "state": {}, "memories": []}


async def test_erasing_an_app_needs_its_name_again(client):
    await _seed(client, "ada")
    await _seed(client, "eve", app="/apps/other")
    for query in ({}, {"confirm": "other"}, {"confirm": "travel "}):
        refused = await client.delete(APP, params=query)
        assert refused.status_code == 400 and refused.json()["code"] == "bad_request"
    assert len((await _what_is_left(client, "ada"))["sessions"]) == 2

    assert (await client.delete(APP, params={"confirm": "travel"})).status_code == 204

    assert await _what_is_left(client, "ada") == {"sessions": [], "state": {}, "memories": []}
    assert (await client.get(f"{APP}/state")).json()["state"] == {}
    assert len((await _what_is_left(client, "eve", app="/apps/other"))["sessions"]) == 2
    assert (await client.get("/apps/other/state")).json()["state"] == {"seen_eve": 2}


async def test_appends_racing_an_erasure_get_201_or_404_and_leave_nothing(client, app_under_test):
    app_under_test.state.erasure.batch_events = 5
    await _seed(client, "ada", sessions=6, events=4)
    statuses: list[int] = []
    erasing = asyncio.Event()

    async def append_until_gone(session_id: str) -> None:
        path = f"{_user('ada')}/sessions/{session_id}/events"
        for index in range(60):
            if index == 3:
                erasing.set()
            event = {"author": "a", "actions": {"stateDelta": {"user:n": index, "n": index}}}
            response = await client.post(path, json=event)
            statuses.append(response.status_code)
            if response.status_code == 404:
                return

    async def erase() -> int:
        await erasing.wait()
        return (await client.delete(_user("ada"))).status_code

    writers = [append_until_gone(f"ada-{number}") for number in range(6)]
    *_, erased = await asyncio.gather(*writers, erase())

    assert erased == 204
    assert set(statuses) <= {201, 404}, statuses
    assert 404 in statuses
    # Appends that lost the race wrote nothing: not even their user: keys.
    assert await _what_is_left(client, "ada") == {"sessions": [], "state": {}, "memories": []}


@pytest.fixture
def app_under_test(client):
    return client._transport.app  # the ASGI app the client fixture drives


@pytest.mark.parametrize(
    "query",
    [
        "confirm=",
        "confirm=TRAVEL",
        "confirm=travel%00",
        "confirm=%ED%A0%80",
        "confirm=trav%C3%A9l",
        "confirm=" + "travel" * 2000,
        "confirm[]=travel",
        "Confirm=travel",
    ],
)
async def test_a_wrong_confirmation_erases_nothing(client, query):
    await _seed(client, "ada", sessions=1, events=1)
    refused = await client.delete(f"{APP}?{query}")
    assert refused.status_code == 400, refused.text
    assert len((await _what_is_left(client, "ada"))["sessions"]) == 1
