"""Labels on sessions (issue 29): GCP's label rules, set at create, copied by a
fork unless given, replaced by PATCH (null clears), in a session's JSON only
when it has some; and request bodies that refuse fields the API does not
define. On SQLite and PostgreSQL (the `client` fixture runs each on both)."""

import asyncio
import uuid

import httpx

from session_state.core.config import Settings
from tests.conftest import ServerProcess, asgi_client

APP = "/apps/travel"
SESSIONS = f"{APP}/users/ada/sessions"
SIX_FIELDS = {"id", "appName", "userId", "state", "events", "lastUpdateTime"}


async def create(client, session_id, **body):
    response = await client.post(SESSIONS, json={"sessionId": session_id, **body})
    assert response.status_code == 201, response.text
    return response.json()


async def test_labels_set_at_create_are_in_the_session_json_and_absent_when_empty(client):
    labelled = await create(client, "a", labels={"env": "prod", "team": "", "cost-centre_7": "x"})
    assert labelled["labels"] == {"env": "prod", "team": "", "cost-centre_7": "x"}
    assert (await client.get(f"{SESSIONS}/a")).json()["labels"] == labelled["labels"]
    listed = (await client.get(SESSIONS)).json()["sessions"]
    assert listed[0]["labels"] == labelled["labels"]
    # No labels, empty labels or null: ADK's six fields exactly.
    for session_id, body in (("b", {}), ("c", {"labels": {}}), ("d", {"labels": None})):
        assert set(await create(client, session_id, **body)) == SIX_FIELDS
        assert set((await client.get(f"{SESSIONS}/{session_id}")).json()) == SIX_FIELDS


