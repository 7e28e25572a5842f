"""Rewinding a session over HTTP (POST .../rewind): the server appends ADK's
rewind event, whose state delta reverts the session's own keys to what the
events before the invocation set, on the revision it read the history at;
app: and user: state and the events after the rewind point stay. Parity
with ADK's own client-side rewind is tests/client/test_adk_rewind.py's."""

import asyncio
from typing import Any

import httpx
import pytest

from session_state.main import create_app
from session_state.sessions import invocations, rewind

ADA = "/apps/travel/users/ada"


async def _session(client: httpx.AsyncClient, session_id: str, state: dict[str, Any]) -> None:
    created = await client.post(f"{ADA}/sessions", json={"sessionId": session_id, "state": state})
    assert created.status_code == 201


async def _append(
    client: httpx.AsyncClient, session_id: str, event: dict[str, Any]
) -> httpx.Response:
    appended = await client.post(f"{ADA}/sessions/{session_id}/events", json=event)
    assert appended.status_code == 201, appended.text
    return appended


def _turn(index: int, invocation: str, delta: dict[str, Any] | None) -> dict[str, Any]:
    event: dict[str, Any] = {"id": f"e{index}", "author": "bot", "invocationId": invocation}
    if delta is not None:
        event["actions"] = {"stateDelta": delta}
    return event


# Three invocations; the second sets, overwrites and deletes keys of every scope.
HISTORY = [
    ("inv-1", {"topic": "tea", "user:visits": 1, "app:runs": 1}),
    ("inv-1", None),
    ("inv-2", {"topic": "coffee", "size": "large", "user:visits": 2, "temp:x": 1}),
    ("inv-2", {"milk": True}),
    ("inv-3", {"size": None, "app:runs": 2}),
]


async def _history(client: httpx.AsyncClient, session_id: str = "s") -> None:
    await _session(client, session_id, {"lang": "fr", "user:name": "Ada"})
    for index, (invocation, delta) in enumerate(HISTORY):
        await _append(client, session_id, _turn(index, invocation, delta))


