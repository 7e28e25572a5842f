"""Both stores refuse an append the same way (`Store.append_event`'s
promise): AppendNotApplied with nothing written, naming the scope that would
pass its size limit; the service turns that into the same answer on both.
Run against the stores directly, no HTTP in between."""

from collections.abc import AsyncIterator
from typing import Any

import pytest

from session_state.core import json_codec
from session_state.core.config import Settings
from session_state.sessions.domain import AppendNotApplied, Expiry, NewEvent, SessionKey
from session_state.sessions.state import ScopedDelta, merge_deltas, split_delta
from session_state.stores import Store, open_store

LIMIT = 2048
KEY = SessionKey("chat", "ann", "s")
NOW = 1_000_000.0


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    opened = await open_store(settings)
    try:
        created = await opened.create_session(
            KEY, ScopedDelta(), NOW, Expiry(ttl_seconds=60), LIMIT, forget_expired_memories=False
        )
        assert created is not None
        yield opened
    finally:
        await opened.close()


def event(event_id: str, delta: dict[str, Any], at: float = NOW) -> NewEvent:
    document = {"id": event_id, "author": "a", "actions": {"stateDelta": delta}}
    return NewEvent(event_id, "i", "a", at, json_codec.dumps_text(document), split_delta(delta))


def filler(size: int) -> str:
    return "x" * size


async def assert_nothing_written(store: Store, revision: int, event_ids: list[str]) -> None:
    session = await store.read_session(KEY, NOW)
    assert session is not None and session.revision == revision
    assert session.expire_time == pytest.approx(NOW + 60)
    assert await store.find_events(KEY, event_ids) == {}


@pytest.mark.parametrize("scope", ["app:", "user:", ""])
async def test_an_append_past_a_scope_limit_is_not_applied_and_names_the_scope(
    store: Store, scope: str
) -> None:
    assert await store.append_event(KEY, event("a", {f"{scope}a": filler(1200)}), 0, LIMIT, NOW)
    later = NOW + 10
    with pytest.raises(AppendNotApplied) as refused:
        await store.append_event(KEY, event("b", {f"{scope}b": filler(1200)}), 1, LIMIT, later)
    assert refused.value.state_error is not None
    expected = {"app:": "app", "user:": "user", "": "session"}[scope]
    assert f"the {expected} state" in str(refused.value.state_error)
    await assert_nothing_written(store, 1, ["b"])
    assert await store.read_app_state("chat") == ({"a": filler(1200)} if scope == "app:" else {})


@pytest.mark.parametrize("scope", ["app:", "user:", ""])
async def test_a_batch_past_a_scope_limit_is_not_applied_and_names_the_scope(
    store: Store, scope: str
) -> None:
    batch = [event(f"e{n}", {f"{scope}k{n}": filler(700)}) for n in range(3)]
    delta = merge_deltas(one.delta for one in batch)
    with pytest.raises(AppendNotApplied) as refused:
        await store.append_events(KEY, batch, delta, None, LIMIT, NOW + 10)
    assert refused.value.state_error is not None
    expected = {"app:": "app", "user:": "user", "": "session"}[scope]
    assert f"the {expected} state" in str(refused.value.state_error)
    await assert_nothing_written(store, 0, [one.id for one in batch])


async def test_when_every_scope_would_pass_both_stores_name_the_app_first(store: Store) -> None:
    delta = {"app:a": filler(3000), "user:u": filler(3000), "s": filler(3000)}
    with pytest.raises(AppendNotApplied) as refused:
        await store.append_event(KEY, event("b", delta), None, LIMIT, NOW)
    assert "the app state" in str(refused.value.state_error)
    del delta["app:a"]
    with pytest.raises(AppendNotApplied) as refused:
        await store.append_event(KEY, event("b", delta), None, LIMIT, NOW)
    assert "the user state" in str(refused.value.state_error)
    await assert_nothing_written(store, 0, ["b"])


async def test_a_write_that_does_not_grow_a_full_scope_is_applied(store: Store) -> None:
    assert await store.append_event(KEY, event("a", {"app:a": filler(1900)}), 0, LIMIT, NOW)
    # The scope stays above nothing it was not already at: same size again.
    replaced = await store.append_event(KEY, event("b", {"app:a": filler(1900)}), 1, LIMIT, NOW)
    assert replaced == 2


async def test_a_stale_or_missing_session_is_not_applied_without_a_state_error(
    store: Store,
) -> None:
    with pytest.raises(AppendNotApplied) as stale:
        await store.append_event(KEY, event("b", {"k": 1}), 5, LIMIT, NOW)
    assert stale.value.state_error is None
    with pytest.raises(AppendNotApplied) as expired:
        await store.append_event(KEY, event("b", {"k": 1}), None, LIMIT, NOW + 60)
    assert expired.value.state_error is None
    await assert_nothing_written(store, 0, ["b"])