async def test_patch_replaces_labels_whole_and_null_clears_without_an_event(client):
    await create(client, "s", labels={"env": "prod", "team": "a"})
    patched = await client.patch(f"{SESSIONS}/s", json={"labels": {"env": "dev"}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["labels"] == {"env": "dev"}
    # Labels are metadata: no event, the revision and the update time stay.
    assert patched.headers["etag"] == '"0"'
    assert patched.json()["events"] == []
    created_time = patched.json()["lastUpdateTime"]
    # If-Match is honoured, against the revision that labels do not move.
    stale = await client.patch(f"{SESSIONS}/s", json={"labels": {}}, headers={"If-Match": '"3"'})
    assert stale.status_code == 412
    cleared = await client.patch(
        f"{SESSIONS}/s", json={"labels": None}, headers={"If-Match": '"0"'}
    )
    assert cleared.status_code == 200, cleared.text
    assert "labels" not in cleared.json()
    assert cleared.json()["lastUpdateTime"] == created_time
    # With an expiry: one write.
    both = await client.patch(f"{SESSIONS}/s", json={"labels": {"x": "1"}, "ttlSeconds": 60})
    assert both.json()["labels"] == {"x": "1"} and "expireTime" in both.json()
    missing = await client.patch(f"{SESSIONS}/nope", json={"labels": {"x": "1"}})
    assert missing.status_code == 404


async def test_labels_with_a_state_delta_are_one_write_of_both_or_neither(database_url):
    settings = Settings(database_url=database_url, max_state_bytes=4096)
    async with asgi_client(settings) as client:
        await create(client, "s", labels={"env": "prod"})
        both = await client.patch(
            f"{SESSIONS}/s", json={"labels": {"env": "dev"}, "stateDelta": {"k": 1}}
        )
        assert both.status_code == 200, both.text
        assert both.json()["labels"] == {"env": "dev"} and both.json()["state"] == {"k": 1}
        assert both.headers["etag"] == '"1"' and len(both.json()["events"]) == 1
        listed = await client.get(f"{APP}/sessions", params={"label": "env:dev"})
        assert [s["id"] for s in listed.json()["sessions"]] == ["s"]
        # Each refusal writes neither part: a bad label, a stale If-Match, a
        # state past the limit (found by the store, while writing).
        refusals = [
            ({"labels": {"Env": "x"}, "stateDelta": {"k": 2}}, {}, 422),
            ({"labels": {"env": "x"}, "stateDelta": {"k": 2}}, {"If-Match": '"0"'}, 412),
            ({"labels": {"env": "x"}, "stateDelta": {"big": "b" * 5000}}, {}, 422),
        ]
        for body, headers, status in refusals:
            refused = await client.patch(f"{SESSIONS}/s", json=body, headers=headers)
            assert refused.status_code == status, refused.text
        session = (await client.get(f"{SESSIONS}/s")).json()
        assert session["labels"] == {"env": "dev"} and session["state"] == {"k": 1}
        assert len(session["events"]) == 1
        assert (await client.get(f"{APP}/sessions", params={"label": "env:x"})).json()[
            "sessions"
        ] == []


async def test_concurrent_patches_of_labels_and_state_lose_nothing(client):
    """Concurrent PATCHes of state and labels: every event is stored, and the
    labels are those written with the last event; under one If-Match, one
    PATCH wins whole and the others write nothing."""
    await create(client, "s")
    count = 12

    async def patch(number, headers=None):
        body = {"labels": {"writer": f"w{number}"}, "stateDelta": {f"k{number}": number}}
        return await client.patch(f"{SESSIONS}/s", json=body, headers=headers or {})

    answers = await asyncio.gather(*(patch(number) for number in range(count)))
    assert [answer.status_code for answer in answers] == [200] * count
    session = (await client.get(f"{SESSIONS}/s")).json()
    assert session["state"] == {f"k{number}": number for number in range(count)}
    assert len(session["events"]) == count
    last_delta = session["events"][-1]["actions"]["stateDelta"]
    assert session["labels"] == {"writer": f"w{next(iter(last_delta.values()))}"}

    revision = f'"{count}"'
    raced = await asyncio.gather(
        *(patch(number, {"If-Match": revision}) for number in range(count, 2 * count))
    )
    won = [answer for answer in raced if answer.status_code == 200]
    assert len(won) == 1 and all(a.status_code == 412 for a in raced if a not in won)
    winner = won[0].json()
    session = (await client.get(f"{SESSIONS}/s")).json()
    assert len(session["events"]) == count + 1
    number = int(winner["labels"]["writer"][1:])
    assert session["labels"] == winner["labels"] and session["state"][f"k{number}"] == number
    assert not any(
        f"k{other}" in session["state"] for other in range(count, 2 * count) if other != number
    )


async def test_labels_patched_with_a_state_delta_land_with_its_event_for_every_reader(
    server: ServerProcess,
):
    """PATCHes of labels and state raced by several writers against a
    started server, while readers read the session: every read sees the
    labels written with the state it sees (one transaction, never the state
    of one PATCH beside the labels of another), and so does the end."""
    session = f"{SESSIONS}/{uuid.uuid4().hex[:8]}"
    writers, patches_each = 4, 8
    in_flight = most_in_flight = 0
    reads_while_writing = 0
    seen: set[str] = set()
    writing = True
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        created = await http.post(SESSIONS, json={"sessionId": session.rsplit("/", 1)[1]})
        assert created.status_code == 201, created.text

        async def write(writer: int) -> None:
            nonlocal in_flight, most_in_flight
            for number in range(patches_each):
                tag = f"w{writer}-{number}"
                in_flight += 1
                most_in_flight = max(most_in_flight, in_flight)
                try:
                    body = {"labels": {"writer": tag}, "stateDelta": {"writer": tag}}
                    answer = await http.patch(session, json=body)
                finally:
                    in_flight -= 1
                assert answer.status_code == 200, answer.text

        async def read() -> None:
            nonlocal reads_while_writing
            while writing:
                answer = await http.get(session, params={"numRecentEvents": 0})
                assert answer.status_code == 200, answer.text
                body = answer.json()
                assert body.get("labels", {}).get("writer") == body["state"].get("writer"), body
                if in_flight and "writer" in body["state"]:
                    reads_while_writing += 1
                    seen.add(body["state"]["writer"])

        readers = [asyncio.create_task(read()) for _ in range(3)]
        try:
            await asyncio.wait_for(asyncio.gather(*(write(w) for w in range(writers))), 60)
        finally:
            writing = False
            await asyncio.gather(*readers)
        final = (await http.get(session)).json()
    assert len(final["events"]) == writers * patches_each
    last_delta = final["events"][-1]["actions"]["stateDelta"]
    assert final["labels"] == {"writer": final["state"]["writer"]} == last_delta
    # The race happened: PATCHes overlapped, and readers read between them.
    assert most_in_flight >= 2, most_in_flight
    assert reads_while_writing >= 10 and len(seen) >= 5, (reads_while_writing, len(seen))


async def test_a_fork_copies_the_labels_unless_given(client):
    await create(client, "s", labels={"env": "prod"})
    await client.post(f"{SESSIONS}/s/events", json={"author": "user", "id": "e1"})
    copied = await client.post(f"{SESSIONS}/s/fork", json={"sessionId": "f1"})
    assert copied.json()["labels"] == {"env": "prod"}
    partial = await client.post(f"{SESSIONS}/s/fork", json={"sessionId": "f2", "upToEventId": "e1"})
    assert partial.json()["labels"] == {"env": "prod"}
    given = await client.post(f"{SESSIONS}/s/fork", json={"sessionId": "f3", "labels": {"a": "b"}})
    assert given.json()["labels"] == {"a": "b"}
    cleared = await client.post(f"{SESSIONS}/s/fork", json={"sessionId": "f4", "labels": None})
    assert "labels" not in cleared.json()
    # The fork's labels are its own.
    await client.patch(f"{SESSIONS}/f1", json={"labels": {"env": "test"}})
    assert (await client.get(f"{SESSIONS}/s")).json()["labels"] == {"env": "prod"}


HOSTILE_LABELS = {
    "uppercase key": ({"Env": "x"}, "'Env'"),
    "key starting with a digit": ({"1env": "x"}, "'1env'"),
    "empty key": ({"": "x"}, "''"),
    "64-character key": ({"k" * 64: "x"}, "'kkkk"),
    "dot in key": ({"a.b": "x"}, "'a.b'"),
    "unicode key": ({"é": "x"}, "'é'"),
    "uppercase value": ({"env": "Prod"}, "'env'"),
    "64-character value": ({"env": "v" * 64}, "'env'"),
    "space in value": ({"env": "a b"}, "'env'"),
    "number value": ({"env": 1}, "'env'"),
    "null value": ({"env": None}, "'env'"),
    "object value": ({"env": {"a": "b"}}, "'env'"),
    "65 labels": ({f"k{i}": "" for i in range(65)}, "65 labels"),
    "megabyte key": ({"k" * 1_000_000: "x"}, "'kkkk"),
    "not an object": (["env"], "JSON object"),
    "newline-terminated key": ({"env\n": "x"}, "'env\\n'"),
}


async def test_a_bad_label_is_422_naming_it_everywhere_labels_are_taken(client):
    await create(client, "s")
    for case, (labels, named) in HOSTILE_LABELS.items():
        for method, path, body in (
            ("POST", SESSIONS, {"sessionId": "new", "labels": labels}),
            ("PATCH", f"{SESSIONS}/s", {"labels": labels}),
            ("POST", f"{SESSIONS}/s/fork", {"sessionId": "f", "labels": labels}),
        ):
            response = await client.request(method, path, json=body)
            assert response.status_code == 422, (case, method, path, response.text)
            problem = response.json()
            assert problem["code"] == "validation_error"
            assert problem["errors"][0]["loc"] == ["body", "labels"], case
            assert named in problem["errors"][0]["msg"], case
            assert len(response.content) < 10_000, case  # a long key is named, not echoed
    # Nothing was written.
    assert [s["id"] for s in (await client.get(SESSIONS)).json()["sessions"]] == ["s"]
    assert "labels" not in (await client.get(f"{SESSIONS}/s")).json()


async def test_64_labels_of_the_longest_keys_and_values_are_taken(client):
    labels = {f"k{i:02d}" + "x" * 60: "v" * 63 for i in range(64)}
    assert (await create(client, "s", labels=labels))["labels"] == labels


UNKNOWN_FIELDS = {
    "create": ("POST", "", {"sessionId": "n", "lables": {"a": "b"}}, "lables"),
    "create snake and camel": ("POST", "", {"session_id": "n", "stat": {}}, "stat"),
    "patch": ("PATCH", "/s", {"stateDelta": {"a": 1}, "ttl": 5}, "ttl"),
    "fork": ("POST", "/s/fork", {"sessionId": "f", "upTo": "e1"}, "upTo"),
    "batch wrapper": ("POST", "/s/events/batch", {"events": [{"author": "u"}], "x": 1}, "x"),
}


async def test_an_unknown_body_field_is_422_naming_it(client):
    await create(client, "s")
    for case, (method, suffix, body, field) in UNKNOWN_FIELDS.items():
        response = await client.request(method, f"{SESSIONS}{suffix}", json=body)
        assert response.status_code == 422, (case, response.text)
        problem = response.json()
        assert ["body", field] in [error["loc"] for error in problem["errors"]], case
        assert f"body.{field}: is not a field of this request" in problem["detail"], case
    session = (await client.get(f"{SESSIONS}/s")).json()
    assert session["events"] == [] and session["state"] == {}
    assert [s["id"] for s in (await client.get(SESSIONS)).json()["sessions"]] == ["s"]


async def test_an_event_keeps_adk_s_open_shape_and_is_stored_verbatim(client):
    """ADK's Event ignores fields it does not define (extra="ignore"), and a
    newer ADK adds fields: an event's unknown fields are stored as sent."""
    await create(client, "s")
    event = {"author": "u", "id": "e1", "futureField": {"a": 1}, "customMetadata": {"k": [1]}}
    stored = await client.post(f"{SESSIONS}/s/events", json=event)
    assert stored.status_code == 201, stored.text
    assert stored.json()["futureField"] == {"a": 1}
    read = (await client.get(f"{SESSIONS}/s")).json()["events"][0]
    assert read["futureField"] == {"a": 1} and read["customMetadata"] == {"k": [1]}
