"""Compacted reads (GET session with compacted=true): the events a compaction
event covers are left out, as ADK's prompt builder leaves them out, except
those ADK reads for more than the prompt; the rest comes back as stored, with
the count and bytes left out in headers. That ADK builds the same requests
from it is tests/client/test_adk_compacted_reads.py's."""

from typing import Any

import httpx
import pytest

from session_state.sessions.compaction import left_out

ADA = "/apps/travel/users/ada"


def event(moment: float, **fields: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "id": f"e{moment}",
        "author": "bot",
        "invocationId": f"i{int(moment)}",
        "timestamp": moment,
        "content": {"role": "model", "parts": [{"text": f"said at {moment}"}]},
        "actions": {"stateDelta": {}, "artifactDelta": {}},
    }
    document.update(fields)
    return document


def summary(start: float, end: float, at: float, **fields: Any) -> dict[str, Any]:
    """A compaction event as ADK's summarizer writes it."""
    compaction = {
        "startTimestamp": start,
        "endTimestamp": end,
        "compactedContent": {"role": "model", "parts": [{"text": f"{start}-{end}"}]},
    }
    return event(at, author="user", content=None, actions={"compaction": compaction}, **fields)


def ids(documents: list[dict[str, Any]], going: set[int]) -> list[str]:
    return [document["id"] for index, document in enumerate(documents) if index not in going]


# Two sliding windows: 1-2, then 3-4. The newest window stays whole (the
# next one re-reads its last invocations), the older one's events go.
WINDOWS = [event(1), event(2), summary(1, 2, 2.5), event(3), event(4), summary(3, 4, 4.5), event(5)]


def test_the_events_an_older_summary_covers_are_left_out():
    assert ids(WINDOWS, left_out(WINDOWS)) == ["e2.5", "e3", "e4", "e4.5", "e5"]


def test_without_a_compaction_nothing_is_left_out():
    history = [event(1), event(2), event(3)]
    assert left_out(history) == set()


def test_a_summary_without_its_content_or_a_bound_covers_nothing():
    for broken in ({"compactedContent": None}, {"startTimestamp": None}, {"endTimestamp": "2"}):
        first = summary(1, 2, 2.5)
        first["actions"]["compaction"].update(broken)
        history = [event(1), event(2), first, event(3), summary(3, 3, 3.5), event(4)]
        assert ids(history, left_out(history))[:2] == ["e1", "e2"], broken


def test_a_rolling_summary_keeps_only_what_it_added_past_the_one_before():
    # The token-threshold compactor's summaries all start where the first did.
    history = [event(1), event(2), summary(1, 2, 2.5), event(3), event(4), summary(1, 4, 4.5)]
    assert ids(history, left_out(history)) == ["e2.5", "e3", "e4", "e4.5"]
    history += [event(5), event(6), summary(1, 6, 6.5)]
    assert ids(history, left_out(history)) == ["e2.5", "e4.5", "e5", "e6", "e6.5"]


def test_the_only_summary_keeps_its_range_for_the_next_window_to_overlap():
    history = [event(1), event(2), summary(1, 2, 2.5), event(3)]
    assert left_out(history) == set()


def test_kept_invocations_are_the_newest_a_summary_reaches():
    # A young session's second window (interval 2, overlap 3) started at i1,
    # as the one before; told the overlap, the read keeps i2 to i4 whole.
    history = [event(1), event(2), summary(1, 2, 2.5), event(3), event(4), summary(1, 4, 4.5)]
    assert ids(history, left_out(history)) == ["e2.5", "e3", "e4", "e4.5"]
    told = ids(history, left_out(history, keep_invocations=3))
    assert told == ["e2", "e2.5", "e3", "e4", "e4.5"]
    # More than there are keeps them all; events past the summary count for nothing.
    later = [*history, event(5)]
    assert ids(later, left_out(later, keep_invocations=9)) == [e["id"] for e in later]
    assert left_out(later, keep_invocations=1) == left_out(later)


@pytest.mark.parametrize(
    "kept",
    [
        {"actions": {"stateDelta": {"k": 1}}},
        {"actions": {"artifactDelta": {"report.pdf": 2}}},
        {"actions": {"transferToAgent": "billing"}},
        {"actions": {"state_delta": {"k": 1}}},
        {"actions": {"aFieldOfANewerAdk": {"x": 1}}},
        {"isolationScope": "task@1"},
        {"errorCode": "INVOCATION_ABORTED"},
    ],
)
def test_events_adk_reads_for_more_than_the_prompt_stay(kept):
    history = [event(1, **kept), *WINDOWS[1:]]
    assert ids(history, left_out(history))[0] == "e1"
    assert "e2" not in ids(history, left_out(history))


def test_a_call_answered_by_a_kept_event_stays_with_its_other_answers():
    call = {"functionCall": {"id": "c1", "name": "slow", "args": {}}}
    sibling = {"function_call": {"id": "c2", "name": "fast", "args": {}}}
    calls = event(1, content={"role": "model", "parts": [call, sibling]})
    quick = event(1.5, content={"role": "user", "parts": [{"functionResponse": {"id": "c2"}}]})
    late = event(6, content={"role": "user", "parts": [{"functionResponse": {"id": "c1"}}]})
    history = [calls, quick, *WINDOWS[1:], late]
    assert ids(history, left_out(history)) == ["e1", "e1.5", "e2.5", "e3", "e4", "e4.5", "e5", "e6"]


def test_a_rewound_summary_covers_nothing():
    # A rewind back to before i3 undoes the second summary (and what came after it).
    marker = event(6, author="user", invocationId="r", actions={"rewindBeforeInvocationId": "i3"})
    history = [*WINDOWS, marker]
    # Only the first window counts: it is the newest, so its range stays too.
    assert left_out(history) == set()


