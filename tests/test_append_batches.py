"""Group commit: appends that arrive together are sent to PostgreSQL in one
statement (app/sessions/append_batches.py), and each request still gets its own
answer: one stale, conflicting, oversized or misdirected append never fails
or changes its neighbours. On SQLite, where each append goes by itself, the
same requests get the same answers."""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import asyncpg
import httpx
import pytest

from session_state.core.config import Settings
from session_state.sessions.append_batches import AppendBatcher
from tests.conftest import _truncate, asgi_client, run_blocking
from tests.test_observability import _metric

APP = "batches"
USER = "u"
LIMIT = 2048
BIG = "x" * 3000


def path(session_id: str) -> str:
    return f"/apps/{APP}/users/{USER}/sessions/{session_id}"


class BatchSizes:
    """The appends and statements the batch-size histogram counted since it
    was made (its series live as long as the process)."""

    def __init__(self, metrics: str) -> None:
        self.before = metrics

    def since(self, metrics: str) -> tuple[int, int]:
        """(statements, appends) counted since."""
        statements, appends = (
            int(
                _metric(metrics, f"session_state_append_batch_size_{part}")
                - _metric(self.before, f"session_state_append_batch_size_{part}")
            )
            for part in ("count", "sum")
        )
        return statements, appends


async def _backends_waiting_for_a_lock(observer: asyncpg.Connection) -> int:
    waiting: int = await observer.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'session-state' "
        "AND wait_event_type = 'Lock' AND datname = current_database()"
    )
    return waiting


