"""Group commit: appends that arrive together are sent to PostgreSQL in one
statement (app/db/append_batches.py), and each request still gets its own
answer: one stale, conflicting, oversized or misdirected append never fails
or changes its neighbours. On SQLite, where each append goes by itself, the
same requests get the same answers."""

import asyncio

import asyncpg
import pytest

from session_state.config import Settings
from session_state.db.append_batches import AppendBatcher
from tests.conftest import _truncate, asgi_client, run_blocking
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


async def test_a_session_held_by_another_transaction_delays_only_its_own_appends(postgres_url):
    """A batch does not wait for a session that another transaction holds (a
    fork copying its history, say): the other appends sent with it are
    stored and answered at once, and the held session's append is stored
    once the lock goes."""
    run_blocking(_truncate(postgres_url))
    async with asgi_client(Settings(database_url=postgres_url)) as http:
        for name in ["held"] + [f"free{index}" for index in range(8)]:
            await http.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": name})
        holder = await asyncpg.connect(
            postgres_url.replace("postgresql+asyncpg://", "postgresql://")
        )
        try:
            locking = holder.transaction()
            await locking.start()
            await holder.execute(
                "SELECT 1 FROM sessions WHERE app_name = $1 AND id = 'held' FOR UPDATE", APP
            )
            event = {"author": "agent", "actions": {"stateDelta": {"app:any": 1}}}
            held = asyncio.ensure_future(http.post(f"{path('held')}/events", json=event))
            free = [
                http.post(f"{path(f'free{index % 8}')}/events", json=event) for index in range(24)
            ]
            # Well within the database timeout (5 s) the held session would
            # otherwise have made every append in its batch wait for.
            responses = await asyncio.wait_for(asyncio.gather(*free), timeout=3)
            assert [response.status_code for response in responses] == [201] * 24
            assert not held.done()
            await locking.commit()
        finally:
            await holder.close()
        assert (await held).status_code == 201
        session = (await http.get(path("held"))).json()
        assert len(session["events"]) == 1


# -- the batcher itself, with statements the test controls ---------------------


