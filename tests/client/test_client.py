"""SessionStateClient and AsyncSessionStateClient against a real server."""

import asyncio
import time

import pytest

from session_state_client import (
    AlreadyExistsError,
    APIConnectionError,
    AsyncSessionStateClient,
    BadRequestError,
    EventIdConflictError,
    NotFoundError,
    PayloadTooLargeError,
    SessionStateClient,
    StaleSessionError,
    ValidationError,
)
from tests.conftest import ServerProcess


def test_every_method_of_the_sync_client(base_url, app_name):
    with SessionStateClient(base_url=base_url) as client:
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


async def test_every_method_of_the_async_client(base_url, app_name):
    async with AsyncSessionStateClient(base_url=base_url) as client:
        created = await client.create_session(app_name=app_name, user_id="bob")
        appended = await client.append_event(
            app_name=app_name,
            user_id="bob",
            session_id=created.id,
            event={"author": "user", "content": {"parts": [{"text": "I like owls."}]}},
        )
        assert appended.revision == 1
        session = await client.get_session(
            app_name=app_name, user_id="bob", session_id=created.id, num_recent_events=0
        )
        assert session.events == []
        patched = await client.patch_state(
            app_name=app_name, user_id="bob", session_id=created.id, state_delta={"x": 1}
        )
        assert patched.state == {"x": 1}
        events = [
            event
            async for event in client.iter_events(
                app_name=app_name, user_id="bob", session_id=created.id, page_size=1
            )
        ]
        assert len(events) == 2
        assert (await client.get_user_state(app_name=app_name, user_id="bob")) == {}
        assert (await client.get_app_state(app_name=app_name)) == {}
        assert (await client.list_sessions(app_name=app_name)).sessions[0].id == created.id

        ingested = await client.add_session_to_memory(
            app_name=app_name, user_id="bob", session_id=created.id
        )
        assert ingested.memories_added == 1
        found = await client.search_memory(app_name=app_name, user_id="bob", query="owls")
        assert found.memories[0].content.parts[0].text == "I like owls."
        await client.forget_user_memory(app_name=app_name, user_id="bob")
        assert not (
            await client.search_memory(app_name=app_name, user_id="bob", query="owls")
        ).memories
        await client.delete_session(
            app_name=app_name, user_id="bob", session_id=created.id, delete_memories=True
        )
        with pytest.raises(NotFoundError):
            await client.delete_session(app_name=app_name, user_id="bob", session_id=created.id)


def test_erasing_a_user_then_the_app(base_url, app_name):
    with SessionStateClient(base_url=base_url) as client:
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


async def test_the_async_client_erases_too(base_url, app_name):
    async with AsyncSessionStateClient(base_url=base_url) as client:
        await client.create_session(app_name=app_name, user_id="ada", session_id="s")
        await client.erase_user(app_name=app_name, user_id="ada")
        await client.create_session(app_name=app_name, user_id="bob", session_id="s")
        await client.erase_app(app_name=app_name)
        assert not (await client.list_sessions(app_name=app_name)).sessions


def test_expiry_and_fork_through_the_sync_client(base_url, app_name):
    with SessionStateClient(base_url=base_url) as client:
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
        with pytest.raises(AlreadyExistsError):
            client.fork_session(
                app_name=app_name, user_id="ada", session_id="s", new_session_id="s-b"
            )
        with pytest.raises(ValidationError):
            client.fork_session(
                app_name=app_name, user_id="ada", session_id="s", up_to_event_id="nope"
            )


async def test_expiry_and_fork_through_the_async_client(base_url, app_name):
    async with AsyncSessionStateClient(base_url=base_url) as client:
        await client.create_session(app_name=app_name, user_id="bob", session_id="s")
        await client.append_event(
            app_name=app_name,
            user_id="bob",
            session_id="s",
            event={"author": "a", "actions": {"stateDelta": {"k": 1}}},
        )
        fork = await client.fork_session(app_name=app_name, user_id="bob", session_id="s")
        assert fork.id != "s" and fork.state == {"k": 1} and fork.revision == 1
        assert fork.expire_time is None
        expiring = await client.set_expiry(
            app_name=app_name, user_id="bob", session_id=fork.id, ttl_seconds=120
        )
        assert expiring.expire_time is not None and expiring.revision == 1
        # An expiry in the past is refused: the session would be gone at once.
        with pytest.raises(ValidationError):
            await client.set_expiry(
                app_name=app_name, user_id="bob", session_id=fork.id, expire_time=1.0
            )


def test_iterators_walk_every_page(base_url, app_name):
    with SessionStateClient(base_url=base_url) as client:
        for index in range(7):
            client.create_session(
                app_name=app_name, user_id=f"u{index % 2}", session_id=f"s{index}"
            )
        ids = [session.id for session in client.iter_sessions(app_name=app_name, page_size=2)]
        assert sorted(ids) == [f"s{index}" for index in range(7)]
        mine = list(client.iter_sessions(app_name=app_name, user_id="u0", page_size=3))
        assert sorted(session.id for session in mine) == ["s0", "s2", "s4", "s6"]