async def test_a_rewind_reverts_the_session_keys_to_before_the_invocation(client):
    await _history(client)
    answer = await client.post(f"{ADA}/sessions/s/rewind", json={"beforeInvocationId": "inv-2"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    # As ADK (2.15) computes it: the keys the events before inv-2 set get their
    # values back, the keys only the undone events wrote are set to None, and
    # the creation state's key no undone event wrote (lang) stays.
    marker = body["rewindEvent"]
    assert marker["author"] == "user"
    assert marker["invocationId"].startswith("e-")
    assert marker["actions"] == {
        "stateDelta": {"topic": "tea", "milk": None, "size": None},
        "artifactDelta": {},
        "rewindBeforeInvocationId": "inv-2",
    }
    # Shared scopes are left alone.
    assert body["state"] == {
        "topic": "tea",
        "lang": "fr",
        "milk": None,
        "size": None,
        "user:visits": 2,
        "user:name": "Ada",
        "app:runs": 2,
    }
    assert "events" not in body
    assert answer.headers["ETag"] == '"6"'
    # The rewound events stay in the history, the marker after them.
    stored = (await client.get(f"{ADA}/sessions/s")).json()
    assert [event["id"] for event in stored["events"]] == [
        "e0",
        "e1",
        "e2",
        "e3",
        "e4",
        marker["id"],
    ]
    assert stored["events"][-1] == marker


async def test_a_rewind_before_the_first_invocation_clears_the_keys_its_events_wrote(client):
    await _history(client)
    answer = await client.post(f"{ADA}/sessions/s/rewind", json={"beforeInvocationId": "inv-1"})
    assert answer.status_code == 200
    assert answer.json()["rewindEvent"]["actions"]["stateDelta"] == {
        "topic": None,
        "milk": None,
        "size": None,
    }


async def test_a_creation_key_an_undone_event_overwrote_is_cleared(client):
    # Its first value is in no event, so ADK's rewind cannot restore it; a
    # creation key no undone event wrote stays.
    await _session(client, "c", {"lang": "fr", "tone": "warm"})
    await _append(client, "c", _turn(0, "inv-1", {"lang": "de"}))
    answer = await client.post(f"{ADA}/sessions/c/rewind", json={"beforeInvocationId": "inv-1"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["rewindEvent"]["actions"]["stateDelta"] == {"lang": None}
    assert answer.json()["state"] == {"lang": None, "tone": "warm"}


async def test_events_stored_with_field_names_are_read_as_adk_reads_them(client):
    await _session(client, "snake", {})
    await _append(
        client,
        "snake",
        {"id": "a", "author": "bot", "invocation_id": "one", "actions": {"state_delta": {"k": 1}}},
    )
    await _append(
        client,
        "snake",
        {"id": "b", "author": "bot", "invocation_id": "two", "actions": {"state_delta": {"k": 2}}},
    )
    answer = await client.post(f"{ADA}/sessions/snake/rewind", json={"before_invocation_id": "two"})
    assert answer.status_code == 200
    assert answer.json()["state"] == {"k": 1}


async def test_an_unknown_invocation_is_404_and_writes_nothing(client):
    await _history(client)
    answer = await client.post(f"{ADA}/sessions/s/rewind", json={"beforeInvocationId": "nope"})
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == "invocation_not_found"
    assert (await client.get(f"{ADA}/sessions/s")).headers["ETag"] == '"5"'


async def test_a_missing_session_is_404_session_not_found(client):
    answer = await client.post(f"{ADA}/sessions/none/rewind", json={"beforeInvocationId": "x"})
    assert answer.status_code == 404
    assert answer.json()["code"] == "session_not_found"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"beforeInvocationId": ""},
        {"beforeInvocationId": 3},
        {"beforeInvocationId": "a", "x": 1},
    ],
)
async def test_a_bad_body_is_422(client, body):
    await _history(client)
    answer = await client.post(f"{ADA}/sessions/s/rewind", json=body)
    assert answer.status_code == 422
    assert answer.json()["code"] == "validation_error"


async def test_if_match_makes_the_rewind_conditional(client):
    await _history(client)
    stale = await client.post(
        f"{ADA}/sessions/s/rewind",
        json={"beforeInvocationId": "inv-2"},
        headers={"If-Match": '"4"'},
    )
    assert stale.status_code == 412
    assert stale.json()["code"] == "stale_session"
    current = await client.post(
        f"{ADA}/sessions/s/rewind",
        json={"beforeInvocationId": "inv-2"},
        headers={"If-Match": '"5"'},
    )
    assert current.status_code == 200
    assert current.headers["ETag"] == '"6"'


async def test_a_second_rewind_to_the_same_point_changes_nothing_more(client):
    await _history(client)
    first = await client.post(f"{ADA}/sessions/s/rewind", json={"beforeInvocationId": "inv-3"})
    second = await client.post(f"{ADA}/sessions/s/rewind", json={"beforeInvocationId": "inv-3"})
    assert second.json()["state"] == first.json()["state"]
    assert first.json()["rewindEvent"]["actions"]["stateDelta"] == {"size": "large"}
    assert second.json()["rewindEvent"]["actions"]["stateDelta"] == {}


class _AppendDuringRead:
    """The store's history read, with a real append made through the API the
    first time the rewind reads: a writer that comes in between the rewind's
    read and its append."""

    def __init__(self, client: httpx.AsyncClient, store: Any) -> None:
        self.client = client
        self.store = store
        self.read = store.read_events
        self.appended = 0

    async def __call__(self, *arguments: Any) -> Any:
        found = await self.read(*arguments)
        if self.appended == 0:
            self.appended += 1
            await _append(self.client, "s", _turn(99, "inv-4", {"late": True}))
        return found


@pytest.fixture
async def app_and_client(settings):
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http,
    ):
        yield app, http


async def test_an_append_between_the_read_and_the_write_fails_a_conditional_rewind(
    app_and_client, monkeypatch
):
    app, client = app_and_client
    await _history(client)
    store = app.state.service.store
    writer = _AppendDuringRead(client, store)
    monkeypatch.setattr(store, "read_events", writer)
    answer = await client.post(
        f"{ADA}/sessions/s/rewind", json={"beforeInvocationId": "inv-2"}, headers={"If-Match": "5"}
    )
    assert writer.appended == 1
    assert answer.status_code == 412
    stored = (await client.get(f"{ADA}/sessions/s")).json()
    assert [event["id"] for event in stored["events"]][-1] == "e99"
    assert stored["state"]["late"] is True


async def test_without_if_match_a_rewind_that_lost_the_race_starts_over_and_sees_the_append(
    app_and_client, monkeypatch
):
    app, client = app_and_client
    await _history(client)
    store = app.state.service.store
    writer = _AppendDuringRead(client, store)
    monkeypatch.setattr(store, "read_events", writer)
    answer = await client.post(f"{ADA}/sessions/s/rewind", json={"beforeInvocationId": "inv-2"})
    assert writer.appended == 1
    assert answer.status_code == 200
    # The marker follows the late event and reverts it too.
    marker = answer.json()["rewindEvent"]
    assert marker["actions"]["stateDelta"]["late"] is None
    assert answer.headers["ETag"] == '"7"'


