"""SessionStateSession against the OpenAI Agents SDK's own SQLiteSession (the
reference): the same calls on both give the same results, on each backend of
the server; two processes adding or popping at once lose nothing and keep
order; items round-trip exactly; each item is one event of the documented
shape."""

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents import SessionSettings, SQLiteSession
from agents.memory import Session

from session_state_client import AsyncSessionStateClient, PayloadTooLargeError, ValidationError
from session_state_client.openai_agents import SessionStateSession
from tests.client.openai_stores import Stores, finish, run_worker
from tests.conftest import ServerProcess

USER = {"role": "user", "content": "Book a table for two ☀ 𝄞"}
CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "book",
    "arguments": json.dumps({"people": 2, "when": "19:30"}),
    "status": "completed",
}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "booked \u0001 ok"}
ANSWER = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [
        {
            "type": "output_text",
            "text": "Done.",
            "annotations": [],
            "logprobs": [{"token": "Done", "logprob": -0.1, "big": 2**70, "tiny": 1e-300}],
        }
    ],
}
DEAD_ADDRESS = "http://127.0.0.1:9"  # never connected to
REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": None}


@pytest.fixture(params=["reference", "sqlite", "postgresql"])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    server = None
    if request.param != "reference":
        server = request.getfixturevalue(f"{request.param}_server")
    opened = Stores(request.param, tmp_path, server)
    yield opened
    await opened.close()


async def scenario(session: Session) -> list[Any]:
    """Every call of the protocol, edge cases included; what each returned."""
    seen: list[Any] = [await session.get_items(), await session.pop_item()]
    await session.clear_session()  # never written to
    await session.add_items([])
    await session.add_items([USER])
    await session.add_items([CALL, OUTPUT, REASONING, ANSWER])
    seen += [
        await session.get_items(),
        await session.get_items(limit=2),
        await session.get_items(limit=0),
        await session.get_items(limit=-1),
        await session.get_items(limit=100),
        await session.pop_item(),
        await session.get_items(),
    ]
    await session.add_items([{"role": "user", "content": "x"}, {"role": "user", "content": "y"}])
    seen += [await session.pop_item(), await session.pop_item(), await session.get_items(limit=1)]
    await session.clear_session()
    seen += [await session.get_items(), await session.pop_item()]
    await session.add_items([USER])
    seen.append(await session.get_items())
    return seen


