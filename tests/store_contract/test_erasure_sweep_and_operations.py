"""Store contract: erasing a user or an app, sweeping expired sessions,
counting them, and the store's readiness."""

import asyncio

from session_state.backends.postgresql import PostgresStore
from session_state.backends.sqlite import SqliteStore
from session_state.core.config import Settings
from session_state.encryption.sealed_store import SealedStore
from session_state.langgraph.checkpoints.domain import ThreadKey, ThreadOwner
from session_state.sessions.domain import Erased, Expiry, SessionKey, Swept
from session_state.stores import Store, open_store

from ..checkpoint_contract.scenes import checkpoint
from ..item_storage_contract.scenes import put
from .scenes import APP, LIMIT, NOW, append, create, event, key, memories_of, memory


async def _seed_user(store: Store, user_id: str, app_name: str = APP, sessions: int = 3) -> None:
    for number in range(sessions):
        session_key = key(f"s{number}", user_id, app_name)
        await create(store, session_key, app={"tz": "UTC"}, user={"lang": "fr", "seen": number})
        await append(store, session_key, *(event(f"e{n}") for n in range(number)))
        await store.ingest_session(session_key, memories_of(session_key.session_id), NOW)
    await store.add_memories(app_name, user_id, [memory("gone", "museum")])
    await store.forget_memory(app_name, user_id, "gone")


async def test_erasing_a_user_takes_everything_of_theirs_and_nothing_else(store: Store):
    await _seed_user(store, "ada")
    await _seed_user(store, "bob")

    erased = await store.erase_user(APP, "ada", batch_events=1)

    assert erased == Erased(sessions=3, events=3, state_keys=2, memories=3)
    assert (await store.page_sessions(APP, "ada", None, 10, LIMIT, NOW)).sessions == []
    assert await store.read_user_state(APP, "ada") == {}
    assert await store.search_memories(APP, "ada", "flight", 10, LIMIT) == []
    # The forgotten id went too: it may be added again.
    assert await store.add_memories(APP, "ada", [memory("gone", "museum")]) == 1
    assert len((await store.page_sessions(APP, "bob", None, 10, LIMIT, NOW)).sessions) == 3
    assert await store.read_app_state(APP) == {"tz": "UTC"}


async def test_erasing_an_app_takes_every_user_and_the_apps_state(store: Store):
    await _seed_user(store, "ada")
    await _seed_user(store, "bob")
    await _seed_user(store, "ada", app_name="other")

    erased = await store.erase_app(APP, batch_events=2)

    assert erased == Erased(sessions=6, events=6, state_keys=5, memories=6)
    assert (await store.page_sessions(APP, None, None, 10, LIMIT, NOW)).sessions == []
    assert await store.read_app_state(APP) == {}
    assert await store.read_user_state(APP, "bob") == {}
    assert len((await store.page_sessions("other", None, None, 10, LIMIT, NOW)).sessions) == 3
    assert await store.read_user_state("other", "ada") == {"lang": "fr", "seen": 2}


async def test_a_sweep_deletes_the_sessions_expired_at_its_time_and_no_other(store: Store):
    await create(store, key("due"), expiry=Expiry(ttl_seconds=10))
    await append(store, key("due"), event("e1"), event("e2"))
    await store.ingest_session(key("due"), memories_of("due"), NOW)
    await create(store, key("later"), expiry=Expiry(expire_time=NOW + 11))
    await create(store, key("never"))
    assert await store.count_expired(NOW + 10) == 1

    swept = await store.sweep_expired(NOW + 10, batch_events=100, with_memories=False)

    assert swept == Swept(sessions=1, events=2, memories=0)
    assert await store.count_expired(NOW + 10) == 0
    assert await store.read_session(key("later"), NOW + 10) is not None
    assert await store.read_session(key("never"), NOW + 10) is not None
    assert len(await store.search_memories(APP, "ada", "flight", 10, LIMIT)) == 2
    assert await store.count_expired(NOW + 11) == 1


async def test_a_sweep_takes_memories_when_asked_in_bounded_batches(store: Store):
    for number in range(5):
        session_key = key(f"s{number}")
        await create(store, session_key, expiry=Expiry(ttl_seconds=1))
        await append(store, session_key, *(event(f"e{n}") for n in range(number % 3)))
        await store.ingest_session(session_key, memories_of(session_key.session_id), NOW)

    swept = await store.sweep_expired(NOW + 1, batch_events=1, with_memories=True)

    assert swept == Swept(sessions=5, events=0 + 1 + 2 + 0 + 1, memories=4)
    assert await store.search_memories(APP, "ada", "flight", 10, LIMIT) == []


async def test_racing_sweeps_delete_each_session_once(store: Store, second_store: Store):
    for number in range(20):
        await create(store, key(f"s{number}"), expiry=Expiry(ttl_seconds=1))
        # An event each: a batch holds two sessions (batches count events).
        await append(store, key(f"s{number}"), event("e1"))
    first_batch_committed = asyncio.Event()

    class Committed(list[SessionKey]):
        """The first pass's swept sessions, told as each batch commits."""

        def __iadd__(self, keys):  # type: ignore[override,no-untyped-def]
            result = super().__iadd__(keys)
            first_batch_committed.set()
            return result

    first_swept = Committed()

    async def second_pass() -> tuple[int, Swept | None]:
        await first_batch_committed.wait()
        begun_after = len(first_swept)
        return begun_after, await second_store.sweep_expired(
            NOW + 1, batch_events=2, with_memories=False
        )

    first, (begun_after, second) = await asyncio.gather(
        store.sweep_expired(NOW + 1, batch_events=2, with_memories=False, expired=first_swept),
        second_pass(),
    )

    # The race happened: the second pass began after the first had committed
    # a batch and before it had swept everything.
    assert 0 < begun_after < 20
    outcomes = [first, second]
    # None: the other process was sweeping (PostgreSQL's lock); it took all.
    assert sum(swept.sessions for swept in outcomes if swept is not None) == 20
    assert len(first_swept) == (first.sessions if first is not None else 0)
    assert await store.count_expired(NOW + 1) == 0


async def test_open_store_picks_the_store_of_the_url_and_it_is_ready(database_url: str):
    opened = await open_store(Settings(database_url=database_url))
    try:
        expected = SqliteStore if database_url.startswith("sqlite") else PostgresStore
        # Behind the layer that seals and opens content (app.encryption).
        assert isinstance(opened, SealedStore)
        assert isinstance(opened.inner, expected)
        await opened.check_ready()
    finally:
        await opened.close()


async def test_langgraph_storage_is_on_the_store_s_database_and_erased_with_the_user(
    store: Store,
):
    """The store hands LangGraph's storages on its own pool or engine: what
    they write, an erasure through the store takes with the user."""
    checkpoints = store.checkpoint_store()
    await checkpoints.put_checkpoint(
        ThreadKey(APP, "t1"), ThreadOwner("ada", None), checkpoint("c1"), NOW
    )
    await put(store.item_storage(), "ada.trips", "paris", {"city": "Paris"}, app_name=APP)

    erased = await store.erase_user(APP, "ada", 100)

    assert (erased.threads, erased.store_items) == (1, 1)
    assert await checkpoints.delete_thread(ThreadKey(APP, "t1")) is False