def test_errors_map_to_the_exception_tree(base_url, app_name):
    with SessionStateClient(base_url=base_url) as client:
        client.create_session(app_name=app_name, user_id="u", session_id="s")
        with pytest.raises(AlreadyExistsError) as exists:
            client.create_session(app_name=app_name, user_id="u", session_id="s")
        assert exists.value.status_code == 409
        event = {"id": "e1", "author": "a"}
        client.append_event(app_name=app_name, user_id="u", session_id="s", event=event)
        with pytest.raises(EventIdConflictError):
            client.append_event(
                app_name=app_name, user_id="u", session_id="s", event={**event, "author": "b"}
            )
        with pytest.raises(StaleSessionError) as stale:
            client.append_event(
                app_name=app_name, user_id="u", session_id="s", event={"author": "a"}, if_match=0
            )
        assert stale.value.body["code"] == "stale_session"
        with pytest.raises(ValidationError) as invalid:
            client.create_session(app_name=app_name, user_id="u", session_id=" bad ")
        assert invalid.value.body["errors"]
        with pytest.raises(BadRequestError):
            client.list_sessions(app_name=app_name, page_token="not-a-token")
    with (
        SessionStateClient(base_url="http://127.0.0.1:9", max_retries=0) as offline,
        pytest.raises(APIConnectionError),
    ):
        offline.get_app_state(app_name=app_name)


def test_a_retried_append_is_stored_once(base_url, app_name):
    with SessionStateClient(base_url=base_url) as client:
        client.create_session(app_name=app_name, user_id="u", session_id="s")
        first = client.append_event(
            app_name=app_name, user_id="u", session_id="s", event={"author": "a"}, if_match=0
        )
        again = client.append_event(
            app_name=app_name, user_id="u", session_id="s", event=first.event, if_match=0
        )
        assert again.replayed and again.revision == first.revision
        assert len(client.get_session(app_name=app_name, user_id="u", session_id="s").events) == 1


# Retries, timeouts, headers and errors on both clients: test_contract.py.


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


async def test_a_refused_large_body_leaves_the_async_client_usable(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'limit.db'}"
    server = ServerProcess(url, SESSION_STATE_MAX_BODY_BYTES="10000").start()
    try:
        async with AsyncSessionStateClient(base_url=server.base_url, max_retries=0) as client:
            await client.create_session(app_name="a", user_id="u", session_id="s")
            for size in (20_000, 5_000_000):  # answered before the body was read
                with pytest.raises(PayloadTooLargeError):
                    await client.append_event(
                        app_name="a", user_id="u", session_id="s", event={"author": "x" * size}
                    )
                appended = await client.append_event(
                    app_name="a", user_id="u", session_id="s", event={"author": "a"}
                )
                assert appended.persisted
    finally:
        server.stop()


def test_base_url_falls_back_to_the_environment(monkeypatch, base_url, app_name):
    monkeypatch.setenv("SESSION_STATE_BASE_URL", base_url)
    with SessionStateClient() as client:
        assert client.get_app_state(app_name=app_name) == {}


def test_batches_and_removals_with_the_sync_client(base_url, app_name):
    where = {"app_name": app_name, "user_id": "ada", "session_id": "b1"}
    with SessionStateClient(base_url=base_url) as client:
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


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_connection_errors_name_the_request_on_both_clients():
    """A dead port: one readable line naming the method and the URL tried,
    the same on both clients (no repr of the transport's internals)."""
    base = f"http://127.0.0.1:{_free_port()}"
    url = f"{base}/apps/my-app/users/ada/sessions/s1"
    with (
        SessionStateClient(base_url=base, max_retries=0) as client,
        pytest.raises(APIConnectionError) as sync_error,
    ):
        client.get_session(app_name="my-app", user_id="ada", session_id="s1")

    async def asynchronously() -> None:
        async with AsyncSessionStateClient(base_url=base, max_retries=0) as client:
            await client.get_session(app_name="my-app", user_id="ada", session_id="s1")

    with pytest.raises(APIConnectionError) as async_error:
        asyncio.run(asynchronously())
    for error in (sync_error.value, async_error.value):
        assert str(error) == f"GET {url}: could not connect (Connection refused)"


def test_timeouts_name_the_request_on_both_clients():
    """A server that accepts and never answers: a timeout naming what was
    awaited, on both clients."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        base = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with (
            SessionStateClient(base_url=base, max_retries=0, timeout=0.3) as client,
            pytest.raises(APIConnectionError) as sync_error,
        ):
            client.get_app_state(app_name="my-app")

        async def asynchronously() -> None:
            async with AsyncSessionStateClient(base_url=base, max_retries=0, timeout=0.3) as client:
                await client.get_app_state(app_name="my-app")

        with pytest.raises(APIConnectionError) as async_error:
            asyncio.run(asynchronously())
    for error in (sync_error.value, async_error.value):
        assert str(error) == f"GET {base}/apps/my-app/state: timed out waiting for the answer"


def test_an_empty_identifier_is_refused_before_anything_is_sent(base_url, app_name):
    """`.../sessions/` is the list's URL: an empty id must not reach it."""
    with SessionStateClient(base_url=base_url) as client:
        for call in (
            lambda: client.get_session(app_name=app_name, user_id="u", session_id=""),
            lambda: client.delete_session(app_name=app_name, user_id="u", session_id=""),
        ):
            with pytest.raises(ValueError, match="session_id must not be empty"):
                call()

    async def asynchronously() -> None:
        async with AsyncSessionStateClient(base_url=base_url) as client:
            with pytest.raises(ValueError, match="session_id must not be empty"):
                await client.get_session(app_name=app_name, user_id="u", session_id="")

    asyncio.run(asynchronously())