class Statements:
    """Stands in for the database's statements: records what each batch and
    each lone send carried, and answers when the test lets it."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.alone: list[str] = []
        self.release = asyncio.Event()
        self.held: set[str] = set()
        self.batch_error: Exception | None = None

    async def run_batch(self, items: list[str]) -> list[str | None]:
        self.batches.append(items)
        await self.release.wait()
        if self.batch_error is not None:
            raise self.batch_error
        return [None if item in self.held else f"stored {item}" for item in items]

    async def run_one(self, item: str) -> str:
        self.alone.append(item)
        return f"stored alone {item}"


class OneItemsFault(Exception):
    """An error one item of a batch may have caused."""


def batcher(statements: Statements, *, max_wait: float = 5.0) -> AppendBatcher[str, str]:
    return AppendBatcher(
        run_batch=statements.run_batch,
        run_one=statements.run_one,
        session_of=lambda item: item.split("/")[0],
        runs_singly=lambda error: isinstance(error, OneItemsFault),
        timed_out=lambda: TimeoutError("no batch took it"),
        max_items=64,
        max_in_flight=1,
        max_wait=max_wait,
    )


async def test_a_sessions_appends_go_in_separate_batches_in_arrival_order():
    statements = Statements()
    appends = batcher(statements)
    first = asyncio.ensure_future(appends.submit("a/1"))
    await asyncio.sleep(0.01)  # the first batch is at the database
    rest = [asyncio.ensure_future(appends.submit(item)) for item in ("a/2", "b/1", "a/3", "c/1")]
    await asyncio.sleep(0)
    statements.release.set()
    answers = await asyncio.gather(first, *rest)
    assert answers == [f"stored {item}" for item in ("a/1", "a/2", "b/1", "a/3", "c/1")]
    assert statements.batches == [["a/1"], ["a/2", "b/1", "c/1"], ["a/3"]]


async def test_an_append_whose_session_was_held_is_sent_alone_and_its_neighbours_answered():
    statements = Statements()
    statements.held = {"b/1"}
    statements.release.set()
    appends = batcher(statements)
    answers = await asyncio.gather(*(appends.submit(item) for item in ("a/1", "b/1", "c/1")))
    assert answers == ["stored a/1", "stored alone b/1", "stored c/1"]
    assert statements.alone == ["b/1"]


async def test_a_batch_error_one_append_may_cause_sends_each_alone_and_others_fail_all():
    statements = Statements()
    statements.release.set()
    statements.batch_error = OneItemsFault()
    answers = await asyncio.gather(*(batcher(statements).submit(item) for item in ("a/1", "b/1")))
    assert answers == ["stored alone a/1", "stored alone b/1"]

    statements = Statements()
    statements.release.set()
    statements.batch_error = ConnectionResetError("the database went away")
    appends = batcher(statements)
    answers = await asyncio.gather(
        *(appends.submit(item) for item in ("a/1", "b/1")), return_exceptions=True
    )
    assert [type(answer) for answer in answers] == [ConnectionResetError] * 2
    assert statements.alone == []


async def test_an_append_no_batch_takes_in_time_fails_and_is_never_sent():
    """The wait for a batch is bounded (by the database timeout in the
    store): behind a statement that does not answer, an append fails when
    the bound passes, and it is not sent afterwards."""
    statements = Statements()
    appends = batcher(statements, max_wait=0.2)
    blocked = asyncio.ensure_future(appends.submit("a/1"))
    await asyncio.sleep(0.01)  # the first batch is at the database
    with pytest.raises(TimeoutError, match="no batch took it"):
        await appends.submit("b/1")
    statements.release.set()
    assert await blocked == "stored a/1"
    await asyncio.sleep(0.05)
    assert statements.batches == [["a/1"]]
    assert statements.alone == []


async def test_an_append_whose_request_went_away_before_a_batch_took_it_is_never_sent():
    statements = Statements()
    appends = batcher(statements)
    blocked = asyncio.ensure_future(appends.submit("a/1"))
    await asyncio.sleep(0.01)  # the first batch is at the database
    gone = asyncio.ensure_future(appends.submit("b/1"))
    await asyncio.sleep(0)
    gone.cancel()
    await asyncio.sleep(0)
    statements.release.set()
    await blocked
    await asyncio.sleep(0.05)
    assert statements.batches == [["a/1"]]


async def test_with_batches_off_every_append_is_sent_as_soon_as_it_arrives(postgres_url):
    """SESSION_STATE_APPEND_BATCH_SIZE=1: nothing waits for a batch, so as
    many appends are at the database at once as arrive (here all waiting for
    one app key's row that another transaction holds)."""
    run_blocking(_truncate(postgres_url))
    settings = Settings(database_url=postgres_url, append_batch_size=1)
    count = 6
    async with asgi_client(settings) as http:
        names = [f"alone{index}" for index in range(count)]
        for name in names:
            await http.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": name})
        hot = {"author": "agent", "actions": {"stateDelta": {"app:hot": 0}}}
        assert (await http.post(f"{path(names[0])}/events", json=hot)).status_code == 201
        dsn = postgres_url.replace("postgresql+asyncpg://", "postgresql://")
        holder, observer = await asyncpg.connect(dsn), await asyncpg.connect(dsn)
        try:
            locking = holder.transaction()
            await locking.start()
            await holder.execute(
                "SELECT 1 FROM app_states WHERE app_name = $1 AND key = 'hot' FOR UPDATE", APP
            )
            sent = [
                asyncio.ensure_future(http.post(f"{path(name)}/events", json=hot)) for name in names
            ]
            waiting = 0
            for _ in range(100):
                waiting = await observer.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                    "'session-state' AND wait_event_type = 'Lock' AND datname = current_database()"
                )
                if waiting == count:
                    break
                await asyncio.sleep(0.02)
            assert waiting == count
            await locking.rollback()
            assert [(await response).status_code for response in sent] == [201] * count
        finally:
            await holder.close()
            await observer.close()


async def test_hostile_values_sent_together_are_stored_and_read_back_exactly(database_url):
    """Batched appends carry their JSON as texts cast inside PostgreSQL, not
    through the driver's codec: values that codec handles with care (control characters,
    astral characters, integers past 64 bits, deep nesting) must come back
    the same from a batch as from a lone append (NUL is refused before
    any store, tests/test_hostile_text.py)."""
    values = [
        "control \u0001 inside",
        "\U0001f600 astral",
        2**80,
        -(2**70),
        1.5e300,
        {"a": [[[[1]]]]},
    ]
    async with asgi_client(Settings(database_url=database_url)) as http:
        names = [f"hostile{index}" for index in range(len(values))]
        for name in names:
            await http.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": name})
        responses = await asyncio.gather(
            *(
                http.post(
                    f"{path(name)}/events",
                    json={
                        "author": "agent",
                        "actions": {
                            "stateDelta": {"v": value, f"user:{name}": value, f"app:{name}": value}
                        },
                    },
                )
                for name, value in zip(names, values, strict=True)
            )
        )
        assert [response.status_code for response in responses] == [201] * len(values)
        for name, value in zip(names, values, strict=True):
            state = (await http.get(path(name))).json()["state"]
            assert state["v"] == value
            assert state[f"user:{name}"] == value
            assert state[f"app:{name}"] == value