def test_the_first_event_of_an_invocation_a_rewind_names_stays():
    # ADK's rewind skips back to the first event of i1: that event stays.
    marker = event(1.2, author="user", invocationId="r", actions={"rewindBeforeInvocationId": "i1"})
    history = [event(0.5, invocationId="i1"), event(1), marker, event(2), summary(0.5, 2, 2.5)]
    history += WINDOWS[3:]
    assert ids(history, left_out(history)) == ["e0.5", "e1.2", "e2.5", "e3", "e4", "e4.5", "e5"]


def test_a_summary_of_a_branch_covers_only_that_branch():
    history = [
        event(1, branch="root.a"),
        event(1.5, branch="root.b"),
        event(2),
        summary(1, 2, 2.5, branch="root.a"),
        event(3),
        summary(3, 3, 3.5),
    ]
    assert ids(history, left_out(history)) == ["e1.5", "e2", "e2.5", "e3", "e3.5"]


def test_a_scoped_summary_covers_nothing():
    history = [event(1), summary(1, 1, 1.5, isolationScope="task@1"), event(2), summary(2, 2, 2.5)]
    assert ids(history, left_out(history))[0] == "e1"


# -- over HTTP, on both backends ------------------------------------------------


async def _stored(client: httpx.AsyncClient, session_id: str, events: list[dict]) -> str:
    created = await client.post(f"{ADA}/sessions", json={"sessionId": session_id})
    assert created.status_code == 201
    batch = await client.post(f"{ADA}/sessions/{session_id}/events/batch", json={"events": events})
    assert batch.status_code == 201
    return batch.text


async def test_a_compacted_read_sends_the_kept_events_as_stored_and_says_what_it_left_out(client):
    await _stored(client, "s", WINDOWS)
    whole = await client.get(f"{ADA}/sessions/s")
    compacted = await client.get(f"{ADA}/sessions/s", params={"compacted": "true"})
    assert compacted.status_code == 200
    assert compacted.headers["ETag"] == whole.headers["ETag"]
    kept = compacted.json()["events"]
    assert [stored["id"] for stored in kept] == ["e2.5", "e3", "e4", "e4.5", "e5"]
    assert kept == [stored for stored in whole.json()["events"] if stored in kept]
    assert compacted.headers["Session-State-Events-Left-Out"] == "2"
    assert int(compacted.headers["Session-State-Bytes-Left-Out"]) == len(whole.content) - len(
        compacted.content
    )
    # The rest of the session is the same.
    assert {**compacted.json(), "events": None} == {**whole.json(), "events": None}


async def test_a_compacted_read_of_the_newest_events_compacts_those(client):
    await _stored(client, "s", WINDOWS)
    newest = await client.get(
        f"{ADA}/sessions/s", params={"compacted": "true", "numRecentEvents": 6}
    )
    # e1 is not read; e2 is, and is left out.
    assert [stored["id"] for stored in newest.json()["events"]] == [
        "e2.5",
        "e3",
        "e4",
        "e4.5",
        "e5",
    ]
    assert newest.headers["Session-State-Events-Left-Out"] == "1"


async def test_without_compaction_a_compacted_read_is_the_whole_session(client):
    await _stored(client, "plain", [event(1), event(2)])
    whole = await client.get(f"{ADA}/sessions/plain")
    compacted = await client.get(f"{ADA}/sessions/plain?compacted=1")
    assert compacted.content == whole.content
    assert compacted.headers["Session-State-Events-Left-Out"] == "0"
    assert compacted.headers["Session-State-Bytes-Left-Out"] == "0"
    empty = await client.post(f"{ADA}/sessions", json={"sessionId": "empty"})
    assert empty.status_code == 201
    read = await client.get(f"{ADA}/sessions/empty?compacted=true")
    assert read.json()["events"] == [] and read.headers["Session-State-Events-Left-Out"] == "0"


async def test_compacted_false_is_the_plain_read(client):
    await _stored(client, "s", WINDOWS)
    plain = await client.get(f"{ADA}/sessions/s?compacted=false")
    assert plain.content == (await client.get(f"{ADA}/sessions/s")).content
    assert "Session-State-Events-Left-Out" not in plain.headers


async def test_keep_invocations_keeps_the_newest_covered_invocations_whole(client):
    await _stored(client, "s", WINDOWS)
    read = await client.get(f"{ADA}/sessions/s", params={"compacted": "true", "keepInvocations": 3})
    assert [stored["id"] for stored in read.json()["events"]] == [
        "e2",
        "e2.5",
        "e3",
        "e4",
        "e4.5",
        "e5",
    ]
    assert read.headers["Session-State-Events-Left-Out"] == "1"
    plain = await client.get(f"{ADA}/sessions/s", params={"keepInvocations": 3})
    assert plain.content == (await client.get(f"{ADA}/sessions/s")).content


@pytest.mark.parametrize("value", ["-1", "10001", "two", "1e3", "99999999999999999999999"])
async def test_keep_invocations_out_of_bounds_is_a_422(client, value):
    await _stored(client, "s", WINDOWS)
    refused = await client.get(
        f"{ADA}/sessions/s", params={"compacted": "true", "keepInvocations": value}
    )
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["loc"] == ["query", "keepInvocations"]


async def test_compacted_read_errors(client):
    assert (await client.get(f"{ADA}/sessions/none?compacted=true")).status_code == 404
    await _stored(client, "s", WINDOWS)
    refused = await client.get(f"{ADA}/sessions/s?compacted=maybe")
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["loc"] == ["query", "compacted"]