def _replayed(events: list[dict[str, Any]], initial: dict[str, Any]) -> dict[str, Any]:
    state = dict(initial)
    for event in events:
        for key, value in (event.get("actions") or {}).get("stateDelta", {}).items():
            if not key.startswith(("app:", "user:", "temp:")):
                state[key] = value
    return state


async def test_appends_racing_rewinds_never_leave_a_half_reverted_session(server):
    """Appends and a rewind sent at once, round after round (every other
    rewind conditional on the revision before the round): each rewind either
    reverted exactly the history stored before its marker, the appends that
    came first included, or was refused with 412; the state is always what
    the stored events, replayed, leave."""
    session = f"race-{server.port}"
    outcomes: list[int] = []
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as client:
        await client.delete(f"{ADA}/sessions/{session}")
        await _session(client, session, {})
        await _append(client, session, _turn(0, "r-1", {"n": -1}))
        for round_ in range(16):
            revision = (await client.get(f"{ADA}/sessions/{session}")).headers["ETag"]
            appends = [
                client.post(
                    f"{ADA}/sessions/{session}/events",
                    json=_turn(
                        100 * round_ + index + 1, f"r{round_}", {"n": round_, f"k{index}": 1}
                    ),
                )
                for index in range(3)
            ]
            rewinding = client.post(
                f"{ADA}/sessions/{session}/rewind",
                json={"beforeInvocationId": f"r{round_ - 1}"},
                headers={"If-Match": revision} if round_ % 2 else {},
            )
            *appended, rewound = await asyncio.gather(*appends, rewinding)
            assert all(answer.status_code == 201 for answer in appended)
            assert rewound.status_code in (200, 412), rewound.text
            outcomes.append(rewound.status_code)
        stored = (await client.get(f"{ADA}/sessions/{session}")).json()
    events = stored["events"]
    own = {key: value for key, value in stored["state"].items() if ":" not in key}
    assert own == _replayed(events, {})
    interleaved = 0
    for index, event in enumerate(events):
        target = event.get("actions", {}).get("rewindBeforeInvocationId")
        if target is None:
            continue
        before = events[:index]
        start = next(at for at, e in enumerate(before) if e.get("invocationId") == target)
        deltas = invocations.InvocationStart()
        for seq, earlier in enumerate(before[:start]):
            deltas.passed(earlier, seq)
        written = {
            key
            for later in before[start:]
            for key in later.get("actions", {}).get("stateDelta", {})
            if not key.startswith(("app:", "user:", "temp:"))
        }
        expected = rewind.reverting_delta(deltas.deltas_state, _replayed(before, {}), written)
        assert event["actions"]["stateDelta"] == expected
        # Appends of the marker's own round on both sides of it: it raced them.
        round_ = f"r{int(target[1:]) + 1}"
        sides = {at < index for at, e in enumerate(events) if e.get("invocationId") == round_}
        interleaved += sides == {True, False}
    # The race was run, not serialised away: a rewind landed between the
    # appends of its round, or a conditional one was refused.
    assert interleaved or 412 in outcomes, outcomes
    assert 200 in outcomes


# Hostile invocation ids: sent raw (a lone surrogate or NUL is no valid
# UTF-8 or is refused by the value rules), or huge. Each is a clear 4xx, and
# the session is left as it was, for a rewind and for a fork.
HOSTILE_INVOCATION_BODIES = [
    b'{"beforeInvocationId": "a\\u0000b"}',
    b'{"beforeInvocationId": "\\ud800"}',
    b'{"beforeInvocationId": "' + b"x" * 200_000 + b'"}',
    b'{"beforeInvocationId": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
    b'{"beforeInvocationId": 1e400}',
]


@pytest.mark.parametrize(
    "body", HOSTILE_INVOCATION_BODIES, ids=range(len(HOSTILE_INVOCATION_BODIES))
)
@pytest.mark.parametrize("operation", ["rewind", "fork"])
async def test_a_hostile_invocation_id_is_a_4xx_and_writes_nothing(client, body, operation):
    await _history(client)
    before = await client.get(f"{ADA}/sessions/s")
    answer = await client.post(
        f"{ADA}/sessions/s/{operation}",
        content=body,
        headers={"content-type": "application/json"},
    )
    assert 400 <= answer.status_code < 500, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    after = await client.get(f"{ADA}/sessions/s")
    assert after.headers["etag"] == before.headers["etag"]
    assert after.json()["events"] == before.json()["events"]
    listed = await client.get(f"{ADA}/sessions")
    assert [session["id"] for session in listed.json()["sessions"]] == ["s"]
