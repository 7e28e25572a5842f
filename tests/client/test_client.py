"""SessionStateClient and AsyncSessionStateClient against a real server, one
test body for both (`client` is either, see both_clients.py), on SQLite and
PostgreSQL. Retries, timeouts, headers and failures a real server never
produces: test_contract.py."""

import ast
import asyncio
import inspect
import socket
import time
from pathlib import Path

import httpx
import pytest

from session_state_client import (
    AlreadyExistsError,
    APIConnectionError,
    APIStatusError,
    AsyncSessionStateClient,
    BadRequestError,
    EventIdConflictError,
    InvocationNotFoundError,
    NotFoundError,
    PayloadTooLargeError,
    SessionStateClient,
    StaleSessionError,
    ValidationError,
)
from tests.client.both_clients import CLIENTS, open_client
from tests.conftest import ServerProcess


@pytest.fixture(params=CLIENTS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def client(kind, base_url):
    with open_client(kind, base_url=base_url) as opened:
        yield opened


def test_sessions_events_and_state(client, app_name):
    created = client.create_session(
        app_name=app_name, user_id="ada", session_id="s1", state={"user:n": 1, "k": "v"}
    )
    assert created.revision == 0
    assert created.state == {"k": "v", "user:n": 1}

    appended = client.append_event(
        app_name=app_name,
        user_id="ada",
        session_id="s1",
        event={"author": "agent", "actions": {"stateDelta": {"app:a": 1, "temp:t": 0}}},
        if_match=created.revision,
    )
    assert appended.revision == 1 and appended.persisted and not appended.replayed
    assert appended.event["id"]
    assert appended.event["actions"]["stateDelta"] == {"app:a": 1}

    session = client.get_session(app_name=app_name, user_id="ada", session_id="s1")
    assert session.revision == 1
    assert session.events == [appended.event]
    assert session.state == {"k": "v", "app:a": 1, "user:n": 1}
    assert session.last_update_time == appended.event["timestamp"]
    recent = client.get_session(
        app_name=app_name, user_id="ada", session_id="s1", num_recent_events=0
    )
    assert recent.events == [] and recent.revision == 1

    patched = client.patch_state(
        app_name=app_name, user_id="ada", session_id="s1", state_delta={"k": "w"}, if_match=1
    )
    assert patched.state["k"] == "w" and patched.revision == 2

    page = client.list_events(app_name=app_name, user_id="ada", session_id="s1", order="desc")
    assert [event["author"] for event in page.events] == ["user", "agent"]
    assert client.get_user_state(app_name=app_name, user_id="ada") == {"n": 1}
    assert client.get_app_state(app_name=app_name) == {"a": 1}
    listed = client.list_sessions(app_name=app_name, user_id="ada")
    assert [listed_session.id for listed_session in listed.sessions] == ["s1"]
    assert listed.sessions[0].events == []

    client.delete_session(app_name=app_name, user_id="ada", session_id="s1")
    with pytest.raises(NotFoundError) as raised:
        client.get_session(app_name=app_name, user_id="ada", session_id="s1")
    assert raised.value.status_code == 404
    assert raised.value.code == "session_not_found"
    assert raised.value.request_id
    with pytest.raises(NotFoundError):
        client.delete_session(app_name=app_name, user_id="ada", session_id="s1")


def test_memory(client, app_name):
    created = client.create_session(app_name=app_name, user_id="bob")
    client.append_event(
        app_name=app_name,
        user_id="bob",
        session_id=created.id,
        event={"author": "user", "content": {"parts": [{"text": "I like owls."}]}},
    )
    ingested = client.add_session_to_memory(app_name=app_name, user_id="bob", session_id=created.id)
    assert ingested.memories_added == 1
    found = client.search_memory(app_name=app_name, user_id="bob", query="owls")
    assert found.memories[0].content.parts[0].text == "I like owls."

    event = {"id": "e-bats", "author": "user", "content": {"parts": [{"text": "Bats fly."}]}}
    taken = client.add_events_to_memory(
        app_name=app_name, user_id="bob", events=[event], session_id="elsewhere"
    )
    again = client.add_events_to_memory(
        app_name=app_name, user_id="bob", events=[event], session_id="elsewhere"
    )
    assert (taken.memories_added, again.memories_added) == (1, 0)
    written = client.add_memory(
        app_name=app_name,
        user_id="bob",
        memories=[{"id": "m-cats", "content": {"parts": [{"text": "Cats purr."}]}}],
        custom_metadata={"source": "test"},
    )
    assert written.memory_ids == ["m-cats"]
    assert _memory_texts(client, app_name, "bats cats", limit=5) == {"Bats fly.", "Cats purr."}
    client.delete_memory(app_name=app_name, user_id="bob", memory_id="m-cats")
    client.delete_memory(app_name=app_name, user_id="bob", memory_id="m-cats")  # a no-op now
    assert _memory_texts(client, app_name, "bats cats", limit=5) == {"Bats fly."}
    listed = list(client.iter_memories(app_name=app_name, user_id="bob", page_size=1))
    assert [memory.content.parts[0].text for memory in listed] == ["Bats fly.", "I like owls."]
    assert listed[0].id == "e-bats" and listed[0].matched_by is None
    first = client.list_memories(app_name=app_name, user_id="bob", page_size=1)
    assert [memory.id for memory in first.memories] == ["e-bats"]
    assert first.next_page_token is not None
    with pytest.raises(BadRequestError):
        client.list_memories(app_name=app_name, user_id="ada", page_token=first.next_page_token)

    client.forget_user_memory(app_name=app_name, user_id="bob")
    assert not client.search_memory(app_name=app_name, user_id="bob", query="owls").memories
    client.delete_session(
        app_name=app_name, user_id="bob", session_id=created.id, delete_memories=True
    )


def test_a_memory_search_result_says_which_side_found_it_and_its_score(client, app_name):
    client.add_memory(
        app_name=app_name,
        user_id="bob",
        memories=[
            {"id": "flight", "content": {"parts": [{"text": "My flight to Lisbon leaves soon."}]}},
            {"id": "bank", "content": {"parts": [{"text": "Remind me to call the bank."}]}},
        ],
    )
    (both,) = client.search_memory(app_name=app_name, user_id="bob", query="Lisbon").memories
    assert (both.id, both.matched_by) == ("flight", "both")
    assert both.score is not None and 0 < both.score <= 1
    (keyword,) = client.search_memory(
        app_name=app_name, user_id="bob", query="Lisbon", mode="keyword"
    ).memories
    assert (keyword.matched_by, keyword.score) == ("keyword", 1.0)
    (meaning,) = client.search_memory(
        app_name=app_name, user_id="bob", query="Lisbon", mode="semantic"
    ).memories
    assert meaning.matched_by == "meaning"
    assert meaning.score == pytest.approx(both.score, abs=1e-5)
    client.forget_user_memory(app_name=app_name, user_id="bob")


def _memory_texts(client, app_name: str, query: str, limit: int) -> set[str]:
    found = client.search_memory(app_name=app_name, user_id="bob", query=query, limit=limit)
    return {part.text for memory in found.memories for part in memory.content.parts}


def test_erasing_a_user_then_the_app(client, app_name):
    for user in ("ada", "bob"):
        client.create_session(
            app_name=app_name, user_id=user, session_id=f"{user}-s", state={"user:k": 1}
        )
    client.erase_user(app_name=app_name, user_id="ada")
    client.erase_user(app_name=app_name, user_id="ada")  # a no-op the second time
    assert [s.user_id for s in client.iter_sessions(app_name=app_name)] == ["bob"]
    assert client.get_user_state(app_name=app_name, user_id="ada") == {}
    client.erase_app(app_name=app_name)
    assert list(client.iter_sessions(app_name=app_name)) == []


def test_expiry_and_fork(client, app_name):
    created = client.create_session(
        app_name=app_name, user_id="ada", session_id="s", state={"k": 0}, ttl_seconds=3600
    )
    assert created.expire_time is not None and created.expire_time > time.time() + 3500
    for step in (1, 2):
        client.append_event(
            app_name=app_name,
            user_id="ada",
            session_id="s",
            event={"id": f"e{step}", "author": "a", "actions": {"stateDelta": {"k": step}}},
        )
    dated = client.set_expiry(
        app_name=app_name, user_id="ada", session_id="s", expire_time=4102444800, if_match=2
    )
    assert (dated.expire_time, dated.revision) == (4102444800, 2)
    kept = client.set_expiry(app_name=app_name, user_id="ada", session_id="s")
    assert kept.expire_time is None
    with pytest.raises(StaleSessionError):
        client.set_expiry(
            app_name=app_name, user_id="ada", session_id="s", ttl_seconds=60, if_match=1
        )
    # An expiry in the past is refused: the session would be gone at once.
    with pytest.raises(ValidationError):
        client.set_expiry(app_name=app_name, user_id="ada", session_id="s", expire_time=1.0)

    fork = client.fork_session(
        app_name=app_name,
        user_id="ada",
        session_id="s",
        new_session_id="s-b",
        up_to_event_id="e1",
        ttl_seconds=60,
    )
    assert (fork.id, fork.state, fork.revision, fork.events) == ("s-b", {"k": 1}, 1, [])
    assert fork.expire_time is not None
    copied = client.get_session(app_name=app_name, user_id="ada", session_id="s-b")
    assert [event["id"] for event in copied.events] == ["e1"]
    whole = client.fork_session(app_name=app_name, user_id="ada", session_id="s")
    assert whole.id not in ("s", "s-b") and whole.state == {"k": 2} and whole.revision == 2
    assert whole.expire_time is None
    with pytest.raises(AlreadyExistsError):
        client.fork_session(app_name=app_name, user_id="ada", session_id="s", new_session_id="s-b")
    with pytest.raises(ValidationError):
        client.fork_session(app_name=app_name, user_id="ada", session_id="s", up_to_event_id="x")


def test_rewind_fork_before_an_invocation_and_compacted_reads(client, app_name):
    where = {"app_name": app_name, "user_id": "ada", "session_id": "s"}
    client.create_session(**where, state={"k": 0})
    steps = [("i1", {"k": 1}), ("i2", {"k": 2, "new": True}), ("i3", {"k": 3})]
    for index, (invocation, delta) in enumerate(steps):
        event = {"id": f"e{index}", "author": "a", "invocationId": invocation}
        client.append_event(**where, event={**event, "actions": {"stateDelta": delta}})
    forked = client.fork_session(**where, new_session_id="s-i2", before_invocation_id="i2")
    assert (forked.state, forked.revision) == ({"k": 1}, 1)
    with pytest.raises(InvocationNotFoundError):
        client.fork_session(**where, before_invocation_id="i9")
    with pytest.raises(StaleSessionError):
        client.rewind_session(**where, before_invocation_id="i2", if_match=2)
    rewound = client.rewind_session(**where, before_invocation_id="i2", if_match=3)
    assert rewound.session.state == {"k": 1, "new": None} and rewound.session.revision == 4
    assert rewound.event["actions"]["rewindBeforeInvocationId"] == "i2"
    with pytest.raises(InvocationNotFoundError):
        client.rewind_session(**where, before_invocation_id="i9")
    # Nothing compacted yet: a compacted read is the whole session.
    read = client.get_session(**where, compacted=True)
    assert (read.events_left_out, read.bytes_left_out, len(read.events)) == (0, 0, 4)
    assert client.get_session(**where).events_left_out is None


def test_iterators_walk_every_page(client, app_name):
    for index in range(7):
        client.create_session(app_name=app_name, user_id=f"u{index % 2}", session_id=f"s{index}")
    ids = [session.id for session in client.iter_sessions(app_name=app_name, page_size=2)]
    assert sorted(ids) == [f"s{index}" for index in range(7)]
    mine = list(client.iter_sessions(app_name=app_name, user_id="u0", page_size=3))
    assert sorted(session.id for session in mine) == ["s0", "s2", "s4", "s6"]

    where = {"app_name": app_name, "user_id": "u0", "session_id": "s0"}
    for step in range(5):
        client.append_event(**where, event={"id": f"e{step}", "author": "a"})
    forward = [event["id"] for event in client.iter_events(**where, page_size=2)]
    assert forward == [f"e{step}" for step in range(5)]
    backward = client.iter_events(**where, order="desc", page_size=3)
    assert [event["id"] for event in backward] == [f"e{step}" for step in reversed(range(5))]


def test_labels_filters_apps_and_users(client, app_name):
    created = client.create_session(
        app_name=app_name, user_id="ada", session_id="a", labels={"env": "prod", "team": "x"}
    )
    assert created.labels == {"env": "prod", "team": "x"}
    client.create_session(app_name=app_name, user_id="bob", session_id="b", labels={"env": "dev"})
    client.create_session(app_name=app_name, user_id="bob", session_id="c")
    forked = client.fork_session(
        app_name=app_name, user_id="ada", session_id="a", new_session_id="f", labels={}
    )
    assert forked.labels == {}
    relabelled = client.set_labels(
        app_name=app_name, user_id="bob", session_id="c", labels={"env": "prod"}, if_match=0
    )
    assert relabelled.labels == {"env": "prod"} and relabelled.revision == 0
    # State and labels in one write.
    both = client.patch_state(
        app_name=app_name, user_id="bob", session_id="b", state_delta={"k": 1}, labels={"env": "qa"}
    )
    assert (both.labels, both.state, both.revision) == ({"env": "qa"}, {"k": 1}, 1)
    prod = client.list_sessions(app_name=app_name, labels={"env": "prod"}, include_state=False)
    assert [session.id for session in prod.sessions] == ["a", "c"]
    assert [session.state for session in prod.sessions] == [{}, {}]  # not read: the model's {}
    with_team = client.iter_sessions(app_name=app_name, labels={"env": None, "team": None})
    assert [session.id for session in with_team] == ["a"]
    newest = client.iter_sessions(
        app_name=app_name, labels={"env": "prod"}, order="desc", page_size=1
    )
    assert [session.id for session in newest] == ["c", "a"]
    after = client.list_sessions(
        app_name=app_name, user_id="bob", updated_after=created.last_update_time + 1e9
    )
    assert after.sessions == []
    apps = {app.app_name: app.session_count for app in client.iter_apps(page_size=1)}
    assert apps[app_name] == 4
    page = client.list_apps(page_size=1000)
    assert app_name in [app.app_name for app in page.apps]
    users = list(client.iter_users(app_name=app_name, page_size=1))
    assert [(user.user_id, user.session_count) for user in users] == [("ada", 2), ("bob", 2)]
    first = client.list_users(app_name=app_name, page_size=1)
    assert first.users[0].user_id == "ada" and first.next_page_token is not None
    with pytest.raises(ValidationError):
        client.set_labels(app_name=app_name, user_id="ada", session_id="a", labels={"A": "b"})


def test_threads_are_listed_and_walked_latest_write_first(client, app_name, base_url):
    checkpoint = {"checkpoint": {"type": "json", "data": "e30="}, "channelVersions": {}}
    with httpx.Client(base_url=base_url) as http:
        for thread, user in [("t1", "ada"), ("t2", "bob"), ("t3", "ada")]:
            put = http.put(
                f"/apps/{app_name}/threads/{thread}/checkpoints/c1",
                json={**checkpoint, "userId": user},
            )
            assert put.status_code == 204, put.text
    walked = list(client.iter_threads(app_name=app_name, page_size=1))
    assert [thread.thread_id for thread in walked] == ["t3", "t2", "t1"]
    assert [thread.user_id for thread in walked] == ["ada", "bob", "ada"]
    assert walked[0].latest_checkpoint_id == "c1" and walked[0].expire_time is None
    assert walked[0].last_update_time >= walked[1].last_update_time >= walked[2].create_time
    first = client.list_threads(app_name=app_name, user_id="ada", page_size=1)
    assert [thread.thread_id for thread in first.threads] == ["t3"]
    rest = client.list_threads(
        app_name=app_name, user_id="ada", page_size=1, page_token=first.next_page_token
    )
    assert [thread.thread_id for thread in rest.threads] == ["t1"]
    with pytest.raises(BadRequestError):
        client.list_threads(app_name=app_name, page_token=first.next_page_token)
    with pytest.raises(ValidationError):
        client.list_threads(app_name=app_name, page_size=0)


# The same failure is the same exception, with the same status and code, on both.
ERRORS = [
    ("get missing", NotFoundError, 404, "session_not_found"),
    ("create again", AlreadyExistsError, 409, "session_already_exists"),
    ("same id, other event", EventIdConflictError, 409, "event_id_conflict"),
    ("stale if_match", StaleSessionError, 412, "stale_session"),
    ("invalid id", ValidationError, 422, "validation_error"),
    ("bad page token", BadRequestError, 400, "bad_request"),
]


@pytest.mark.parametrize(("case", "error", "status", "code"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_map_to_the_exception_tree(client, app_name, case, error, status, code):
    where = {"app_name": app_name, "user_id": "u", "session_id": "s"}
    client.create_session(**where)
    client.append_event(**where, event={"id": "e1", "author": "a"})
    failing = {
        "get missing": lambda: client.get_session(**{**where, "session_id": "missing"}),
        "create again": lambda: client.create_session(**where),
        "same id, other event": lambda: client.append_event(
            **where, event={"id": "e1", "author": "b"}
        ),
        "stale if_match": lambda: client.append_event(**where, event={"author": "a"}, if_match=0),
        "invalid id": lambda: client.create_session(**{**where, "session_id": " bad "}),
        "bad page token": lambda: client.list_sessions(app_name=app_name, page_token="nope"),
    }[case]
    with pytest.raises(APIStatusError) as raised:
        failing()
    assert type(raised.value) is error
    assert (raised.value.status_code, raised.value.code) == (status, code)
    assert raised.value.body["code"] == code and raised.value.request_id
    if error is ValidationError:
        assert raised.value.body["errors"]
    # Nothing of the failed call was stored.
    assert client.get_session(**where).revision == 1


def test_an_unreachable_server_is_a_connection_error(kind, app_name):
    with (
        open_client(kind, base_url=f"http://127.0.0.1:{_free_port()}", max_retries=0) as offline,
        pytest.raises(APIConnectionError),
    ):
        offline.get_app_state(app_name=app_name)


def test_a_retried_append_is_stored_once(client, app_name):
    where = {"app_name": app_name, "user_id": "u", "session_id": "s"}
    client.create_session(**where)
    first = client.append_event(**where, event={"author": "a"}, if_match=0)
    again = client.append_event(**where, event=first.event, if_match=0)
    assert again.replayed and again.revision == first.revision
    assert len(client.get_session(**where).events) == 1


def test_batches_and_removals(client, app_name):
    where = {"app_name": app_name, "user_id": "ada", "session_id": "b1"}
    client.create_session(**where, state={"step": 0})
    events = [
        {"author": "user", "actions": {"stateDelta": {"step": 1}}},
        {"author": "model", "actions": {"stateDelta": {"step": 2}}},
    ]
    stored = client.append_events(**where, events=events, if_match=0)
    assert stored.revision == 2 and not stored.replayed
    assert all(event["id"] for event in stored.events)  # ids given before sending
    again = client.append_events(**where, events=stored.events)
    assert again.replayed and again.events == stored.events
    with pytest.raises(StaleSessionError):
        client.append_events(**where, events=[{"author": "x"}], if_match=0)

    removed = client.remove_events(**where, last=1, if_match=2)
    assert removed.removed == 1 and removed.session.revision == 3
    assert removed.session.state == {"step": 1}
    with pytest.raises(StaleSessionError):
        client.remove_events(**where, if_match=2)
    kept = client.remove_events(**where, after=stored.events[0]["id"])
    assert kept.removed == 0 and kept.session.revision == 3
    assert client.remove_events(**where).session.state == {"step": 0}
    assert client.list_events(**where).events == []


def test_an_empty_identifier_is_refused_before_anything_is_sent(client, app_name):
    """`.../sessions/` is the list's URL: an empty id must not reach it."""
    with pytest.raises(ValueError, match="session_id must not be empty"):
        client.get_session(app_name=app_name, user_id="u", session_id="")
    with pytest.raises(ValueError, match="session_id must not be empty"):
        client.delete_session(app_name=app_name, user_id="u", session_id="")


def test_base_url_falls_back_to_the_environment(kind, monkeypatch, base_url, app_name):
    monkeypatch.setenv("SESSION_STATE_BASE_URL", base_url)
    with open_client(kind) as client:
        assert client.get_app_state(app_name=app_name) == {}


def test_a_refused_large_body_leaves_the_client_usable(kind, tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'limit.db'}"
    server = ServerProcess(url, SESSION_STATE_MAX_BODY_BYTES="10000").start()
    try:
        with open_client(kind, base_url=server.base_url, max_retries=0) as client:
            client.create_session(app_name="a", user_id="u", session_id="s")
            for size in (20_000, 5_000_000):  # answered before the body was read
                with pytest.raises(PayloadTooLargeError):
                    client.append_event(
                        app_name="a", user_id="u", session_id="s", event={"author": "x" * size}
                    )
                appended = client.append_event(
                    app_name="a", user_id="u", session_id="s", event={"author": "a"}
                )
                assert appended.persisted
    finally:
        server.stop()


def test_a_stream_of_a_missing_session_is_not_found_on_both_clients(client, app_name):
    # Following live sessions: tests/test_live_streams.py (both clients, a drop resumed).
    with pytest.raises(NotFoundError):
        list(client.stream_events(app_name=app_name, user_id="u", session_id="missing"))


def test_every_public_method_is_exercised_on_both_clients():
    """Every method of the clients is called above by a test that runs on
    both (a test taking `client` or opening one by `kind`)."""
    called: set[str] = set()
    for test in ast.parse(Path(__file__).read_text()).body:
        if not isinstance(test, ast.FunctionDef) or not test.name.startswith("test_"):
            continue
        if not {"client", "kind"} & {argument.arg for argument in test.args.args}:
            continue
        for node in ast.walk(test):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("client", "offline")
            ):
                called.add(node.attr)
    public = {
        name
        for name, member in vars(SessionStateClient).items()
        if not name.startswith("_") and inspect.isfunction(member)
    }
    # close: called as each `with` block of the tests ends.
    assert public - {"close"} <= called, sorted(public - {"close"} - called)
    assert len(public) == 35


# -- both clients side by side ---------------------------------------------------


async def test_one_async_client_serves_many_concurrent_tasks(base_url, app_name):
    async with AsyncSessionStateClient(base_url=base_url) as client:
        await client.create_session(app_name=app_name, user_id="u", session_id="s")
        results = await asyncio.gather(
            *(
                client.append_event(
                    app_name=app_name, user_id="u", session_id="s", event={"author": "a"}
                )
                for _ in range(30)
            )
        )
        assert sorted(result.revision for result in results) == list(range(1, 31))
        with pytest.raises(NotFoundError):
            await client.get_session(app_name=app_name, user_id="u", session_id="missing")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_connection_errors_name_the_request_on_both_clients():
    """A dead port: one readable line naming the method and the URL tried,
    the same on both clients (no repr of the transport's internals)."""
    base = f"http://127.0.0.1:{_free_port()}"
    url = f"{base}/apps/my-app/users/ada/sessions/s1"
    errors = []
    for kind in CLIENTS:
        with (
            open_client(kind, base_url=base, max_retries=0) as client,
            pytest.raises(APIConnectionError) as raised,
        ):
            client.get_session(app_name="my-app", user_id="ada", session_id="s1")
        errors.append(raised.value)
    for error in errors:
        assert str(error) == f"GET {url}: could not connect (Connection refused)"


def test_timeouts_name_the_request_on_both_clients():
    """A server that accepts and never answers: a timeout naming what was
    awaited, on both clients."""
    errors = []
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        base = f"http://127.0.0.1:{silent.getsockname()[1]}"
        for kind in CLIENTS:
            with (
                open_client(kind, base_url=base, max_retries=0, timeout=0.3) as client,
                pytest.raises(APIConnectionError) as raised,
            ):
                client.get_app_state(app_name="my-app")
            errors.append(raised.value)
    for error in errors:
        assert str(error) == f"GET {base}/apps/my-app/state: timed out waiting for the answer"