async def _until(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    for _ in range(250):
        if await condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{what}: not within 5 s")


@asynccontextmanager
async def batches_held_at_the_database(
    http: httpx.AsyncClient, postgres_url: str
) -> AsyncIterator[None]:
    """Both batch statements a process runs at once held at the database (each
    carries an append waiting for an app key another transaction locks):
    the appends sent inside wait, and go together in the next batch when
    this ends."""
    held_names = ("gate0", "gate1")
    gate = {"author": "agent", "actions": {"stateDelta": {"app:gate": 1}}}
    for name in held_names:
        created = await http.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": name})
        assert created.status_code == 201
    assert (await http.post(f"{path(held_names[0])}/events", json=gate)).status_code == 201
    dsn = postgres_url.replace("postgresql+asyncpg://", "postgresql://")
    holder, observer = await asyncpg.connect(dsn), await asyncpg.connect(dsn)
    leads: list[asyncio.Future[httpx.Response]] = []
    try:
        locking = holder.transaction()
        await locking.start()
        await holder.execute(
            "SELECT 1 FROM app_states WHERE app_name = $1 AND key = 'gate' FOR UPDATE", APP
        )
        for number, name in enumerate(held_names, start=1):
            leads.append(asyncio.ensure_future(http.post(f"{path(name)}/events", json=gate)))

            async def held(number: int = number) -> bool:
                return await _backends_waiting_for_a_lock(observer) == number

            await _until(held, f"{number} batch statements held")
        yield
        await locking.rollback()
        assert [(await lead).status_code for lead in leads] == [201, 201]
    finally:
        for lead in leads:
            lead.cancel()
        await holder.close()
        await observer.close()


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
            assert created.status_code == 201
            revisions[name] = created.headers["ETag"]
        stored = {"id": "kept", "author": "agent", "timestamp": 1.0}
        for name in ("retried", "conflicting"):
            assert (await http.post(f"{path(name)}/events", json=stored)).status_code == 201
        moved = await http.post(f"{path('stale')}/events", json={"author": "agent"})
        assert moved.status_code == 201
        sizes = BatchSizes((await http.get("/metrics")).text)

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
        statements, appends = sizes.since(after)
        assert appends == len(requests)
        assert statements < appends


async def test_a_sessions_appends_sent_together_are_all_stored(database_url):
    """Appends to one session never share a statement (each goes in a later
    batch), so none is lost, and the state is that of the last one stored."""
    async with asgi_client(Settings(database_url=database_url)) as http:
        for name in ["one"] + [f"o{other}" for other in range(4)]:
            created = await http.post(
                f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": name}
            )
            assert created.status_code == 201
        sizes = BatchSizes((await http.get("/metrics")).text)
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
        if database_url.startswith("postgresql"):
            # Batches formed, and none held two of one's appends.
            statements, appends = sizes.since((await http.get("/metrics")).text)
            assert appends == 60
            assert 30 <= statements < appends


async def test_a_session_held_by_another_transaction_delays_only_its_own_appends(postgres_url):
    """A batch does not wait for a session that another transaction holds (a
    fork copying its history, say): the other appends sent with it are
    stored and answered at once, and the held session's append is stored
    once the lock goes."""
    run_blocking(_truncate(postgres_url))
    # Held statements wait for the test: a generous statement timeout, as
    # the settings fixture's (on a loaded machine 5 s was passed).
    async with asgi_client(Settings(database_url=postgres_url, db_timeout_seconds=30)) as http:
        for name in ["held"] + [f"free{index}" for index in range(8)]:
            created = await http.post(
                f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": name}
            )
            assert created.status_code == 201
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
            async with batches_held_at_the_database(http, postgres_url):
                sizes = BatchSizes((await http.get("/metrics")).text)
                held = asyncio.ensure_future(http.post(f"{path('held')}/events", json=event))
                free = asyncio.gather(
                    *(
                        http.post(f"{path(f'free{index % 8}')}/events", json=event)
                        for index in range(24)
                    )
                )
                await asyncio.sleep(0.2)  # all queued (the counts below prove it)
            # Well within the database timeout (5 s) the held session would
            # otherwise have made every append in its batch wait for.
            responses = await asyncio.wait_for(free, timeout=3)
            assert [response.status_code for response in responses] == [201] * 24
            assert not held.done()
            # The held append went in the first batch, with 8 free ones (25
            # appends in 3 statements, one per session in each).
            assert sizes.since((await http.get("/metrics")).text) == (3, 25)
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
        self.submitted: list[str] = []
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


def _session_of(statements: Statements, item: str) -> str:
    statements.submitted.append(item)  # as the batcher queues it
    return item.split("/")[0]


async def _settled(condition: Callable[[], bool], what: str) -> None:
    """Lets the loop run until `condition` holds."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{what}: never")


def batcher(statements: Statements, *, max_wait: float = 5.0) -> AppendBatcher[str, str]:
    return AppendBatcher(
        run_batch=statements.run_batch,
        run_one=statements.run_one,
        session_of=lambda item: _session_of(statements, item),
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
    await _settled(lambda: statements.batches == [["a/1"]], "the first batch at the database")
    rest = [asyncio.ensure_future(appends.submit(item)) for item in ("a/2", "b/1", "a/3", "c/1")]
    await _settled(lambda: len(statements.submitted) == 5, "all queued")
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
    await _settled(lambda: statements.batches == [["a/1"]], "the first batch at the database")
    with pytest.raises(TimeoutError, match="no batch took it"):
        await appends.submit("b/1")
    statements.release.set()
    assert await blocked == "stored a/1"
    # An append queued after it is sent: the one that timed out is not, before or with it.
    assert await appends.submit("c/1") == "stored c/1"
    assert statements.batches == [["a/1"], ["c/1"]]
    assert statements.alone == []


async def test_an_append_whose_request_went_away_before_a_batch_took_it_is_never_sent():
    statements = Statements()
    appends = batcher(statements)
    blocked = asyncio.ensure_future(appends.submit("a/1"))
    await _settled(lambda: statements.batches == [["a/1"]], "the first batch at the database")
    gone = asyncio.ensure_future(appends.submit("b/1"))
    await _settled(lambda: "b/1" in statements.submitted, "b/1 queued")
    gone.cancel()
    await _settled(gone.done, "b/1 cancelled")
    statements.release.set()
    await blocked
    # An append queued after it is sent: the one that went away is not, before or with it.
    assert await appends.submit("c/1") == "stored c/1"
    assert statements.batches == [["a/1"], ["c/1"]]


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
    # Held statements wait for the test: a generous statement timeout, as
    # the settings fixture's (on a loaded machine 5 s was passed).
    settings = Settings(database_url=database_url, db_timeout_seconds=30)
    async with asgi_client(settings) as http:
        names = [f"hostile{index}" for index in range(len(values))]
        for name in names:
            created = await http.post(
                f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": name}
            )
            assert created.status_code == 201

        def send() -> "asyncio.Future[list[httpx.Response]]":
            return asyncio.gather(
                *(
                    http.post(
                        f"{path(name)}/events",
                        json={
                            "author": "agent",
                            "actions": {
                                "stateDelta": {
                                    "v": value,
                                    f"user:{name}": value,
                                    f"app:{name}": value,
                                }
                            },
                        },
                    )
                    for name, value in zip(names, values, strict=True)
                )
            )

        if database_url.startswith("postgresql"):
            async with batches_held_at_the_database(http, database_url):
                sizes = BatchSizes((await http.get("/metrics")).text)
                sent = send()
                await asyncio.sleep(0.2)  # all queued (the counts below prove it)
            responses = await sent
            # All of them in one statement.
            assert sizes.since((await http.get("/metrics")).text) == (1, len(values))
        else:
            responses = await send()
        assert [response.status_code for response in responses] == [201] * len(values)
        for name, value in zip(names, values, strict=True):
            state = (await http.get(path(name))).json()["state"]
            assert state["v"] == value
            assert state[f"user:{name}"] == value
            assert state[f"app:{name}"] == value