@pytest.fixture(scope="module")
def reference_results(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """The scenario on the SDK's SQLiteSession."""
    session = SQLiteSession("reference", tmp_path_factory.mktemp("reference") / "ref.db")
    try:
        return asyncio.run(scenario(session))
    finally:
        session.close()


async def test_every_call_answers_as_the_sdk_sqlite_session_does(
    stores: Stores, reference_results: list[Any]
) -> None:
    results = await scenario(stores.open("conv"))
    assert results == reference_results
    # Spot checks, so that the comparison cannot pass on two wrong answers.
    assert results[0] == [] and results[1] is None
    assert results[2] == [USER, CALL, OUTPUT, REASONING, ANSWER]
    assert results[3] == [REASONING, ANSWER]
    assert results[7] == ANSWER


async def test_sessions_are_separate_and_a_second_reader_sees_the_same(stores: Stores) -> None:
    first, other = stores.open("one"), stores.open("two")
    await first.add_items([USER, ANSWER])
    await other.add_items([CALL])
    assert await stores.open("one").get_items() == [USER, ANSWER]
    assert await stores.open("two").get_items() == [CALL]


async def test_session_settings_limit_is_the_default_limit(stores: Stores) -> None:
    session = stores.open("limited", SessionSettings(limit=2))
    await session.add_items([USER, CALL, OUTPUT])
    assert await session.get_items() == [CALL, OUTPUT]
    assert await session.get_items(limit=3) == [USER, CALL, OUTPUT]


async def test_a_long_history_is_read_whole_and_by_limit(stores: Stores) -> None:
    session = stores.open("long")
    items = [{"role": "user", "content": f"m{n}"} for n in range(2500)]
    await session.add_items(items)
    assert await session.get_items() == items
    assert await session.get_items(limit=1200) == items[-1200:]


async def test_two_processes_adding_at_once_lose_nothing_and_keep_order(stores: Stores) -> None:
    batches = 25
    workers = [run_worker(stores, "shared", "add", name, str(batches)) for name in ("p", "q")]
    for worker in workers:
        finish(worker)
    contents = [item["content"] for item in await stores.open("shared").get_items()]
    assert len(contents) == 2 * batches * 2
    for name in ("p", "q"):
        mine = [content for content in contents if content.startswith(f"{name}-")]
        expected = [f"{name}-{batch}-{part}" for batch in range(batches) for part in "ab"]
        assert mine == expected
    # Each add_items call's items stay together.
    for first, second in zip(contents[::2], contents[1::2], strict=True):
        assert (first[:-1], first[-1], second[-1]) == (second[:-1], "a", "b")


async def test_two_processes_popping_at_once_each_take_different_items(stores: Stores) -> None:
    items = [{"role": "user", "content": f"m{n}"} for n in range(40)]
    await stores.open("pops").add_items(items)
    poppers = [run_worker(stores, "pops", "pop") for _ in range(2)]
    popped = [finish(popper) for popper in poppers]
    everything = popped[0] + popped[1]
    assert sorted(item["content"] for item in everything) == sorted(i["content"] for i in items)
    for taken in popped:  # each popper took the newest first
        positions = [items.index(item) for item in taken]
        assert positions == sorted(positions, reverse=True)
    assert await stores.open("pops").get_items() == []


async def test_pops_racing_adds_never_take_an_item_twice_or_lose_one(stores: Stores) -> None:
    session = stores.open("race")
    await session.add_items([{"role": "user", "content": "seed"}])
    adder = run_worker(stores, "race", "add", "w", "30")
    popped: list[Any] = []
    while adder.poll() is None or len(popped) < 5:
        found = await session.pop_item()
        if found is not None:
            popped.append(found)
        await asyncio.sleep(0.005)
    finish(adder)
    remaining = await session.get_items()
    added = ["seed"] + [f"w-{batch}-{part}" for batch in range(30) for part in "ab"]
    taken = [item["content"] for item in popped]
    assert len(set(taken)) == len(taken)
    assert sorted(taken + [item["content"] for item in remaining]) == sorted(added)
    # What is left is in the order it was added.
    left = [item["content"] for item in remaining]
    assert left == [content for content in added if content in set(left)]


# -- what only the server's session does -----------------------------------------


@pytest.fixture
async def server_session(server: ServerProcess) -> AsyncIterator[SessionStateSession]:
    session = SessionStateSession(
        f"s-{uuid.uuid4().hex[:8]}", app_name="agents-app", user_id="ann", base_url=server.base_url
    )
    yield session
    await session.close()


async def test_each_item_is_one_event_of_the_documented_shape(
    server_session: SessionStateSession,
) -> None:
    await server_session.add_items([USER, CALL, OUTPUT, ANSWER])
    events = [
        event
        async for event in server_session.client.iter_events(
            app_name="agents-app", user_id="ann", session_id=server_session.session_id
        )
    ]
    assert [event["author"] for event in events] == ["user", "assistant", "tool", "assistant"]
    assert [event["item"] for event in events] == [USER, CALL, OUTPUT, ANSWER]
    assert {event["invocationId"] for event in events} == {"openai-agents"}
    assert all(isinstance(event["id"], str) and event["timestamp"] > 0 for event in events)


async def test_an_item_appended_with_an_older_time_stays_the_latest(
    server_session: SessionStateSession,
) -> None:
    """As the SDK's own sessions order by insertion (its 0.25 suite's
    backdated-append test): another writer's event carrying a time in the
    past (a clock behind, another time zone) is still the newest item."""
    items = [{"role": "user", "content": str(number)} for number in range(1, 4)]
    await server_session.add_items(items[:2])
    await server_session.client.append_event(
        app_name="agents-app",
        user_id="ann",
        session_id=server_session.session_id,
        event={
            "author": "user",
            "invocationId": "openai-agents",
            "timestamp": 946684800.0,  # 2000-01-01
            "item": items[2],
        },
    )
    assert await server_session.get_items() == items
    assert await server_session.get_items(limit=1) == items[-1:]
    assert await server_session.pop_item() == items[-1]
    assert await server_session.get_items() == items[:-1]


async def test_a_retried_add_is_stored_once(server: ServerProcess) -> None:
    """add_items sends its events with ids made before the first attempt: a
    request repeated after a lost answer is recognised by the server."""
    async with AsyncSessionStateClient(base_url=server.base_url) as client:
        await client.create_session(app_name="agents-app", user_id="ann", session_id="retry")
        events = [{"id": "i1", "author": "user", "item": USER}]
        first = await client.append_events(
            app_name="agents-app", user_id="ann", session_id="retry", events=events
        )
        again = await client.append_events(
            app_name="agents-app", user_id="ann", session_id="retry", events=events
        )
        assert not first.replayed and again.replayed
        assert again.events == first.events
        session = SessionStateSession("retry", app_name="agents-app", user_id="ann", client=client)
        assert await session.get_items() == [USER]


async def test_an_item_the_server_refuses_stores_nothing_of_its_batch(
    server_session: SessionStateSession,
) -> None:
    # The API refuses NUL in strings (SQLite would store it): a clear error,
    # and the items sent with it are not stored either.
    with pytest.raises(ValidationError):
        await server_session.add_items([USER, {"role": "user", "content": "nul \u0000"}])
    assert await server_session.get_items() == []


async def test_a_cancelled_add_still_completes(server_session: SessionStateSession) -> None:
    task = asyncio.create_task(server_session.add_items([USER, ANSWER]))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await server_session.get_items() == [USER, ANSWER]


def _requests_answered(server: ServerProcess, status: int) -> int:
    """How many appends (single or batch: add_items of one item is a single
    append) the server answered with `status` (its metrics)."""
    metrics = httpx.get(f"{server.base_url}/metrics").text
    found = re.findall(
        r'^session_state_http_requests_total\{method="POST",'
        r'route="/apps/\{app_name\}/users/\{user_id\}/sessions/\{session_id\}/events(?:/batch)?",'
        rf'status="{status}"\}} (\S+)$',
        metrics,
        re.M,
    )
    return sum(int(float(count)) for count in found)


async def test_a_cancelled_add_that_fails_raises_the_cancellation(
    server: ServerProcess, server_session: SessionStateSession
) -> None:
    """As the SDK's sessions (`_await_mutation`): the write runs to its end
    and fails, and the caller who cancelled gets the cancellation."""
    refused = [{"role": "user", "content": "nul \u0000"}]
    await server_session.add_items([USER])  # the session exists: one request follows
    before = _requests_answered(server, 422)
    task = asyncio.create_task(server_session.add_items(refused))
    await asyncio.sleep(0)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _requests_answered(server, 422) == before + 1  # the write was sent and refused
    with pytest.raises(ValidationError):  # uncancelled, the same write's error
        await server_session.add_items(refused)
    assert await server_session.get_items() == [USER]


@pytest.mark.parametrize("kind", ["reference", "adapter"])
async def test_session_settings_given_as_a_dict_are_coerced_as_the_sdk_does(kind: str) -> None:
    opened: list[Any] = []

    def open_session(settings: Any) -> Any:
        if kind == "reference":
            session: Any = SQLiteSession("s", session_settings=settings)
        else:
            session = SessionStateSession(
                "s", app_name="a", user_id="u", session_settings=settings, base_url=DEAD_ADDRESS
            )
        opened.append(session)
        return session

    assert open_session({"limit": 2}).session_settings == SessionSettings(limit=2)
    assert open_session(None).session_settings == SessionSettings()
    with pytest.raises(TypeError, match=r"^Unknown session settings: colour, size$"):
        open_session({"limit": 2, "size": 1, "colour": "red"})
    with pytest.raises(TypeError, match=r"^session must be a SessionSettings instance or a dict"):
        open_session(2)
    assert len(opened) == 2
    for session in opened:
        if kind == "reference":
            session.close()
        else:
            await session.close()


async def test_a_dict_limit_bounds_get_items(stores: Stores) -> None:
    session = stores.open(f"s-{uuid.uuid4().hex[:8]}", {"limit": 2})
    await session.add_items([USER, CALL, OUTPUT])
    assert await session.get_items() == [CALL, OUTPUT]
    assert await session.get_items(limit=3) == [USER, CALL, OUTPUT]


@pytest.mark.parametrize("kind", ["reference", "adapter"])
async def test_a_closed_session_refuses_every_call_as_the_sdks_do(
    kind: str, server: ServerProcess, tmp_path: Path
) -> None:
    session: Any
    if kind == "reference":
        session = SQLiteSession("closing", tmp_path / "closing.db")
        session.close()
    else:
        session = SessionStateSession(
            f"s-{uuid.uuid4().hex[:8]}", app_name="a", user_id="u", base_url=server.base_url
        )
        await session.add_items([USER])
        await session.close()
        await session.close()  # again: nothing happens
    closed = f"^{type(session).__name__} is closed$"
    for call in (
        session.get_items(),
        session.add_items([USER]),
        session.add_items([]),
        session.pop_item(),
        session.clear_session(),
    ):
        with pytest.raises(RuntimeError, match=closed):
            await call


async def test_a_session_on_a_given_client_stays_usable_after_close(server: ServerProcess) -> None:
    async with AsyncSessionStateClient(base_url=server.base_url) as client:
        session_id = f"s-{uuid.uuid4().hex[:8]}"
        session = SessionStateSession(session_id, app_name="a", user_id="u", client=client)
        await session.add_items([USER])
        await session.close()
        await session.add_items([ANSWER])
        assert await session.get_items() == [USER, ANSWER]
        assert (await client.get_session(app_name="a", user_id="u", session_id=session_id)).id


@pytest.mark.parametrize("session_id", [None, 42, {"$ne": None}, ["s"]])
def test_a_session_id_that_is_not_a_string_is_a_type_error(session_id: Any) -> None:
    with pytest.raises(TypeError, match=r"^session_id must be a string$"):
        SessionStateSession(session_id, app_name="a", user_id="u", base_url=DEAD_ADDRESS)


async def test_the_empty_session_id_is_refused_where_sqlite_session_takes_it(
    tmp_path: Path,
) -> None:
    """A documented difference (docs/clients.md): the server has no session named ''."""
    reference = SQLiteSession("", tmp_path / "empty.db")
    await reference.add_items([USER])
    assert await reference.get_items() == [USER]
    reference.close()
    with pytest.raises(ValueError, match=r"^session_id must not be empty"):
        SessionStateSession("", app_name="a", user_id="u", base_url=DEAD_ADDRESS)


def test_the_adapter_is_a_session_of_the_sdk() -> None:
    from agents.memory import Session as SessionProtocol

    session = SessionStateSession("x", app_name="a", user_id="u", base_url="http://127.0.0.1:9")
    assert isinstance(session, SessionProtocol)
    asyncio.run(session.close())


async def test_histories_larger_than_a_response_are_read_page_by_page(tmp_path: Path) -> None:
    """get_items reads the session in one request when it fits in a response,
    and falls back to the events pages when it does not."""
    server = ServerProcess(
        f"sqlite+aiosqlite:///{tmp_path / 'small.db'}",
        SESSION_STATE_MAX_EVENT_BYTES="1024",
        SESSION_STATE_MAX_STATE_BYTES="1024",
        SESSION_STATE_MAX_RESPONSE_BYTES="70000",
    ).start()
    try:
        async with SessionStateSession(
            "long", app_name="agents-app", user_id="ann", base_url=server.base_url
        ) as session:
            items = [
                {"role": "user", "content": f"message {n:04} " + "x" * 100} for n in range(1500)
            ]
            for start in range(0, len(items), 250):  # each answer within the response limit
                await session.add_items(items[start : start + 250])
            assert await session.get_items() == items
            assert await session.get_items(limit=1200) == items[-1200:]
            assert await session.get_items(limit=3) == items[-3:]
    finally:
        server.stop()


async def test_events_that_are_not_items_are_skipped_and_do_not_count(
    server_session: SessionStateSession,
) -> None:
    await server_session.add_items([USER])
    await server_session.client.append_event(
        app_name="agents-app",
        user_id="ann",
        session_id=server_session.session_id,
        event={"author": "adk-agent", "content": {"parts": [{"text": "not an item"}]}},
    )
    await server_session.add_items([ANSWER])
    assert await server_session.get_items() == [USER, ANSWER]
    assert await server_session.get_items(limit=2) == [USER, ANSWER]
    assert await server_session.pop_item() == ANSWER
    # The newest event is not an item: dropped, as SQLiteSession drops rows
    # it cannot read, and the item before it is popped.
    await server_session.client.append_event(
        app_name="agents-app",
        user_id="ann",
        session_id=server_session.session_id,
        event={"author": "adk-agent"},
    )
    assert await server_session.pop_item() == USER
    assert await server_session.get_items() == []


async def test_add_items_larger_than_a_request_goes_in_several(tmp_path: Path) -> None:
    """Items that fit one by one but not together in one request body are
    sent in several requests, in order; an item too large alone is refused
    with the server's error."""
    server = ServerProcess(
        f"sqlite+aiosqlite:///{tmp_path / 'small.db'}", SESSION_STATE_MAX_BODY_BYTES="100000"
    ).start()
    try:
        async with SessionStateSession(
            "big", app_name="agents-app", user_id="ann", base_url=server.base_url
        ) as session:
            items = [{"role": "user", "content": f"{n} " + "x" * 30_000} for n in range(10)]
            await session.add_items(items)
            assert await session.get_items() == items
            with pytest.raises(PayloadTooLargeError):
                await session.add_items([{"role": "user", "content": "y" * 120_000}])
            assert await session.get_items() == items
    finally:
        server.stop()
